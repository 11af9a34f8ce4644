"""A run's records grouped by conversation in plan order: when a concurrent or resumed batch
ends, every record file is rewritten so that it reads as a sequential run's would."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from harness.base import json_bounded
from harness.base.errors import InputError
from harness.base.files import replacing
from harness.base.identity import RunKey
from harness.results.reader import RECORD_FILES


def rewrite_records(directory: Path, order: dict[RunKey, int]) -> None:
    """Keep only the records of the conversations in `order`, grouped in that order (stable
    within a conversation), each file replaced whole. Used to finish and to resume a run.

    Records are copied as written, byte for byte, and never held in memory together: a first
    pass notes where each run of consecutive records of one conversation lies, a second copies
    those spans in order. Memory grows with the runs, never with the records' bytes: one run per
    conversation in a batch run one at a time (about 300 bytes each: 1.2 MB at 50,000 probe rows,
    where a span per record took 13.7; `benchmarks/rewrite_memory.py`), up to one per record
    (about 84 bytes) where conversations run side by side and their records interleave.
    """
    for name in RECORD_FILES:
        path = directory / name
        if not path.exists():
            continue
        header, spans = record_spans(path, order)
        spans.sort(key=lambda span: span[0])  # stable: file order within a conversation
        with path.open("rb") as source, replacing(path, binary=True) as target:  # never through a planted link
            target.write(header)
            for _, start, length in spans:
                source.seek(start)
                target.write(source.read(length))


Span = tuple[int, int, int]  # (place of its conversation in the order, start offset, length)


def record_spans(path: Path, order: dict[RunKey, int]) -> tuple[bytes, list[Span]]:
    """A results file's header (CSV) and the span of each complete record of a conversation in
    `order`. A torn last record is left out; bytes that are not UTF-8 before it are damage."""
    records, spans = RecordFile(path), []
    for record in records:
        place = order.get(record.key)  # None: no record, or not of a conversation in `order`
        if place is None:
            continue
        if spans and spans[-1][0] == place and sum(spans[-1][1:]) == record.start:  # the run goes on
            spans[-1] = (place, spans[-1][1], spans[-1][2] + len(record.data))
        else:
            spans.append((place, record.start, len(record.data)))
    return records.header, spans


@dataclass(frozen=True)
class Record:
    """One complete record of a results file, as written."""

    line: int  # the number of its first line in the file
    start: int  # the offset of its first byte
    data: bytes  # its bytes, line end included (a CSV record may hold line breaks in quotes)
    key: RunKey | None  # its conversation; None for a line that is no record


class RecordFile:
    """A results file read record by record, as written: iterating gives each complete record
    (`Record`); `header` is a CSV file's first line (once iterating has begun) and `torn` what
    follows the last complete record (once it has ended): a write a kill cut short."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.is_csv = path.suffix == ".csv"
        self.header = b""
        self.torn = b""

    def __iter__(self) -> Iterator[Record]:
        for first, start, data in self.raw():
            yield Record(first, start, data, record_key(data, self.is_csv, self.path, first))

    def raw(self) -> Iterator[tuple[int, int, bytes]]:
        """Each complete record as (the number of its first line, the offset of its first byte,
        its bytes), its conversation not read: for a reader that finds what it needs of a record
        faster itself (harness.results.blocks)."""
        if not self.path.exists():
            return
        with self.path.open("rb") as handle:
            header = handle.readline() if self.is_csv else b""
            if self.is_csv and not header.endswith(b"\n"):
                self.torn = header
                return
            self.header = header
            start, pending, line_number, first = handle.tell(), b"", 1 if self.is_csv else 0, 0
            for line in handle:
                line_number += 1
                if not line.endswith(b"\n"):
                    pending += line
                    break  # a torn last record
                first = first or line_number
                pending += line
                if self.is_csv and pending.count(b'"') % 2:
                    continue  # inside a quoted cell that holds a line break
                yield first, start, pending
                start, pending, first = start + len(pending), b"", 0
            self.torn = pending


def record_key(raw: bytes, is_csv: bool, path: Path, line: int) -> RunKey | None:
    """The conversation one record belongs to, as the csv module or the standard JSON parser
    reads it; None for a line that is no record. Bytes that are not UTF-8 are damage.

    The rewrite reads every record of a batch once, after its last call: a few hundredths of a
    CPU second per thousand calls, whose own time at a model's latency is minutes, so no faster
    parser."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(
            f"{path}:{line}: not UTF-8; the file was changed or damaged after the harness wrote it: "
            "restore it, or start a new run"
        ) from None
    try:
        if is_csv:
            cells = next(csv.reader(io.StringIO(text, newline="")))
            return RunKey.typed(*cells[:4])
        return RunKey.of(json_bounded.loads(text, what=f"line {line}"))
    except (json.JSONDecodeError, StopIteration, KeyError, ValueError, TypeError):
        return None
