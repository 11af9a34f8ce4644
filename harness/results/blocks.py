"""A run's turns and calls read a block of chronologies at a time: where each chronology's
records lie in turns.csv and calls.jsonl (one byte range each, found in one pass per file), and
the typed frames of a few neighbouring chronologies read from those ranges.

A completed run's record files are in plan order, chronology-major (harness.results.order
rewrites them when a concurrent or resumed batch ends), so each chronology's records are one
contiguous range of bytes. What a block reads is bounded (`BLOCK_RECORDS`, at least one
chronology), not grown with the run. A file that is not so ordered (an unfinished concurrent or
resumed run, a hand-edited file), or that holds anything the index cannot place (a record of no
chronology, bytes that are not UTF-8, a blank line), is read whole, as before: the same frames,
held all at once (`BlockReader.whole`)."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import pandas as pd

from harness.results.calls_in_bulk import read_calls
from harness.results.order import RecordFile
from harness.results.spans import IDENTITY
from harness.results.tables import Only, cutter, read_columns, read_keys

BLOCK_RECORDS = 10_000  # turn and call records read at a time (at least one chronology's): see benchmarks/README.md


@dataclass(frozen=True)
class Ranges:
    """Where each chronology's records lie in one record file: `header` (a CSV file's first line)
    and chronology -> (first byte, end, records), chronologies in file order."""

    header: bytes
    spans: dict[str, tuple[int, int, int]]


def chronology_ranges(path: Path) -> Ranges | None:
    """Each chronology's byte range in turns.csv (or another results CSV) or calls.jsonl; None
    when the file is missing, or some chronology's records are not contiguous, or a record
    cannot be placed (then the file is read whole). Records are split as every reader of a
    results file splits them (harness.results.order `RecordFile`: a torn last record left out,
    a quoted cell may hold line breaks)."""
    if not path.is_file():
        return None
    records = RecordFile(path)
    found = csv_ranges(records) if records.is_csv else jsonl_ranges(records)
    if found is None or (records.is_csv and not records.header):
        return None
    return found.ranges(records.header)


class Spans:
    """The ranges found so far, checking that each chronology's records come in one piece."""

    def __init__(self) -> None:
        self.spans: dict[str, list[int]] = {}
        self.last: str | None = None

    def add(self, chronology: str, start: int, end: int) -> bool:
        """Add one record; False when its chronology had records before another's."""
        if chronology == self.last:
            span = self.spans[chronology]
            span[1], span[2] = end, span[2] + 1
            return True
        if chronology in self.spans:
            return False
        self.spans[chronology], self.last = [start, end, 1], chronology
        return True

    def ranges(self, header: bytes) -> Ranges:
        return Ranges(header, {name: (s, e, n) for name, (s, e, n) in self.spans.items()})


def csv_ranges(records: RecordFile) -> Spans | None:
    """`chronology_ranges` of a results CSV: a record's chronology is its first cell, read where
    a record does not start with the same bytes as the one before."""
    found, same, chronology = Spans(), b"\n", None
    for _, start, data in records.raw():
        if not data.startswith(same):
            chronology = first_cell(data)
            if chronology is None:
                return None
            # the next records of this chronology start with the same bytes (an unquoted cell)
            same = data[: data.find(b",") + 1] if not data.startswith(b'"') and b"," in data else b"\n"
        if not found.add(chronology, start, start + len(data)):  # type: ignore[arg-type]
            return None
    return found


def first_cell(record: bytes) -> str | None:
    """The first cell of a CSV record as the csv module reads it; None for a blank line, a blank
    cell or bytes that are not UTF-8."""
    if not record.strip():
        return None
    try:
        if record.startswith(b'"'):
            return next(csv.reader(io.StringIO(record.decode("utf-8"), newline="")))[0] or None
        comma = record.find(b",")
        cell = (record if comma < 0 else record[:comma]).decode("utf-8").rstrip("\r\n")
        return cell or None  # a blank chronology: read as missing, placed nowhere
    except (UnicodeDecodeError, csv.Error, StopIteration, IndexError):
        return None


def jsonl_ranges(records: RecordFile) -> Spans | None:
    """`chronology_ranges` of calls.jsonl, each line's chronology read from its start as the
    writer starts a record (harness.results.spans `IDENTITY`; a line that does not start so is
    parsed as `tables.read_keys` parses it; one that is no JSON record is skipped there, so it
    belongs to no chronology here)."""
    import orjson  # fast JSON parsing, as read_keys

    cut = cutter("messages")
    found, same, chronology = Spans(), b"\n", None
    for _, start, line in records.raw():
        if not line.startswith(same):
            match = IDENTITY.match(line)
            try:
                record = orjson.loads(match.group(1) if match else cut(line))
            except orjson.JSONDecodeError:
                record = None
            if match:
                chronology, same = record, line[: match.end(1)] + b", "
            else:
                same = b"\n"
                if not isinstance(record, dict):
                    continue  # no record
                chronology = record.get("chronology")
            if not isinstance(chronology, str):
                return None
        if not found.add(chronology, start, start + len(line)):  # type: ignore[arg-type]
            return None
    return found


@dataclass(frozen=True)
class BlockReader:
    """Reads a run's turns and calls a block of chronologies at a time (`blocks`, in plan order);
    read whole (`whole`: one block of every chronology) where the files are not in that order."""

    turns_path: Path
    calls_path: Path
    turn_columns: tuple[str, ...]
    call_keys: tuple[str, ...]
    drop: str | None
    only: Only | None
    blocks: tuple[tuple[str, ...], ...]
    turns: Ranges | None
    calls: Ranges | None

    @property
    def whole(self) -> bool:
        return self.turns is None

    def block_of(self, chronology: str) -> int | None:
        """The number of the block holding `chronology`; None when it has no records here."""
        if self.whole:
            return 0
        return self.numbers.get(chronology)

    @cached_property
    def numbers(self) -> dict[str, int]:
        return {name: n for n, block in enumerate(self.blocks) for name in block}

    def read(self, number: int) -> tuple[pd.DataFrame, pd.DataFrame] | None:
        """The turns and calls of one block, typed as the whole files' are; None when a block's
        records cannot be read so (the caller reads the files whole, which says what is wrong)."""
        if self.whole:
            turns = read_columns(self.turns_path, self.turn_columns)
            return turns, read_calls(self.calls_path, self.call_keys, drop=self.drop, only=self.only)
        names = self.blocks[number]
        assert self.turns is not None and self.calls is not None
        data = self.turns.header + read_spans(self.turns_path, spans_of(self.turns, names))
        try:
            turns = read_columns(self.turns_path, self.turn_columns, data)
        except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError, TypeError):  # UnicodeDecodeError too
            return None
        calls = read_keys(self.calls_path, self.call_keys, self.drop, self.only, spans_of(self.calls, names))
        return turns, calls

    def read_whole(self) -> BlockReader:
        """This reader, reading the files whole (one block)."""
        return BlockReader(self.turns_path, self.calls_path, *self.keys, ((),), None, None)

    @property
    def keys(self) -> tuple:
        return (self.turn_columns, self.call_keys, self.drop, self.only)


def spans_of(ranges: Ranges, names: Sequence[str]) -> list[tuple[int, int]]:
    """The byte ranges of these chronologies in one file, in file order."""
    return sorted(ranges.spans[n][:2] for n in names if n in ranges.spans)


def read_spans(path: Path, spans: list[tuple[int, int]]) -> bytes:
    with path.open("rb") as handle:
        parts = []
        for start, end in spans:
            handle.seek(start)
            parts.append(handle.read(end - start))
    return b"".join(parts)


def block_reader(
    directory: Path,
    chronologies: Sequence[str],
    turn_columns: Sequence[str],
    call_keys: Sequence[str],
    drop: str | None = None,
    only: Only | None = None,
    bound: int | None = None,
    others: Sequence[str] = (),
) -> BlockReader:
    """A `BlockReader` of a run's turns.csv and calls.jsonl: blocks of neighbouring chronologies
    (`chronologies`: the plan's order; any other found in the files after them, in file order,
    then `others`: those with records only in other files, such as probes.csv) of at most
    `bound` turn and call records (`BLOCK_RECORDS`), each at least one chronology."""
    turns_path, calls_path = directory / "turns.csv", directory / "calls.jsonl"
    turns = chronology_ranges(turns_path)
    calls = chronology_ranges(calls_path) if turns is not None and calls_path.exists() else None
    if turns is not None and calls is None and not calls_path.exists():
        calls = Ranges(b"", {})
    keys = (tuple(turn_columns), tuple(call_keys), drop, only)
    if turns is None or calls is None or not (turns.spans or calls.spans):
        return BlockReader(turns_path, calls_path, *keys, ((),), None, None)
    held = {*turns.spans, *calls.spans, *others}
    found = [n for n in dict.fromkeys([*chronologies, *turns.spans, *calls.spans, *others]) if n in held]
    limit = BLOCK_RECORDS if bound is None else bound
    blocks: list[tuple[str, ...]] = []
    current: list[str] = []
    count = 0
    for name in found:
        size = turns.spans.get(name, (0, 0, 0))[2] + calls.spans.get(name, (0, 0, 0))[2]
        if current and count + size > limit:
            blocks.append(tuple(current))
            current, count = [], 0
        current.append(name)
        count += size
    blocks.append(tuple(current))
    return BlockReader(turns_path, calls_path, *keys, tuple(blocks), turns, calls)
