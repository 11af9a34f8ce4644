"""A chronology document as YAML text, and the safe, deterministic name of its file.

The text is the same for the same document, byte for byte (golden tests compare it): fields in the
order given, text with line breaks as literal blocks, and every string YAML would read as another
type (`No`, `3.10`, `2024-01-01`) quoted, as the strict loader requires.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

import yaml

__all__ = ["MAX_NAME", "file_stem", "yaml_text"]

MAX_NAME = 100  # characters of a chronology's file stem: its id in results and reports
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


class _Dumper(yaml.SafeDumper):
    """SafeDumper that writes multi-line text as a literal block and never sorts keys."""


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if "\n" in value:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_Dumper.add_representer(str, _text)


def yaml_text(document: dict[str, Any]) -> str:
    """The chronology file's text (its `source:` says where it came from)."""
    return yaml.dump(document, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100, default_flow_style=False)


def file_stem(dataset: str, item_id: str) -> str:
    """`DATASET-ITEM` with every run of characters outside letters, digits, `-` and `_` made `-`;
    when that changed the id or cut it, 8 hex digits of the id's SHA-256 keep names apart."""
    prefix = _UNSAFE.sub("-", dataset).strip("-") or "import"
    safe = _UNSAFE.sub("-", item_id).strip("-")
    stem = f"{prefix}-{safe}" if safe else prefix
    if safe != item_id or len(stem) > MAX_NAME:
        digest = hashlib.sha256(item_id.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        stem = f"{stem[: MAX_NAME - 9]}-{digest}"
    return stem
