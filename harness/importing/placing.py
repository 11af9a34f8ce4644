"""Write imported chronologies all or none: each is staged and validated as it is converted, and
only when every item is converted are they moved into place.

Each chronology is written to a staging folder inside the output folder
(`.harness-tmp-<pid>-<hex>.import`, `harness.base.temporaries`: an import killed mid-way leaves
it, and the next import into that folder removes it; each file
whole through `harness.base.files.write_atomic`) and loaded as `harness run` would load it, then
dropped from memory: an import holds one item at a time, whatever the number of items. The first
problem (a bad item, a file of that name already in the output folder without `force`, a
chronology the loader refuses or over the size a chronology may be) removes the staging folder, and
the output folder if the import made it: nothing is written. Then each file is renamed into place.
The output folder is held (`harness.base.locking`, its `.lock` removed again at the end) from
before the first file is checked until the last is renamed: a second import into the same folder
is refused while the first runs, instead of both finding a name free and the second replacing the
first's file.
Under `--skip-invalid` (`Skips.enabled`) a problem with one item (its chronology refused by the
loader, too large, or named as another's) lists it and passes it over instead; a file in the way
still refuses the import.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

from harness.base.errors import ChronologyError
from harness.base.files import MAX_FILE_BYTES, kind_of_mode, write_atomic
from harness.base.locking import RunLock
from harness.base.temporaries import temporary_folder
from harness.base.text import shown, visible
from harness.chronology.loading import load_chronology
from harness.importing.emit import yaml_text
from harness.importing.source import ImportRefused, Skips
from harness.importing.turns import Item

__all__ = ["place"]


def place(items: Iterable[Item], out: Path, force: bool = False, skips: Skips | None = None) -> list[Path]:
    """Write each item's chronology as `out/STEM.yaml`; return the paths, in item order. `skips`:
    where an item refused under `--skip-invalid` is listed (the input's own `Source.skips`)."""
    skips = skips or Skips()
    made = not os.path.lexists(out)
    named_folder(out)
    placed = False
    try:
        with RunLock(out, "import", advice=IN_USE_ADVICE, tidy=True):
            placed_paths = _place_held(items, out, force, skips)
        placed = True
        return placed_paths
    finally:
        if made and not placed:
            with contextlib.suppress(OSError):
                out.rmdir()  # only if empty: the import made it, and wrote nothing


IN_USE_ADVICE = "wait for that import to end, or import into another --out folder"


def _place_held(items: Iterable[Item], out: Path, force: bool, skips: Skips) -> list[Path]:
    """`place`, in the output folder this process holds."""
    staging = temporary_folder(out, "import")
    try:
        staged: dict[str, Path] = {}
        for item in items:
            try:
                staged[item.stem] = _stage(item, staging, out, staged, force)
            except _ItemRefused as refused:
                if not skips.enabled:
                    raise  # one bad item refuses the whole import
                skips.reasons.append(refused.skipped)
        if not staged and skips.reasons:
            raise ImportRefused(every_item_skipped(skips))
        if not staged:
            raise ImportRefused("the input holds no item; give a file with at least one")
        targets = [out / f"{stem}.yaml" for stem in staged]
        for path, target in zip(staged.values(), targets):
            os.replace(path, target)
        return targets
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def named_folder(out: Path) -> None:
    """`--out`, created when missing. The user named it, so a link to a folder is followed (a folder
    on another disk), as `--reports` and a run's `--out` are; what the import writes inside is
    never written through a link. Refused: a file, a link to nothing or to a file."""
    with contextlib.suppress(FileExistsError):
        out.mkdir(parents=True)
    try:
        mode = os.stat(out).st_mode  # follows a link: the folder it names is the one meant
    except FileNotFoundError:
        raise ImportRefused(
            f"--out {visible(str(out))}: a symbolic link to nothing (its target is missing); "
            "create the folder it names, or give another --out"
        ) from None
    if not stat.S_ISDIR(mode):
        raise ImportRefused(
            f"--out {visible(str(out))}: {kind_of_mode(mode)}, not a folder; give a folder (it is created when missing)"
        )


def every_item_skipped(skips: Skips, shown: int = 10) -> str:
    """The refusal of an import whose every item `--skip-invalid` passed over: the first few, and why."""
    listed = "\n".join(f"skipped {reason}" for reason in skips.reasons[:shown])
    more = f"\n… and {len(skips.reasons) - shown} more" if len(skips.reasons) > shown else ""
    return f"every item was skipped ({len(skips.reasons)}); nothing written: fix the items, or import another file\n{listed}{more}"


class _ItemRefused(ImportRefused):
    """A problem with one item, not with the import: passed over under `--skip-invalid`, listed as
    `skipped` (where the item is in the input, and why)."""

    def __init__(self, item: Item, message: str, why: str | None = None) -> None:
        super().__init__(message)
        self.skipped = f"{item.origin or 'item'}: item {shown(item.item_id)}: {why or message}"


def _stage(item: Item, staging: Path, out: Path, staged: dict[str, Path], force: bool) -> Path:
    """`item` written to the staging folder and loaded; refused if it cannot be placed."""
    if item.stem in staged:
        raise _ItemRefused(
            item,
            f"two items would both be {item.stem}.yaml (the second: {shown(item.item_id)}); give each item its own id",
        )
    target = out / f"{item.stem}.yaml"
    if os.path.lexists(target):
        if os.path.isdir(target) and not os.path.islink(target):
            raise ImportRefused(
                f"{visible(str(target))} is a folder; move it away, or import into another --out folder"
            )
        if not force:
            raise ImportRefused(
                f"{visible(str(target))} already exists; import into another --out folder, or replace it with --force"
            )
    if (least := _text_chars(item.document)) > MAX_FILE_BYTES:  # refused before it is dumped as YAML
        raise _ItemRefused(
            item,
            f"item {item.item_id!r}: its chronology would be at least {least:,} bytes (its text alone), over the "
            f"{MAX_FILE_BYTES:,} a chronology may hold; import a shorter item (fewer sessions, fewer facts)",
        )
    text = yaml_text(item.document)
    if (size := len(text.encode("utf-8"))) > MAX_FILE_BYTES:
        raise _ItemRefused(
            item,
            f"item {shown(item.item_id)}: its chronology would be {size:,} bytes, over the {MAX_FILE_BYTES:,} "
            "a chronology may hold; import a shorter item (fewer sessions, fewer facts)",
        )
    path = staging / f"{item.stem}.yaml"
    write_atomic(path, text)
    try:
        load_chronology(path)
    except ChronologyError as exc:
        problems = "\n".join(str(replace(p, path=visible(str(target)))) for p in exc.problems)
        why = (
            "the chronology loader refuses what the import made of this item (an --expect "
            f"entry, or a case the importer does not handle: report it with the item):\n{problems}"
        )
        raise _ItemRefused(item, f"nothing written: {why}", why) from None
    return path


def _text_chars(value: object) -> int:
    """The characters of every string (keys included) in a chronology's document: YAML writes each
    at least once, and a character is at least a byte, so this is a floor on the file's size,
    counted without writing it (dumping a 24 MB item took 35 s and 641 MB before it was refused)."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        return sum(_text_chars(k) + _text_chars(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return sum(_text_chars(v) for v in value)
    return 0
