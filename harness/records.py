"""Results on disk: the public contract of `results/<run-id>/` (described field by field in results/README.md).

Every record is appended and flushed as it happens, so an interrupted run leaves valid files.
The manifest is written with a temporary file and a rename, so it is never half-written.
One `ResultsWriter` may be shared by concurrent conversations: appends take a lock.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import threading
from dataclasses import MISSING, fields
from pathlib import Path
from types import UnionType
from typing import Any, TextIO, get_args, get_origin, get_type_hints

from harness.errors import InputError
from harness.locking import LOCK_FILE
from harness.rows import PROBE_COLUMNS, TURN_COLUMNS, CallRecord, Manifest, ProbeRow, TurnRow

# The columns of turns.csv and probes.csv, and the fields of calls.jsonl, are those of the record
# types in harness/rows.py.
FORMAT_VERSION = 2  # 2: views.jsonl holds references into messages.jsonl (harness/views.py)

# A run id names the results folder and the report's files: one path segment. `\Z`, not `$`,
# which would accept a trailing newline; the length keeps `<run-id>.md` within a file name.
MAX_RUN_ID = 100
RUN_ID = re.compile(rf"[A-Za-z0-9][A-Za-z0-9._-]{{0,{MAX_RUN_ID - 1}}}\Z")

# `views.jsonl`: per turn, the request view and the retained state after it
# (scripted turns make no call, yet `harness show` must still say what the model would see),
# as references into `messages.jsonl`, which holds each message of a conversation once.
# `conversations.jsonl` records each finished conversation: what `--resume` keeps.
FILES = (
    "manifest.json",
    "calls.jsonl",
    "turns.csv",
    "probes.csv",
    "facts.jsonl",
    "messages.jsonl",
    "views.jsonl",
    "conversations.jsonl",
)


def csv_cell(value: Any) -> Any:
    """None is unknown and stays blank; booleans are written as true/false."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


def csv_cells(row: dict[str, Any], columns: tuple[str, ...]) -> list[Any]:
    """`csv_cell` of each of `columns` in `row` (blank when the row lacks it), in one pass: a
    call per cell cost a third of writing a probes.csv row (benchmarks/batch_latency.py). True
    and False are the only booleans, so `is` tests what `isinstance` does."""
    return ["" if v is None else "true" if v is True else "false" if v is False else v for v in map(row.get, columns)]


# calls.jsonl and the other JSON-lines files: one encoder for every record (`json.dumps` with
# an option builds a new one per call); its output is `json.dumps(record, ensure_ascii=False)`.
_encode_record = json.JSONEncoder(ensure_ascii=False).encode


def write_json_atomic(path: Path, data: Any) -> None:
    """Write JSON next to `path`, then rename it into place."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


class ResultsWriter:
    """Appends records to the files of one results directory."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._files: dict[str, TextIO] = {}
        # A CSV file's writer, its columns, and the same as a set (a row with another key is refused).
        self._csv: dict[str, tuple[Any, tuple[str, ...], frozenset[str]]] = {}
        for name in ("calls.jsonl", "facts.jsonl", "messages.jsonl", "views.jsonl", "conversations.jsonl"):
            self._files[name] = (directory / name).open("a", encoding="utf-8")
        for name, columns in (("turns.csv", TURN_COLUMNS), ("probes.csv", PROBE_COLUMNS)):
            self._open_csv(name, columns)

    def _open_csv(self, name: str, columns: tuple[str, ...]) -> None:
        path = self.directory / name
        fresh = not path.exists() or path.stat().st_size == 0
        handle = path.open("a", encoding="utf-8", newline="")
        writer = csv.writer(handle)
        if fresh:
            writer.writerow(columns)
            handle.flush()
        self._files[name], self._csv[name] = handle, (writer, columns, frozenset(columns))

    def manifest(self, manifest: Manifest) -> None:
        write_json_atomic(self.directory / "manifest.json", manifest.as_record())

    def call(self, record: CallRecord) -> None:
        self._append_json("calls.jsonl", record.as_record())

    def facts(self, record: dict[str, Any]) -> None:
        self._append_json("facts.jsonl", record)

    def finished(self, record: dict[str, Any]) -> None:
        self._append_json("conversations.jsonl", record)

    def message(self, record: dict[str, Any]) -> None:
        self._append_json("messages.jsonl", record)

    def view(self, record: dict[str, Any]) -> None:
        self._append_json("views.jsonl", record)

    def turn(self, row: TurnRow) -> None:
        self._append_row("turns.csv", row.as_record())

    def probe(self, row: ProbeRow) -> None:
        self._append_row("probes.csv", row.as_record())

    def _append_json(self, name: str, record: dict[str, Any]) -> None:
        line = _encode_record(record) + "\n"
        with self._lock:
            self._files[name].write(line)
            self._files[name].flush()

    def _append_row(self, name: str, row: dict[str, Any]) -> None:
        """One row in the file's column order (a column the row lacks is blank: unknown). Cells
        are listed directly rather than through `csv.DictWriter`, which cost as much per row as
        the rest of the write (benchmarks/batch_latency.py)."""
        writer, columns, known = self._csv[name]
        extra = row.keys() - known
        if extra:
            raise ValueError(f"{name}: the row has fields that are not columns: {', '.join(sorted(extra))}")
        cells = csv_cells(row, columns)
        with self._lock:
            writer.writerow(cells)
            self._files[name].flush()

    def close(self) -> None:
        with self._lock:
            for handle in self._files.values():
                handle.close()
            self._files.clear()

    def __enter__(self) -> ResultsWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


IDENTITY = ("chronology", "policy", "model", "repetition")
RECORD_FILES = (
    "calls.jsonl",
    "facts.jsonl",
    "messages.jsonl",
    "views.jsonl",
    "conversations.jsonl",
    "turns.csv",
    "probes.csv",
)


def identity_key(record: dict[str, Any]) -> tuple[str, str, str, int]:
    """The conversation a record belongs to."""
    return (str(record["chronology"]), str(record["policy"]), str(record["model"]), int(record["repetition"]))


def read_records(path: Path) -> list[dict[str, Any]]:
    """Every complete record of a JSON-lines or CSV results file (a torn last record is dropped)."""
    if not path.exists():
        return []
    text = complete_text(path)
    if path.suffix == ".csv":
        rows = list(csv.DictReader(io.StringIO(text, newline="")))
        return [r for r in rows if None not in r.values() and None not in r]  # a torn row is short
    records = []
    for line in text.splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return records


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
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(
            f"{path}:{line}: not UTF-8 (byte {exc.start}); the file was changed or damaged "
            "after the harness wrote it: restore it, or start a new run"
        ) from None
    return rows_text(text) if path.suffix == ".csv" else text


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
    if not path.is_file():
        if (directory / LOCK_FILE).exists():
            raise InputError(
                f"{directory}: the run stopped before it wrote its manifest, so there is nothing to "
                "resume or report; remove the folder and run again"
            )
        raise InputError(f"{directory}: not a results directory (no manifest.json); give results/<run-id>")
    damaged = f"{path}: the manifest is damaged"
    try:
        data = json.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise InputError(f"{damaged} (not UTF-8 at byte {exc.start}); restore it, or start a new run") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{damaged} (not valid JSON: {exc}); restore it, or start a new run") from None
    problem = manifest_problem(data)
    if problem:
        raise InputError(f"{damaged} ({problem}); restore it, or start a new run")
    if data["format_version"] != FORMAT_VERSION:
        raise InputError(
            f"{path}: format_version {data['format_version']!r} "
            f"is not {FORMAT_VERSION}; rerun with this harness version"
        )
    return Manifest(**{f.name: data[f.name] for f in fields(Manifest) if f.name in data})


# Each manifest field's type, from the annotations of harness.rows.Manifest.
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


def rewrite_records(directory: Path, order: dict[tuple[str, str, str, int], int]) -> None:
    """Keep only the records of the conversations in `order`, grouped in that order (stable
    within a conversation), each file replaced whole. Used to finish and to resume a run.

    Records are copied as written, byte for byte, and never held in memory together: a first
    pass notes where each complete record lies and whose it is, a second copies those spans in
    order (adjacent spans of one conversation in one piece), so memory stays flat however large
    the batch.
    """
    for name in RECORD_FILES:
        path = directory / name
        if not path.exists():
            continue
        header, spans = record_spans(path, order)
        spans.sort(key=lambda span: span[0])  # stable: file order within a conversation
        tmp = path.with_name(f".{name}.tmp")
        with path.open("rb") as source, tmp.open("wb") as target:
            target.write(header)
            for start, length in merged(spans):
                source.seek(start)
                target.write(source.read(length))
        os.replace(tmp, path)


Span = tuple[int, int, int]  # (place of its conversation in the order, start offset, length)


def record_spans(path: Path, order: dict[tuple[str, str, str, int], int]) -> tuple[bytes, list[Span]]:
    """A results file's header (CSV) and the span of each complete record of a conversation in
    `order`. A torn last record is left out; bytes that are not UTF-8 before it are damage."""
    spans: list[Span] = []
    is_csv = path.suffix == ".csv"
    with path.open("rb") as handle:
        header = handle.readline() if is_csv else b""
        if is_csv and not header.endswith(b"\n"):
            return b"", spans
        start, pending, line_number = handle.tell(), b"", 1 if is_csv else 0
        for line in handle:
            line_number += 1
            if not line.endswith(b"\n"):
                break  # a torn last record
            pending += line
            if is_csv and pending.count(b'"') % 2:
                continue  # inside a quoted cell that holds a line break
            key = record_key(pending, is_csv, path, line_number)
            if key is not None and key in order:
                spans.append((order[key], start, len(pending)))
            start, pending = start + len(pending), b""
    return header, spans


def record_key(raw: bytes, is_csv: bool, path: Path, line: int) -> tuple[str, str, str, int] | None:
    """The conversation one record belongs to; None for a line that is no record.

    The rewrite reads every record of a batch once, after its last call: a JSON record is parsed
    by orjson (what it refuses, the standard parser decides, as before), and a CSV row without
    quotes, carriage returns or NULs is split at its commas, as the csv module splits it."""
    if not is_csv:
        import orjson  # five to ten times the standard parser's speed on long records

        try:
            return identity_key(orjson.loads(raw))
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            pass  # not UTF-8, not JSON orjson reads (NaN, a huge integer), or no record: decided below
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(
            f"{path}:{line}: not UTF-8; the file was changed or damaged after the harness wrote it: "
            "restore it, or start a new run"
        ) from None
    try:
        if is_csv:
            plain = '"' not in text and "\0" not in text and "\r" not in text[:-2]
            cells = text.split(",", 4) if plain else next(csv.reader(io.StringIO(text, newline="")))
            return (cells[0], cells[1], cells[2], int(cells[3]))
        return identity_key(json.loads(text))
    except (json.JSONDecodeError, StopIteration, IndexError, KeyError, ValueError, TypeError):
        return None


def merged(spans: list[Span]) -> list[tuple[int, int]]:
    """(start, length) of the spans to copy, adjacent spans of one conversation joined."""
    joined: list[list[int]] = []
    last = None
    for place, start, length in spans:
        if joined and place == last and joined[-1][0] + joined[-1][1] == start:
            joined[-1][1] += length
        else:
            joined.append([start, length])
        last = place
    return [(start, length) for start, length in joined]
