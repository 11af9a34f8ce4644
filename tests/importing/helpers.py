"""Small inputs written in a test's folder, and the golden comparison every format's tests share."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.importing.emit import yaml_text
from harness.importing.source import Source, read_source
from tests.importing.goldens import GOLDEN, REGENERATE, converted


def jsonl(path: Path, *records: Any) -> Source:
    """`records` written one JSON a line to `path`, read back as an import's source."""
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return read_source(path)


def assert_matches_golden(folder: str) -> None:
    """The fixture's conversion under `folder` is the committed golden text, byte for byte, file for file."""
    items = converted()[folder]
    written = {f"{item.stem}.yaml": yaml_text(item.document) for item in items}
    committed = {p.name: p.read_text(encoding="utf-8") for p in (GOLDEN / folder).glob("*.yaml")}
    assert set(written) == set(committed), f"regenerate: {REGENERATE}"
    for name, text in written.items():
        assert text == committed[name], f"{folder}/{name} differs; regenerate after a deliberate change: {REGENERATE}"
