"""Writing results: the files of `results/<run-id>/` (results/README.md describes them field by
field), each record appended and flushed as it happens, so an interrupted run leaves valid files,
and counted into its conversation's digests (harness.results.digests) as it is written.
The manifest is written with a temporary file and a rename, so it is never half-written. One
`ResultsWriter` may be shared by concurrent conversations: appends take a lock. Every file is
opened through `harness.base.files`, never through a link planted in the results folder.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import threading
from pathlib import Path
from typing import Any, BinaryIO

from harness.base.files import append_to, read_own_file, write_atomic
from harness.base.identity import RunKey
from harness.results.digests import Tallies, finished_record
from harness.results.rows import (
    PROBE_COLUMNS,
    RESIDUE_COLUMNS,
    TURN_COLUMNS,
    CallRecord,
    Manifest,
    ProbeRow,
    ResidueRow,
    TurnRow,
)

# The columns of turns.csv, probes.csv and residue.csv, and the fields of calls.jsonl, are those
# of the record types in harness/results/rows.py.
CSV_COLUMNS = {"turns.csv": TURN_COLUMNS, "probes.csv": PROBE_COLUMNS, "residue.csv": RESIDUE_COLUMNS}

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
    "residue.csv",
    "facts.jsonl",
    "messages.jsonl",
    "views.jsonl",
    "conversations.jsonl",
)


def csv_cells(row: dict[str, Any], columns: tuple[str, ...]) -> list[Any]:
    """The cells of `columns` in `row`: None (unknown, or a column the row lacks) blank, never 0;
    booleans as true/false. In one pass: a
    call per cell cost a third of writing a probes.csv row (benchmarks/batch_latency.py). True
    and False are the only booleans, so `is` tests what `isinstance` does."""
    return ["" if v is None else "true" if v is True else "false" if v is False else v for v in map(row.get, columns)]


# calls.jsonl and the other JSON-lines files: one encoder for every record (`json.dumps` with
# an option builds a new one per call); its output is `json.dumps(record, ensure_ascii=False)`,
# made safe for a line of its own (`_line_safe`).
_encode_json = json.JSONEncoder(ensure_ascii=False).encode

# What JSON leaves raw in a string that some readers take for a line break (Python's
# `str.splitlines`, JavaScript): NEL, U+2028, U+2029. (The other breaks `splitlines` knows,
# \x0b \x0c \x1c \x1d \x1e \r, are control characters, which JSON escapes already.) And a lone
# surrogate, which no UTF-8 file can hold: the edges replace them and record it
# (`harness.base.text.valid_unicode`); one that gets this far is replaced here, never a traceback.
_UNSAFE_IN_LINE = re.compile("[\x85\u2028\u2029\ud800-\udfff]")


def _line_safe(match: re.Match[str]) -> str:
    char = match.group()
    return "\ufffd" if "\ud800" <= char <= "\udfff" else f"\\u{ord(char):04x}"


def _encode_record(record: Any) -> str:
    """One record as one line of JSON: every reader splits a file into lines where `\\n` is."""
    return _UNSAFE_IN_LINE.sub(_line_safe, _encode_json(record))


def write_json_atomic(path: Path, data: Any) -> None:
    """Write JSON to a temporary file beside `path` (a fresh, unguessable name), then rename it into place."""
    text = _UNSAFE_IN_LINE.sub(_line_safe, json.dumps(data, indent=2, ensure_ascii=False))
    write_atomic(path, text + "\n")


# A CSV header is far shorter than this; what is read of a resumed file to find its columns.
HEADER_BYTES = 64 * 1024


def _written_columns(path: Path, columns: tuple[str, ...]) -> tuple[str, ...]:
    """The columns a resumed CSV file already has, when an older harness wrote it with a first
    part of `columns` (columns are only ever added at the end, as turns.csv's `trigger_*`):
    rows appended to it then stop there, so every line has its header's width. Else `columns`."""
    line = read_own_file(path, HEADER_BYTES).split(b"\n", 1)[0].decode("utf-8", "replace").rstrip("\r")
    found = tuple(next(csv.reader([line]), []))
    return found if found and found != columns and columns[: len(found)] == found else columns


class ResultsWriter:
    """Appends records to the files of one results directory, and keeps each conversation's
    digests as it goes (harness.results.digests): a finished conversation's record carries them."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._tallies = Tallies()
        # Files are written as bytes, so that a record's digest is of exactly what the file holds.
        self._files: dict[str, BinaryIO] = {}
        # A CSV file's writer (into `_row`, one row at a time), its columns, and the same as a set
        # (a row with another key is refused).
        self._csv: dict[str, tuple[Any, tuple[str, ...], frozenset[str]]] = {}
        self._row = io.StringIO(newline="")
        try:
            for name in ("calls.jsonl", "facts.jsonl", "messages.jsonl", "views.jsonl", "conversations.jsonl"):
                self._files[name] = append_to(directory / name, binary=True)
            for name, columns in CSV_COLUMNS.items():
                self._open_csv(name, columns)
        except BaseException:  # a file refused (a planted link): close those already open
            self.close()
            raise

    def _open_csv(self, name: str, columns: tuple[str, ...]) -> None:
        handle = append_to(self.directory / name, binary=True)
        fresh = os.fstat(handle.fileno()).st_size == 0
        writer = csv.writer(self._row)
        known = frozenset(columns)
        if not fresh:  # resumed: a file an older harness began has fewer columns; keep its width
            columns = _written_columns(self.directory / name, columns)
        self._files[name], self._csv[name] = handle, (writer, columns, known)
        if fresh:
            handle.write(self._formatted(writer, list(columns)))
            handle.flush()

    def _formatted(self, writer: Any, cells: list[Any]) -> bytes:
        """One CSV row's bytes, as the csv module writes it."""
        writer.writerow(cells)
        text = self._row.getvalue()
        self._row.seek(0)
        self._row.truncate()
        return text.encode("utf-8")

    def manifest(self, manifest: Manifest) -> None:
        write_json_atomic(self.directory / "manifest.json", manifest.as_record())

    def call(self, record: CallRecord) -> None:
        self._append_json("calls.jsonl", record.as_record())

    def facts(self, record: dict[str, Any]) -> None:
        self._append_json("facts.jsonl", record)

    def finished(self, record: dict[str, Any]) -> None:
        """A finished conversation's record, with the digests of its records in the other files:
        its last record, so they are complete."""
        with self._lock:
            records = self._tallies.close(RunKey.held(record))
        self._write("conversations.jsonl", (_encode_record(finished_record(record, records)) + "\n").encode("utf-8"))

    def message(self, record: dict[str, Any]) -> None:
        self._append_json("messages.jsonl", record)

    def view(self, record: dict[str, Any]) -> None:
        self._append_json("views.jsonl", record)

    def turn(self, row: TurnRow) -> None:
        self._append_row("turns.csv", row.as_record())

    def probe(self, row: ProbeRow) -> None:
        self._append_row("probes.csv", row.as_record())

    def residue(self, row: ResidueRow) -> None:
        self._append_row("residue.csv", row.as_record())

    def _append_json(self, name: str, record: dict[str, Any]) -> None:
        data = (_encode_record(record) + "\n").encode("utf-8")
        key = RunKey.held(record)
        with self._lock:
            self._tallies.add(key, name, data)
            self._files[name].write(data)
            self._files[name].flush()

    def _write(self, name: str, data: bytes) -> None:
        with self._lock:
            self._files[name].write(data)
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
        key = RunKey.held(row)
        with self._lock:
            data = self._formatted(writer, cells)
            self._tallies.add(key, name, data)
            self._files[name].write(data)
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
