"""A chronology document as YAML text (its file's name: `harness.base.names.file_stem`).

The text is the same for the same document, byte for byte (golden tests compare it): fields in the
order given, text with line breaks as literal blocks, and every string YAML would read as another
type (`No`, `3.10`, `2024-01-01`) quoted, as the strict loader requires.
"""

from __future__ import annotations

from typing import Any

import yaml

__all__ = ["yaml_text"]


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
