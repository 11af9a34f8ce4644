"""Reading a results directory back, as pandas DataFrames (pandas is also used by the report's
comparison and by `harness show`, which read these frames).

>>> from harness import load_results
>>> results = load_results("results/example")
>>> results.probes[results.probes.check == "prohibition"]
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, fields
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness.base.errors import InputError
from harness.base.identity import RunKey
from harness.base.locking import lock_holder
from harness.base.text import clipped
from harness.results.conversations import ViewReader, ViewReading, scanning
from harness.results.damage import csv_damage, damage_error
from harness.results.reader import complete_text, read_manifest, read_records
from harness.results.rows import BOOL_COLUMNS, FLOAT_COLUMNS, INT_COLUMNS, RESIDUE_FROM, CallRecord, Manifest


@dataclass(frozen=True)
class Results:
    """One run's results: its manifest and one DataFrame per record file, each read whole on
    first use (the report reads only the columns it needs, harness.report.comparison)."""

    directory: Path
    manifest: Manifest
    read_views: ViewReading = scanning  # how `view_at` reads a conversation's views (see `load_results`)

    @cached_property
    def turns(self) -> pd.DataFrame:
        return read_csv(self.directory / "turns.csv")

    @cached_property
    def probes(self) -> pd.DataFrame:
        return read_csv(self.directory / "probes.csv")

    @cached_property
    def residue(self) -> pd.DataFrame | None:
        """residue.csv (harness.run.residue); None for a run of a format version before it
        (`RESIDUE_FROM`): its residue was not recorded, which is not the same as none found."""
        if self.manifest.format_version < RESIDUE_FROM:
            return None
        return read_csv(self.directory / "residue.csv")

    @cached_property
    def calls(self) -> pd.DataFrame:
        return read_jsonl(self.directory / "calls.jsonl")

    @cached_property
    def facts(self) -> pd.DataFrame:
        return read_jsonl(self.directory / "facts.jsonl")

    @cached_property
    def views(self) -> pd.DataFrame:
        """`views.jsonl` as written: per turn, `view` and `retained` as references into
        `messages` (see harness/results/views.py); `view_at` gives them as whole message lists.
        Read on first use: only `harness show` needs it, not the report."""
        return read_jsonl(self.directory / "views.jsonl")

    @cached_property
    def messages(self) -> pd.DataFrame:
        """`messages.jsonl`: each message of each conversation once, with its `id`."""
        return read_jsonl(self.directory / "messages.jsonl")

    def view_at(self, chronology: str, policy: str, model: str, repetition: int, turn: int) -> dict[str, Any] | None:
        """The `views.jsonl` row of one turn of one conversation, with `view` (None at a forget)
        and `retained` as whole lists of message records; None when that turn has no row."""
        found = self._view_reader.conversation(RunKey(chronology, policy, model, repetition))
        return found.at(turn) if found else None

    @cached_property
    def _view_reader(self) -> ViewReader:
        """The views of one conversation at a time (pandas would turn a missing message turn
        into NaN, so they are read as plain records)."""
        return self.read_views(self.directory, self.manifest.status == "complete")

    @cached_property
    def writer(self) -> str | None:
        """The process writing this run now, as its lock names it (`process 123 (harness run since
        ...)`); None for a complete run, and for one no process holds (stopped, interrupted, failed)."""
        return None if self.manifest.status == "complete" else lock_holder(self.directory)

    @property
    def run_id(self) -> str:
        return self.manifest.run_id

    @property
    def policy_order(self) -> list[str]:
        """Policy labels in the order the run declared them."""
        return self.manifest.policy_labels


def read_jsonl(path: Path) -> pd.DataFrame:
    """Records of a JSON-lines file; a torn last line (an interrupted write) is skipped."""
    return pd.DataFrame(read_records(path))


def read_csv(path: Path) -> pd.DataFrame:
    """A results CSV with blanks kept as missing (unknown) and true/false as booleans."""
    if not path.is_file():
        raise InputError(f"{path}: missing; the results are incomplete: resume the run or start a new one")
    try:
        return typed(pd.read_csv(io.StringIO(complete_text(path)), dtype=str, keep_default_na=False, na_values=[""]))
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as exc:
        raise unreadable(path, exc) from None


def unreadable(path: Path, exc: Exception) -> InputError:
    """A results CSV the parser failed on: the cell that is not what the harness writes (file,
    line, field), when one is found; else the parser's first line (its own words, which may
    advise what only a programmer can do: a cell over 4,300 digits is found first)."""
    found = csv_damage(path)
    if found:
        return damage_error(found)
    reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return InputError(f"{path}: not a results table ({clipped(reason)}); restore it, or start a new run")


def typed(frame: pd.DataFrame) -> pd.DataFrame:
    """Booleans and numbers where the columns hold them (the field types of harness/results/rows.py)."""
    for column in frame.columns:
        if column in BOOL_COLUMNS:
            frame[column] = frame[column].map({"true": True, "false": False}).astype("boolean")
        elif column in INT_COLUMNS:
            frame[column] = pd.to_numeric(frame[column]).astype("Int64")
        elif column in FLOAT_COLUMNS:
            frame[column] = pd.to_numeric(frame[column])
    return frame


def csv_header(path: Path) -> list[str]:
    """The column names of a results CSV (none when it is missing or empty: `read_columns` says so)."""
    try:
        return [str(c) for c in pd.read_csv(path, nrows=0).columns]
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError):
        return []


def read_columns(path: Path, columns: Sequence[str], part: bytes | None = None) -> pd.DataFrame:
    """Only `columns` of a results CSV, typed at parse time: booleans, integers and floats as the
    row types declare them, every other column categorical (a few distinct values repeated over
    many rows). Without the text as Python strings, a million rows fit in tens of megabytes.
    A torn last row is left out, as `read_csv` does. `part`: the header and some whole records
    of that file (harness.results.blocks), read instead of the file."""
    if not path.is_file():
        raise InputError(f"{path}: missing; the results are incomplete: resume the run or start a new one")
    dtypes = {c: column_type(c) for c in columns}

    def parse(source: Any) -> pd.DataFrame:
        return pd.read_csv(source, usecols=list(columns), dtype=dtypes, keep_default_na=False, na_values=[""])

    if part is not None:  # whole records: an error here is the caller's to handle (it reads the file whole)
        return parse(io.BytesIO(part))
    ends = ends_with_newline(path)
    retry = (UnicodeDecodeError, pd.errors.ParserError) if ends else UnicodeDecodeError
    try:
        try:
            return parse(path if ends else io.StringIO(complete_text(path)))
        except retry:  # complete_text names a line that is not UTF-8, or drops a torn tail (a cut inside quotes)
            return parse(io.StringIO(complete_text(path)))
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError, TypeError, OverflowError) as exc:
        raise unreadable(path, exc) from None


def column_type(column: str) -> str:
    if column in BOOL_COLUMNS:
        return "boolean"
    if column in INT_COLUMNS:
        return "Int64"
    return "float64" if column in FLOAT_COLUMNS else "category"


def ends_with_newline(path: Path) -> bool:
    """Whether a CSV file's last byte is a newline: read whole as it is, unless that newline is
    inside quotes (a write cut inside a multi-line cell), where the parser stops at the end of
    the file inside a string and the file is read again up to its last whole row. Only the last
    byte is read: the parser reads the file once."""
    with path.open("rb") as handle:
        if not handle.seek(0, 2):
            return False
        handle.seek(-1, 2)
        return handle.read(1) == b"\n"


Only = dict[str, tuple[str, str]]  # key -> (another key, value): read only where that key has that value


def value_kind(key: str) -> str:
    """How `read_keys` types a key, whichever reader reads it: `bool`, `int`, `category`, `str` or `raw` (as read)."""
    kind = CALL_TYPES.get(key, "")
    if kind.startswith("bool"):
        return "bool"
    if kind.startswith("int") and key not in RAW_COUNTS:
        return "int"
    if key in CATEGORIES:
        return "category"
    return "str" if kind.startswith("str") else "raw"


def read_keys(
    path: Path,
    keys: Sequence[str],
    drop: str | None = None,
    only: Only | None = None,
    spans: Sequence[tuple[int, int]] | None = None,
) -> pd.DataFrame:
    """Only `keys` of the records of calls.jsonl, one column each: booleans and integers as
    `CallRecord` declares them, names categorical, other values as read. `only` names keys
    read only in some records (the report keeps `response` of answer calls alone: a summary's
    or a fact writer's reply is never shown); in the others they are None.

    Read line by line with orjson. `drop` names a key whose value may be large and is not
    wanted (the message bodies): it is cut out of the line's text before parsing (when the next
    key follows it as the record type orders them), so its bytes are never parsed. A torn last
    line is skipped, and so is a line that is no JSON. (harness.results.calls_in_bulk reads a
    large file by DuckDB into the same frame.)

    Values are typed every `CHUNK_LINES` records (`TypedColumn`), so the Python objects of a
    chunk are freed before the next is parsed: the heap left behind is that of one chunk, not
    of every record's values.

    `spans`: (first byte, end) of whole records, the only ones read (harness.results.blocks)."""
    import orjson  # fast JSON parsing

    only = only or {}
    columns = {k: TypedColumn(k) for k in keys}
    values: dict[str, list[Any]] = {k: [] for k in keys}
    plain = [k for k in keys if k not in only]
    chosen = [(k, *only[k]) for k in keys if k in only]
    cut = cutter(drop)
    if path.exists():
        with path.open("rb") as handle:
            count = 0
            for line in handle if spans is None else lines_within(handle, spans):
                if not line.endswith(b"\n"):
                    break  # a torn last record
                try:
                    record = orjson.loads(cut(line))
                except orjson.JSONDecodeError:
                    continue
                if not isinstance(record, dict):
                    continue  # JSON, but no record
                for key in plain:
                    values[key].append(record.get(key))
                for key, other, value in chosen:
                    values[key].append(record.get(key) if record.get(other) == value else None)
                count += 1
                if count == CHUNK_LINES:
                    for key in keys:
                        columns[key].add(values[key])
                        values[key] = []
                    count = 0
    return pd.DataFrame({k: columns[k].add(values[k]).done() for k in keys}, copy=False)


def lines_within(handle: Any, spans: Sequence[tuple[int, int]]) -> Iterator[bytes]:
    """The lines of a file within these byte ranges (each starting at a line)."""
    for start, end in spans:
        handle.seek(start)
        while start < end:
            line = handle.readline()
            if not line:
                return
            start += len(line)
            yield line


CHUNK_LINES = 4096
CATEGORIES = ("chronology", "policy", "model", "kind", "call_model", "finish_reason", "tiktoken_encoding")
CALL_TYPES = {f.name: str(f.type) for f in fields(CallRecord)}
RAW_COUNTS = ("reported_prompt_tokens", "reported_completion_tokens")  # kept as read: results may hold invalid counts
FITTING = {"bool": {bool, type(None)}, "int": {int, type(None)}, "category": {str, type(None)}}


class TypedColumn:
    """One key's values, typed chunk by chunk as `typed_values` types them whole.

    A chunk is typed when every value is of its kind's own Python type (or None); typing it
    loses nothing, so it can be undone exactly. A value of another type (a torn or hand-edited
    record) turns the column back into the values as read, and `typed_values` of the whole list
    decides, as it always did: the result equals `typed_values` of every value at once."""

    def __init__(self, key: str) -> None:
        self.key, self.kind = key, value_kind(key)
        self.chunks: list[Any] = []  # typed arrays while every chunk fits
        self.values: list[Any] | None = None if self.kind in FITTING else []  # plain values otherwise

    def add(self, values: list[Any]) -> TypedColumn:
        if self.values is None and set(map(type, values)) <= FITTING[self.kind]:
            typed = typed_values(self.key, values)
            if not isinstance(typed, pd.arrays.NumpyExtensionArray):  # typed (not a number beyond 64 bits)
                self.chunks.append(typed)
                return self
        if self.values is None:  # undo: every typed value is exactly the value read
            self.values = [v for chunk in self.chunks for v in chunk.to_numpy(dtype=object, na_value=None).tolist()]
            self.chunks = []
        self.values.extend(values)
        return self

    def done(self) -> Any:
        if self.values is not None:
            return typed_values(self.key, self.values)
        if not self.chunks:
            return typed_values(self.key, [])
        if self.kind == "category":
            return joined_categories(self.chunks)
        # One BooleanArray or IntegerArray of every chunk's values, as pandas joins arrays of one type.
        return pd.concat([pd.Series(chunk, copy=False) for chunk in self.chunks], ignore_index=True).array


def joined_categories(chunks: list[pd.Categorical]) -> pd.Categorical:
    """Categoricals of strings as one, as `pd.Categorical` makes it of all their values at once
    (categories sorted by pandas)."""
    names = {name for chunk in chunks for name in chunk.categories}
    if not names:
        return pd.Categorical([None] * sum(len(chunk) for chunk in chunks))
    categories = pd.Categorical(list(names)).categories
    codes = [np.append(categories.get_indexer(chunk.categories), -1)[chunk.codes] for chunk in chunks]
    return pd.Categorical.from_codes(np.concatenate(codes), categories)


def typed_values(key: str, values: list[Any]) -> Any:
    """A column of call records typed by its annotation; a value that does not fit stays as read."""
    kind = value_kind(key)  # the one decision both readers of calls.jsonl follow
    try:
        with np.errstate(invalid="raise", over="raise"):  # a cast that would lose the value fails instead
            if kind == "bool":
                return pd.array(values, dtype="boolean")
            if kind == "int":
                return pd.array(values, dtype="Int64")  # reported usage is "raw": results may hold invalid counts
            if kind == "category":
                return pd.Categorical(values)
    except (TypeError, ValueError, OverflowError, FloatingPointError):  # e.g. an integer beyond 64 bits
        pass
    return pd.array(values, dtype=object)


def cutter(key: str | None) -> Callable[[bytes], bytes]:
    """A function that removes `"key": <value>, ` from a JSON line written by harness.results.writer
    (keys in field order, `json.dumps` separators), leaving the line whole when it cannot tell."""
    if key is None:
        return lambda line: line
    names = [f.name for f in fields(CallRecord)]
    start = f', "{key}": '.encode()
    end = f', "{names[names.index(key) + 1]}": '.encode()

    def cut(line: bytes) -> bytes:
        at = line.find(start)
        if at < 0:
            return line
        after = line.find(end, at + len(start))
        return line if after < 0 else line[:at] + line[after:]

    return cut


def load_results(directory: str | Path, read_views: ViewReading = scanning) -> Results:
    """Load `results/<run-id>/`; raise InputError when it is not a results directory. The
    manifest is read now, the record files when first used.

    `read_views`: how `view_at` finds one conversation's views. By default a plain scan of
    `views.jsonl` and `messages.jsonl` per conversation; for many conversations or large files,
    `harness.results.spans.view_reader` (what the report and `harness show` use) reads the same
    records through an index of each file."""
    directory = Path(directory)
    manifest = read_manifest(directory)
    for name in ("turns.csv", "probes.csv"):
        if not (directory / name).is_file():
            raise InputError(
                f"{directory / name}: missing; the results are incomplete: resume the run or start a new one"
            )
    return Results(directory, manifest, read_views)
