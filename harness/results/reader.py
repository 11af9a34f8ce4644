"""Reading results back, record by record: a torn last record (a write cut by a kill) is left
out, damage is named with its file and line, and the manifest is checked against its type. A
results folder whose files are links or special files is refused before any is read.
`harness.results.tables` reads the same files as pandas DataFrames.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from dataclasses import MISSING, fields
from pathlib import Path
from types import UnionType
from typing import Any, get_args, get_origin, get_type_hints

from harness.base import json_bounded
from harness.base.errors import InputError, RunInUse
from harness.base.files import check_own_file
from harness.base.locking import LOCK_FILE, lock_holder
from harness.base.text import shown
from harness.results.digests import changed_settings
from harness.results.rows import DIGESTS_FROM, FORMAT_VERSION, READABLE_VERSIONS, Manifest

RECORD_FILES = (
    "calls.jsonl",
    "facts.jsonl",
    "messages.jsonl",
    "views.jsonl",
    "conversations.jsonl",
    "turns.csv",
    "probes.csv",
    "residue.csv",  # from format version 4 (rows.RESIDUE_FROM)
)


def read_records(path: Path) -> list[dict[str, Any]]:
    """Every complete record of a JSON-lines or CSV results file (a torn last record is dropped)."""
    if not path.exists():
        return []
    if path.suffix != ".csv":
        return list(each_record(path))
    rows = list(csv.DictReader(io.StringIO(complete_text(path), newline="")))
    return [r for r in rows if None not in r.values() and None not in r]  # a torn row is short


def each_record(path: Path) -> Iterator[dict[str, Any]]:
    """The complete records of a JSON-lines results file one at a time, as `read_records` reads
    them (a torn last line left out, a line that is no JSON skipped, bytes that are not UTF-8
    named with their line), never the whole file in memory: a batch of thousands of
    conversations is counted record by record."""
    if not path.exists():
        return
    offset = 0
    with path.open("rb") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.endswith(b"\n"):
                return  # a torn last record
            try:
                text = line.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise not_utf8(path, number, offset + exc.start) from None
            offset += len(line)
            for part in text.splitlines():  # as a split of the whole text would cut it
                try:
                    yield json_bounded.loads(part, what=f"{path.name} line {number}")
                except json.JSONDecodeError:  # JsonBounded too: a record beyond the bounds is no record
                    continue


def complete_text(path: Path) -> str:
    """The text of a results file up to its last complete record.

    Records end with a newline and are written whole, so a kill can only cut the last one
    short: whatever follows the last newline is dropped, even half a UTF-8 character. In a
    CSV file the cut can fall inside a quoted multi-line cell; the text then ends at the last
    newline outside quotes. Bytes that are not UTF-8 before that point are damage, not a torn
    write: an InputError names the file and line.
    """
    data = path.read_bytes()
    data = data[: data.rfind(b"\n") + 1]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise not_utf8(path, data.count(b"\n", 0, exc.start) + 1, exc.start) from None
    return rows_text(text) if path.suffix == ".csv" else text


def not_utf8(path: Path, line: int, byte: int) -> InputError:
    return InputError(
        f"{path}:{line}: not UTF-8 (byte {byte}); the file was changed or damaged "
        "after the harness wrote it: restore it, or start a new run"
    )


def rows_text(text: str) -> str:
    """CSV `text` up to its last row boundary: a newline with an even number of quotes before it."""
    end = position = 0
    inside = False
    for line in text.split("\n")[:-1]:
        position += len(line) + 1
        inside ^= line.count('"') % 2 == 1
        if not inside:
            end = position
    return text[:end]


def read_manifest(directory: Path) -> Manifest:
    """The manifest of a results directory, checked; an InputError says what is wrong with it."""
    path = directory / "manifest.json"
    for name in ("manifest.json", *RECORD_FILES):  # the harness's own files: a planted link is never read
        check_own_file(directory / name)
    if not path.is_file():
        holder = lock_holder(directory)
        if holder is not None:  # a run starting: it holds the folder before its manifest is written
            raise RunInUse(
                f"{directory} is in use by {holder}, which has not written its manifest yet; "
                "wait for it to end (or stop it, then `harness run --resume` it)"
            )
        if (directory / LOCK_FILE).exists():
            raise InputError(
                f"{directory}: the run stopped before it wrote its manifest, so there is nothing to "
                "resume or report; remove the folder and run again"
            )
        raise InputError(f"{directory}: not a results directory (no manifest.json); give results/<run-id>")
    damaged = f"{path}: the manifest is damaged"
    try:
        # A results folder given to `report` or `compare` may come from anywhere: its manifest,
        # read first, is read within the bounds (a number of 5,000 digits was a traceback).
        data = json_bounded.loads(path.read_bytes().decode("utf-8"), what="the manifest")
    except UnicodeDecodeError as exc:
        raise InputError(f"{damaged} (not UTF-8 at byte {exc.start}); restore it, or start a new run") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{damaged} (not valid JSON: {exc}); restore it, or start a new run") from None
    problem = manifest_problem(data)
    if problem:
        raise InputError(f"{damaged} ({problem}); restore it, or start a new run")
    if data["format_version"] not in READABLE_VERSIONS:
        raise InputError(
            f"{path}: format_version {shown(data['format_version'])} "
            f"is not {FORMAT_VERSION}; rerun with this harness version"
        )
    edited = settings_problem(data)
    if edited:
        raise InputError(f"{path}: {edited}; restore the manifest from a copy, or start a new run")
    return Manifest(**{f.name: data[f.name] for f in fields(Manifest) if f.name in data})


def settings_problem(data: dict[str, Any]) -> str | None:
    """What says a manifest's settings were edited after the run started, or None: from format
    version 3 on, every manifest holds the digests of its settings (harness.results.digests)."""
    if data["format_version"] < DIGESTS_FROM:
        return None  # written before manifests held digests: unverified, as results of that time
    if not isinstance(data.get("settings_sha256"), dict):
        return (
            f"it records no settings_sha256, which every manifest of format version {DIGESTS_FROM} holds: "
            "it was edited, or written by another tool"
        )
    changed = changed_settings(data)
    if changed:
        return (
            f"{', '.join(changed)} changed after the run started (no longer the settings_sha256 recorded "
            "then): the manifest was edited"
        )
    return None


# Each manifest field's type, from the annotations of harness.results.rows.Manifest.
MANIFEST_TYPES: dict[str, Any] = get_type_hints(Manifest)


def manifest_problem(data: Any) -> str | None:
    """What makes `data` unusable as a manifest, or None: a field without a default missing, or a
    present field whose value is not of its annotated type (fields the type lacks are ignored)."""
    if not isinstance(data, dict):
        return "not a JSON object"
    for f in fields(Manifest):
        if f.default is MISSING and f.default_factory is MISSING and f.name not in data:
            return f"field {f.name!r} is missing"
    for name, annotation in MANIFEST_TYPES.items():
        if name in data and not of_type(data[name], annotation):
            return f"field {name!r} should be {type_name(annotation)}, not {json_type(data[name])}"
    return None


def of_type(value: Any, annotation: Any) -> bool:
    """Whether a JSON value fits an annotation: its outer type (a list's items and a dict's
    values are not checked); `X | None` admits null; a bool is no int."""
    choices = get_args(annotation) if isinstance(annotation, UnionType) else (annotation,)
    for choice in choices:
        kind = get_origin(choice) or choice
        if kind is Any or (value is None and kind is type(None)):
            return True
        if kind is not type(None) and isinstance(value, kind) and not (kind is int and isinstance(value, bool)):
            return True
    return False


def type_name(annotation: Any) -> str:
    choices = get_args(annotation) if isinstance(annotation, UnionType) else (annotation,)
    return " or ".join("null" if c is type(None) else (get_origin(c) or c).__name__ for c in choices)


def json_type(value: Any) -> str:
    return "null" if value is None else type(value).__name__
