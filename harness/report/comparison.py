"""What a report compares: the runs' records, split into columns (a policy under a model in a run).

The report reads only the columns it shows (`READ`), typed at parse time, and no message body
(harness.results.tables), and a block of chronologies at a time (`Tables.at`, harness.results.blocks):
neighbours in plan order, a bounded number of turn and call records, so its memory does not grow
with the run. Sections count with pandas, not over per-row Python records: what a cell
shows across repetitions (survival, drift, sizes, token figures, scores) comes from one
group-by over every chronology of the block, made once per block (`Tables.once`) and turned into
cells one chronology at a time. The losses, the row at a glance and the answers at probes are
counted the same way: their rows sorted per column as a Python sort would (`in_order`, `ranks`),
grouped in order of first appearance by pandas (`in_groups`), one row per cell made into Python
values. The few rows other sections list (stops, failed calls, judged rows) are
chosen by one filter over the block, and only those rows become dicts, one chronology at a time
(`Tables.selection`). Every count is per (chronology, policy, model), so counted per block it is
what it was counted over the whole run. What the report's head counts over the whole run comes
from sums added block by block (`Tables.run_totals`, harness.report.totals). `Column.rows` still
gives a chronology's whole records (the chart plan).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd
from pandas.api.typing import DataFrameGroupBy

from harness.base.errors import InputError
from harness.base.identity import IDENTITY
from harness.base.text import shown
from harness.report.costs import COST_KEYS
from harness.report.names import side_by_side_stem
from harness.report.prices import PriceList
from harness.report.totals import RunTotals, call_counts, flags, plain_column, unique
from harness.results.blocks import BlockReader, block_reader
from harness.results.rows import CALL, PROBE, RESIDUE, RESIDUE_FROM, TURN, Manifest
from harness.results.rundir import reserved
from harness.results.spans import SpanIndex
from harness.results.tables import Results, csv_header, read_columns
from harness.results.writer import RUN_ID

Record = dict[str, Any]

# The columns the report reads of each results file; the others are never parsed.
OWNER = IDENTITY[:3]  # whose records: the chronology and the column (policy, model)
READ = {
    "turns": (
        *IDENTITY,
        TURN.turn,
        TURN.session,
        TURN.status,
        TURN.stop_reason,
        TURN.error,
        TURN.view_chars,
        TURN.retained_chars,
    ),
    # Read where the file has it: results written before the column existed lack it.
    "turns, where present": (TURN.group_violations, TURN.trigger_counter, TURN.trigger_status),
    "probes": tuple(c for c in PROBE if c != PROBE.session),
    "calls": (
        *IDENTITY,
        CALL.turn,
        CALL.kind,
        CALL.call_model,
        CALL.scripted,
        CALL.response,
        CALL.error,
        CALL.finish_reason,
        CALL.cached,
        CALL.attempts,
        CALL.format_refusals,
        CALL.estimate_tokens,
        CALL.tiktoken_tokens,
        CALL.reported_prompt_tokens,
        CALL.reported_completion_tokens,
        CALL.invalid_reported_usage,
        CALL.waits,
        CALL.waited_ms,
        CALL.http_429,
        CALL.concurrency_low,
        *COST_KEYS,
    ),
    "residue": tuple(RESIDUE),
}
# Keys read only in some records: the report shows the response of answer calls alone (a
# summary's or a fact writer's reply is never shown), so the others are not kept.
ONLY = {CALL.response: (CALL.kind, "answer")}


def records(frame: pd.DataFrame, optional: Sequence[str] = ()) -> list[Record]:
    """The rows of `frame` as dicts of Python values, built column by column; the `optional`
    columns are left out where they are blank throughout (the report reads them with `.get`)."""
    names = [str(c) for c in frame.columns if not (c in optional and frame[c].isna().all())]
    return [dict(zip(names, values)) for values in zip(*(plain_column(frame[c]) for c in names))]


# Columns the report reads with `.get`, so that a part where they are blank can leave them out.
OPTIONAL = (PROBE.note, PROBE.judged_in_view, PROBE.judged_in_answer, PROBE.judge_note, CALL.invalid_reported_usage)


def records_by_part(
    frame: pd.DataFrame, positions: dict[tuple, Any], columns: Sequence[str] | None = None
) -> dict[tuple, list[Record]]:
    """`records` of each part (key -> positions of its rows in `frame`), made with one `take` and
    one conversion per column for all the parts together: pandas costs per call, and a
    chronology has a part per column of the report. Only `columns`, when given."""
    if not positions:
        return {}
    taken = frame.take(np.concatenate(list(positions.values())))
    taken = taken if columns is None else taken[list(columns)]
    columns = {str(c): plain_column(taken[c]) for c in taken.columns}
    parts, start = {}, 0
    for key, rows in positions.items():
        end = start + len(rows)
        values = {name: column[start:end] for name, column in columns.items()}
        names = [n for n, v in values.items() if not (n in OPTIONAL and all(x is None for x in v))]
        parts[key] = [dict(zip(names, row)) for row in zip(*(values[n] for n in names))]
        start = end
    return parts


def ranks(column: pd.Series, key: Callable[[Any], Any] = lambda value: value) -> np.ndarray:
    """Per row of a categorical column, the dense rank of `key(value)` among its categories, so
    that ordering rows by rank orders them as Python's `sorted(key=...)` orders their values
    (equal keys tie); -1 where the value is missing."""
    names = [key(name) for name in column.cat.categories]
    place = {value: n for n, value in enumerate(sorted(set(names)))}
    return np.append(np.array([place[name] for name in names], dtype=np.int64), -1)[column.cat.codes.to_numpy()]


def in_order(frame: pd.DataFrame, keys: Sequence[np.ndarray]) -> pd.DataFrame:
    """`frame`'s rows ordered by each owner (chronology, policy, model), then by `keys` (the first
    first), equal rows in their order in `frame`: a stable sort, as a Python sort of each owner's
    records in file order by the same keys."""
    owners = [frame[name].cat.codes.to_numpy() for name in OWNER]
    return frame.take(np.lexsort([*reversed(keys), *reversed(owners)]))


def in_groups(frame: pd.DataFrame, columns: Sequence[str]) -> DataFrameGroupBy:
    """`frame`'s rows grouped by equal `columns` (missing values equal), groups in order of first appearance."""
    return frame.groupby(list(columns), observed=True, sort=False, dropna=False)


def owner_rows(frame: pd.DataFrame, columns: Sequence[str]) -> Iterator[tuple[tuple[str, str, str], list[Any]]]:
    """(chronology, policy, model) of each row of `frame`, and its `columns` as Python values."""
    values = [plain_column(frame[c]) for c in (*OWNER, *columns)]
    for row in zip(*values, strict=True):
        yield (str(row[0]), str(row[1]), str(row[2])), list(row[3:])


def owner_positions(frame: pd.DataFrame, rows: np.ndarray) -> dict[str, dict[tuple, np.ndarray]]:
    """chronology -> (policy, model) -> the positions in `frame` of its rows among `rows` (positions), grouped by pandas."""
    if not len(rows):
        return {}
    found: dict[str, dict[tuple, np.ndarray]] = {}
    owners = frame[list(OWNER)].take(rows).groupby(list(OWNER), observed=True, sort=False)
    for (chronology, policy, model), at in owners.indices.items():
        found.setdefault(str(chronology), {})[(str(policy), str(model))] = rows[at]
    return found


@dataclass(eq=False)
class PerChronology:
    """Counts made once over every chronology and kept as columns (`frame`, one row per cell, a
    chronology's rows together), made into Python objects one chronology at a time by `make`
    (its rows -> (chronology, policy, model) -> objects); only the last chronology's are kept, so
    what is held grows with the batch by typed columns, not by objects."""

    frame: pd.DataFrame
    make: Callable[[pd.DataFrame], dict[tuple, Any]]
    kept: tuple[str, dict[tuple, Any]] | None = None

    @cached_property
    def rows_of(self) -> dict[str, np.ndarray]:
        """chronology -> its rows of `frame`, in order."""
        if self.frame.empty:
            return {}
        chronologies = self.frame.groupby(TURN.chronology, observed=True, sort=False)
        return {str(name): rows for name, rows in chronologies.indices.items()}

    def of(self, chronology: str) -> dict[tuple, Any]:
        """(chronology, policy, model) -> its objects, of every column in one chronology."""
        if self.kept is None or self.kept[0] != chronology:
            rows = self.rows_of.get(chronology)
            self.kept = (chronology, {} if rows is None else self.make(self.frame.take(rows)))
        return self.kept[1]

    def get(self, owner: tuple[str, str, str], default: Any = None) -> Any:
        """The objects of one (chronology, policy, model), or `default`."""
        return self.of(owner[0]).get(owner, default)


@dataclass(eq=False)
class Block:
    """The records of one block of chronologies (harness.results.blocks): its turns and calls as
    read, its probes and residue taken from the run's."""

    number: int
    names: frozenset[str]  # its chronologies (none: the run read whole)
    turns: pd.DataFrame
    calls: pd.DataFrame
    probes: pd.DataFrame
    residue: pd.DataFrame | None


@dataclass(eq=False)
class Tables:
    """One run's records as the report reads them: typed columns of one block of chronologies at
    a time (`at`), and the records of one chronology at a time as dicts, split by (policy, model).

    A block is neighbouring chronologies in plan order, a bounded number of turn and call records
    (harness.results.blocks); asking for a chronology of another block reads that block and drops
    everything counted of the one before (`rows_of`, `current`, `derived`, `counted`), so what is
    held is bounded, not grown with the run. What the report's head counts over the whole run
    (`run_totals`) is added up block by block as each is first read. probes.csv and residue.csv
    (a row per check, per change) are read whole (`whole_probes`, `whole_residue`). Where the
    record files are not in plan order, the run is one block, read whole."""

    reader: BlockReader
    whole_probes: pd.DataFrame
    facts: SpanIndex
    # residue.csv; None for a run of a format version before it (not recorded, not "none found")
    whole_residue: pd.DataFrame | None = None
    loaded: Block | None = None
    totals: RunTotals = field(default_factory=RunTotals)
    added: set[int] = field(default_factory=set)  # blocks whose figures are in `totals`
    rows_of: dict[str, dict[str, dict[tuple, Any]]] = field(default_factory=dict)  # see groups
    current: dict[str, tuple[Any, Any]] = field(default_factory=dict)  # kind, selection -> (its chronology, it)
    derived: dict[tuple, dict[str, Any]] = field(default_factory=dict)  # see Column.derived
    counted: dict[str, Any] = field(default_factory=dict)  # see once
    positions: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)  # see taken
    # Counted over the whole run's probes.csv and kept for the report's life (the control's marks,
    # harness.report.controls), whatever block is read.
    whole: dict[str, Any] = field(default_factory=dict)
    manifest: Manifest | None = None  # the run's (which policies it ran); None: tables made without a run

    @classmethod
    def read(cls, run: Results) -> Tables:
        directory = run.directory
        turns = directory / "turns.csv"
        later = [c for c in READ["turns, where present"] if c in csv_header(turns)]
        probes = read_columns(directory / "probes.csv", READ["probes"])
        residue = (
            read_columns(directory / "residue.csv", READ["residue"])
            if run.manifest.format_version >= RESIDUE_FROM
            else None
        )
        others = [str(n) for f in (probes, residue) if f is not None for n in f[TURN.chronology].dropna().unique()]
        reader = block_reader(
            directory,
            run.manifest.chronology_names,
            (*READ["turns"], *later),
            READ["calls"],
            drop=CALL.messages,
            only=ONLY,
            others=others,
        )
        return cls(reader, probes, SpanIndex(directory / "facts.jsonl"), residue, manifest=run.manifest)

    def at(self, chronology: str) -> Tables:
        """These tables with the block holding `chronology` read (a chronology without records
        here leaves the block as it is)."""
        if self.loaded is not None and chronology in self.loaded.names:
            return self  # the common case: asked again and again, one chronology after another
        number = self.reader.block_of(chronology)
        if self.loaded is None or (number is not None and number != self.loaded.number):
            self.load(0 if number is None else number)
        return self

    def load(self, number: int) -> None:
        """Read one block, dropping the one before and all that was counted of it first."""
        self.loaded = None
        self.rows_of.clear()
        self.current.clear()
        self.derived.clear()
        self.counted.clear()
        read = self.reader.read(number)
        if read is None:  # its records cannot be read as a block: the run is read whole, as one
            self.reader, self.totals, self.added = self.reader.read_whole(), RunTotals(), set()
            number, read = 0, self.reader.read(0)
            assert read is not None
        turns, calls = read
        names = self.reader.blocks[number]
        probes, residue = self.whole_probes, self.whole_residue
        if not self.reader.whole:
            probes = self.taken(self.whole_probes, "whole probes", names)
            residue = None if residue is None else self.taken(residue, "whole residue", names)
        self.loaded = Block(number, frozenset(names), turns, calls, probes, residue)
        if number not in self.added:
            self.totals.add(turns, calls, self.usage())
            self.added.add(number)

    def taken(self, frame: pd.DataFrame, name: str, chronologies: Sequence[str]) -> pd.DataFrame:
        """The rows of these chronologies of a frame read whole, in file order."""
        if name not in self.positions:
            found = frame.groupby(TURN.chronology, observed=True, sort=False).indices if len(frame) else {}
            self.positions[name] = {str(k): v for k, v in found.items()}
        rows = [self.positions[name][n] for n in chronologies if n in self.positions[name]]
        return frame.take(np.sort(np.concatenate(rows)) if rows else np.zeros(0, dtype=np.int64))

    def block(self) -> Block:
        """The block read (the first when none is yet)."""
        if self.loaded is None:
            self.load(0)
        assert self.loaded is not None
        return self.loaded

    @property
    def turns(self) -> pd.DataFrame:
        return self.block().turns

    @property
    def calls(self) -> pd.DataFrame:
        return self.block().calls

    @property
    def probes(self) -> pd.DataFrame:
        return self.block().probes

    @property
    def residue(self) -> pd.DataFrame | None:
        return self.block().residue

    def run_totals(self) -> RunTotals:
        """The head's figures of the whole run: every block's added (reading those not yet read)."""
        for number in range(len(self.reader.blocks)):
            if number not in self.added:
                self.load(number)
        return self.totals

    def frame(self, kind: str) -> pd.DataFrame:
        """The block's rows of `turns`, `calls`, `probes` or `residue`."""
        return getattr(self.block(), kind)

    def groups(self, kind: str) -> dict[str, dict[tuple, Any]]:
        """chronology -> (policy, model) -> positions of its rows of `kind` in the block, grouped
        by pandas once per block."""
        if kind not in self.rows_of:
            frame = self.frame(kind)
            self.rows_of[kind] = owner_positions(frame, np.arange(len(frame)))
        return self.rows_of[kind]

    def once(self, name: str, make: Callable[[Tables], Any], chronology: str) -> Any:
        """`make` of these tables at the block holding `chronology` (counts over every chronology
        of the block, by pandas), made once per block and kept with it."""
        self.at(chronology)
        if name not in self.counted:
            self.counted[name] = make(self)
        return self.counted[name]

    def usage(self) -> pd.DataFrame:
        """`call_counts` of the block read's calls, judged once for the token tables and the run's
        totals (harness.report.totals)."""
        self.block()
        if "call counts" not in self.counted:
            self.counted["call counts"] = call_counts(self.calls)
        return self.counted["call counts"]

    def selection(
        self, kind: str, name: str, where: Callable[[pd.DataFrame], Any], columns: Sequence[str] | None, chronology: str
    ) -> dict[tuple, list[Record]]:
        """(policy, model) -> records of one chronology's rows of `kind` that `where` selects, in
        file order, with only `columns` when given. The rows are chosen by one pandas filter over
        the block, made once (`name` names the selection); their records are made one
        chronology at a time, and only the last chronology's are kept, per selection."""
        self.at(chronology)
        key = f"{kind}: {name}"
        kept = self.current.get(key)
        if kept is not None and kept[0] == chronology:
            return kept[1]
        if key not in self.counted:
            frame = self.frame(kind)
            self.counted[key] = owner_positions(
                frame, np.flatnonzero(flags(where(frame))) if len(frame) else np.arange(0)
            )
        parts = records_by_part(self.frame(kind), self.counted[key].get(chronology, {}), columns)
        self.current[key] = (chronology, parts)
        return parts

    def parts(self, kind: str, chronology: str) -> dict[tuple, list[Record]]:
        """(policy, model) -> this chronology's records of `kind`, in file order; only the last
        chronology asked for is kept, per kind."""
        self.at(chronology)
        kept = self.current.get(kind)
        if kept is not None and kept[0] == chronology:
            return kept[1]
        parts = records_by_part(self.frame(kind), self.groups(kind).get(chronology, {}))
        self.current[kind] = (chronology, parts)
        return parts


@dataclass(frozen=True, eq=False)
class Column:
    """One column of the side-by-side tables: a policy under one model in one run."""

    run: Results
    model: str
    policy: str
    header: str
    tables: Tables

    def rows(self, kind: str, chronology: str) -> list[Record]:
        """This column's records of `turns`, `probes`, `calls` or `facts` for one chronology."""
        return self.tables.parts(kind, chronology).get((self.policy, self.model), [])

    def key(self, chronology: str) -> tuple[str, str, str]:
        """Whose records, in one chronology: (chronology, policy, model)."""
        return (chronology, self.policy, self.model)

    def has(self, kind: str, chronology: str) -> bool:
        """Whether this column has rows of `turns`, `probes` or `calls` in one chronology."""
        return (self.policy, self.model) in self.tables.at(chronology).groups(kind).get(chronology, {})

    def probe_places(self, chronology: str) -> tuple[dict[int, Any], list[tuple[int, Any]]]:
        """In one chronology: turn -> the probe of this column's last probe row at that turn, and
        the distinct (turn, probe) of its probe rows; counted once per block of chronologies."""
        found = self.tables.once("probe places", lambda t: probe_places(t.probes), chronology)
        return found.get((chronology, self.policy, self.model), ({}, []))

    def records(
        self,
        kind: str,
        chronology: str,
        name: str,
        where: Callable[[pd.DataFrame], Any],
        columns: Sequence[str] | None = None,
    ) -> list[Record]:
        """This column's records, in one chronology, of the rows of `kind` that `where` selects (a
        boolean mask of a frame), with only `columns` when given; `name` names the selection, which
        is made once for every chronology and column (`Tables.selection`)."""
        return self.tables.selection(kind, name, where, columns, chronology).get((self.policy, self.model), [])

    def recorded(self, chronology: str, field: str, columns: Sequence[str]) -> list[Record]:
        """This column's turn records in one chronology where `field` is recorded, with only `columns`
        (none in results written before turns.csv had the field)."""
        if field not in self.tables.frame("turns").columns:
            return []
        return self.records("turns", chronology, field, lambda f: f[field].notna(), columns)

    def derived(self, name: str, chronology: str, make: Callable[[list[Record]], Any]) -> Any:
        """`make` of this column's turn rows of one chronology, made once and kept as long as
        that chronology's records are (several sections group the turns alike)."""
        self.tables.at(chronology)
        kept = self.tables.derived.setdefault((name, self.policy, self.model), {})
        if chronology not in kept:
            kept.clear()
            kept[chronology] = make(self.rows("turns", chronology))
        return kept[chronology]

    def frame(self, kind: str) -> pd.DataFrame:
        """This column's rows of `probes` or `residue` (read whole), every chronology, as typed columns."""
        frame = {"probes": self.tables.whole_probes, "residue": self.tables.whole_residue}[kind]
        assert frame is not None
        return frame[flags(frame[TURN.policy] == self.policy) & flags(frame[TURN.model] == self.model)]

    def repetitions(self, chronology: str) -> int:
        """How many distinct repetitions this column has turns of in one chronology."""
        counted = self.tables.once("repetitions", lambda tables: repetition_counts(tables.turns), chronology)
        return counted.get((chronology, self.policy, self.model), 0)


@dataclass(frozen=True, eq=False)
class Comparison:
    """The runs of one report and their columns, in report order."""

    runs: tuple[Results, ...]
    columns: tuple[Column, ...]
    tables: dict[str, Tables]  # run id -> its records
    prices: PriceList | None = None  # `harness report --prices`: the cost section prices the calls

    @property
    def name(self) -> str:
        """The report's file stem: the run id, or `compare-<id>+<id>...` (harness.report.names)."""
        return side_by_side_stem([r.run_id for r in self.runs])

    @property
    def chronologies(self) -> list[str]:
        return unique(name for r in self.runs for name in r.manifest.chronology_names)

    def entries(self, chronology: str) -> list[tuple[str, dict]]:
        """(run id, manifest entry) of a chronology in every run that has it."""
        return [(r.run_id, c) for r in self.runs for c in r.manifest.chronologies if c["name"] == chronology]

    @property
    def headers(self) -> list[str]:
        return [c.header for c in self.columns]


def probe_places(probes: pd.DataFrame) -> dict[tuple, tuple[dict[int, Any], list[tuple[int, Any]]]]:
    """(chronology, policy, model) -> (turn -> the probe of its last probe row at that turn, the
    distinct (turn, probe) of its probe rows in file order), from one projection of the rows."""
    shown = probes[[*OWNER, PROBE.turn, PROBE.probe]]
    found: dict[tuple, tuple[dict[int, Any], list[tuple[int, Any]]]] = {}
    last = shown.drop_duplicates([*OWNER, PROBE.turn], keep="last")
    for *owner, turn, probe in zip(*(plain_column(last[c]) for c in last.columns), strict=True):
        found.setdefault(tuple(owner), ({}, []))[0][turn] = probe
    pairs = shown.drop_duplicates()
    for *owner, turn, probe in zip(*(plain_column(pairs[c]) for c in pairs.columns), strict=True):
        found.setdefault(tuple(owner), ({}, []))[1].append((turn, probe))
    return found


def compare(runs: Sequence[Results], prices: PriceList | None = None) -> Comparison:
    """Columns: policies in declared order (first run first), then runs as given, then models;
    `prices`: what the cost figures price the calls with (None: no money shown)."""
    ids = [r.run_id for r in runs]
    twice = unique(i for n, i in enumerate(ids) if i in ids[:n])
    if twice:
        raise InputError(f"run id {', '.join(twice)} given twice; compare different runs")
    for run in runs:
        if not RUN_ID.match(run.run_id):  # it names the report's files
            raise InputError(f"{run.directory}: run id {shown(run.run_id)} cannot name a report file")
    if len(runs) == 1 and reserved(runs[0].run_id):  # a run made before such ids were refused
        raise InputError(
            f"{runs[0].directory}: run id {shown(runs[0].run_id)} would name the reports folder's own "
            f"{runs[0].run_id}.md; copy the run under another name and set its manifest's run_id"
        )
    tables = {r.run_id: Tables.read(r) for r in runs}
    many_models = len(unique(m for r in runs for m in r.manifest.models)) > 1
    columns = []
    for policy in unique(p for r in runs for p in r.policy_order):
        for run in (r for r in runs if policy in r.policy_order):
            for model in run.manifest.models:
                header = policy + (f" · {model}" if many_models else "")
                header += f" @ {run.run_id}" if len(runs) > 1 else ""
                columns.append(Column(run, model, policy, header, tables[run.run_id]))
    return Comparison(tuple(runs), tuple(columns), tables, prices)


def repetition_counts(turns: pd.DataFrame) -> dict[tuple, int]:
    """(chronology, policy, model) -> how many distinct repetitions have turns. A conversation's
    turns are rows in a row, so only the first row of each run of one identity is counted."""
    if turns.empty:
        return {}
    owner = [TURN.chronology, TURN.policy, TURN.model]
    firsts = turns[[*owner, TURN.repetition]].take(run_starts(turns, [*owner, TURN.repetition])).drop_duplicates()
    counted = firsts[firsts[TURN.repetition].notna()].groupby(owner, observed=True).size()
    return {tuple(str(k) for k in key): int(n) for key, n in counted.items() if n}


def run_starts(frame: pd.DataFrame, columns: Sequence[str]) -> np.ndarray:
    """Positions of the rows whose `columns` differ from the row before (the first row too):
    each run of equal keys once, by comparing codes and values in NumPy."""
    starts = np.zeros(len(frame), dtype=bool)
    starts[:1] = True
    for name in columns:
        column = frame[name]
        if isinstance(column.dtype, pd.CategoricalDtype):
            values = column.cat.codes.to_numpy()
        else:
            values = column.to_numpy(
                dtype=np.float64, na_value=np.nan
            )  # integers: exact below 2**53; NaN differs from all
        starts[1:] |= values[1:] != values[:-1]
    return np.flatnonzero(starts)
