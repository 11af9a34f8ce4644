"""Write imported chronologies all or none: each is staged, then validated by the chronology
loader, then moved into place.

Before anything is written, every target name is checked: an existing file is refused (the first
named, with how many more) unless `force`, which replaces it. Every document is written to a
staging folder inside the output folder (`.import-*`, each file written whole through
`harness.base.files.write_atomic`) and loaded as `harness run` would load it; one problem refuses the
whole import and nothing is placed. Then each file is renamed into place, and the staging folder
removed. A document larger than a chronology may be (1 MiB) is refused by name.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

from harness.base.errors import ChronologyError
from harness.base.files import MAX_FILE_BYTES, own_folder, write_atomic
from harness.base.text import visible
from harness.chronology.loading import load_chronology
from harness.importing.emit import yaml_text
from harness.importing.source import ImportRefused
from harness.importing.turns import Item

__all__ = ["place"]


def place(items: Iterable[Item], out: Path, force: bool = False) -> list[Path]:
    """Write each item's chronology as `out/STEM.yaml`; return the paths, in item order."""
    texts: dict[str, tuple[Item, str]] = {}
    for item in items:
        if item.stem in texts:
            raise ImportRefused(
                f"items {texts[item.stem][0].item_id!r} and {item.item_id!r} would both be {item.stem}.yaml; "
                "give each item its own id"
            )
        text = yaml_text(item.document)
        if (size := len(text.encode("utf-8"))) > MAX_FILE_BYTES:
            raise ImportRefused(
                f"item {item.item_id!r}: its chronology would be {size:,} bytes, over the {MAX_FILE_BYTES:,} "
                "a chronology may hold; import a shorter item (fewer sessions, fewer facts)"
            )
        texts[item.stem] = (item, text)
    if not texts:
        raise ImportRefused("the input holds no item; give a file with at least one")
    targets = [out / f"{stem}.yaml" for stem in texts]
    existing = [t for t in targets if os.path.lexists(t)]
    for path in existing:
        if os.path.isdir(path) and not os.path.islink(path):
            raise ImportRefused(f"{visible(str(path))} is a folder; move it away, or import into another --out folder")
    if existing and not force:
        more = f" (and {len(existing) - 1} more)" if len(existing) > 1 else ""
        raise ImportRefused(
            f"{visible(str(existing[0]))} already exists{more}; import into another --out folder, "
            "or replace them with --force"
        )
    own_folder(out)
    staging = Path(tempfile.mkdtemp(prefix=".import-", dir=out))
    try:
        staged = []
        for stem, (_, text) in texts.items():
            path = staging / f"{stem}.yaml"
            write_atomic(path, text)
            staged.append(path)
        _validate(dict(zip(staged, targets)))
        for path, target in zip(staged, targets):
            os.replace(path, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return targets


def _validate(paths: dict[Path, Path]) -> None:
    """Every staged file loads as a chronology; else one error listing every problem (named by the
    file it would have been), none placed."""
    problems = []
    for path, target in paths.items():
        try:
            load_chronology(path)
        except ChronologyError as exc:
            problems += [str(replace(p, path=visible(str(target)))) for p in exc.problems]
    if problems:
        raise ImportRefused(
            "nothing written: the chronology loader refuses what the importer made of the input (a case the "
            "importer does not handle; report it with the item):\n" + "\n".join(problems)
        )
