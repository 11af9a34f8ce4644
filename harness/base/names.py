"""The safe, deterministic name of a file made for one item: an imported chronology's file, and
the report's page of that item or of its category (below both, so the report never imports the
importer to name its pages)."""

from __future__ import annotations

import hashlib
import re

__all__ = ["MAX_NAME", "UNSAFE", "file_stem"]

MAX_NAME = 100  # characters of a chronology's file stem: its id in results and reports
UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")  # what a name made of another turns into `-`


def file_stem(dataset: str, item_id: str) -> str:
    """`DATASET-ITEM` with every run of characters outside letters, digits, `-` and `_` made `-`;
    when that changed the id or cut it, 8 hex digits of the id's SHA-256 keep names apart."""
    prefix = UNSAFE.sub("-", dataset).strip("-") or "import"
    safe = UNSAFE.sub("-", item_id).strip("-")
    stem = f"{prefix}-{safe}" if safe else prefix
    if safe != item_id or len(stem) > MAX_NAME:
        digest = hashlib.sha256(item_id.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        stem = f"{stem[: MAX_NAME - 9]}-{digest}"
    return stem
