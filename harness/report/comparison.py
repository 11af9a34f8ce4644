"""What a report compares: the runs' records, split once into columns (a policy under a model in a run).

The DataFrames of `load_results` are turned into plain records once and split by chronology,
policy and model: the report then only looks rows up, which keeps a large run fast.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from harness.errors import InputError
from harness.records import RUN_ID
from harness.results import Results
from harness.rows import TURN

KINDS = ("turns", "probes", "calls", "facts")

Record = dict[str, Any]


def plain(value: object) -> object:
    """A value of a record as Python: NaN and pandas' NA become None, numpy scalars Python ones."""
    if value is None or isinstance(value, (list, dict, str)):
        return value
    if pd.isna(value):  # type: ignore[call-overload]  # a scalar: NaN, NaT or NA
        return None
    return value.item() if hasattr(value, "item") else value


def records(frame: pd.DataFrame) -> list[Record]:
    return [{str(k): plain(v) for k, v in row.items()} for row in frame.to_dict("records")]


def split(rows: Iterable[Record], keys: Sequence[str]) -> dict[tuple, list[Record]]:
    """Rows grouped by the values of `keys`, groups and rows in first-seen order."""
    groups: dict[tuple, list[Record]] = {}
    for row in rows:
        groups.setdefault(tuple(row.get(k) for k in keys), []).append(row)
    return groups


Parts = dict[str, dict[tuple, list[Record]]]  # kind -> (chronology, policy, model) -> rows


@dataclass(frozen=True, eq=False)
class Column:
    """One column of the side-by-side tables: a policy under one model in one run."""

    run: Results
    model: str
    policy: str
    header: str
    parts: Parts

    def rows(self, kind: str, chronology: str) -> list[Record]:
        """This column's records of `turns`, `probes`, `calls` or `facts` for one chronology."""
        return self.parts[kind].get((chronology, self.policy, self.model), [])

    def all_rows(self, kind: str) -> list[Record]:
        """This column's records of every chronology."""
        return [r for (_, p, m), rows in self.parts[kind].items() if (p, m) == (self.policy, self.model) for r in rows]

    def repetitions(self, chronology: str) -> int:
        return len({r[TURN.repetition] for r in self.rows("turns", chronology)})


@dataclass(frozen=True, eq=False)
class Comparison:
    """The runs of one report and their columns, in report order."""

    runs: tuple[Results, ...]
    columns: tuple[Column, ...]
    calls: dict[str, list[Record]]  # run id -> every call record

    @property
    def name(self) -> str:
        """The report's file stem: the run id, or `compare-<id>-<id>...`."""
        ids = [r.run_id for r in self.runs]
        return ids[0] if len(ids) == 1 else "compare-" + "-".join(ids)

    @property
    def chronologies(self) -> list[str]:
        return unique(name for r in self.runs for name in r.manifest.chronology_names)

    def entries(self, chronology: str) -> list[tuple[str, dict]]:
        """(run id, manifest entry) of a chronology in every run that has it."""
        return [(r.run_id, c) for r in self.runs for c in r.manifest.chronologies if c["name"] == chronology]

    @property
    def headers(self) -> list[str]:
        return [c.header for c in self.columns]


def unique(items: Iterable[Any]) -> list[Any]:
    """Items in first-seen order, each once."""
    return list(dict.fromkeys(items))


def compare(runs: Sequence[Results]) -> Comparison:
    """Columns: policies in declared order (first run first), then runs as given, then models."""
    ids = [r.run_id for r in runs]
    twice = unique(i for n, i in enumerate(ids) if i in ids[:n])
    if twice:
        raise InputError(f"run id {', '.join(twice)} given twice; compare different runs")
    for run in runs:
        if not RUN_ID.match(run.run_id):  # it names the report's files
            raise InputError(f"{run.directory}: run id {run.run_id!r} cannot name a report file")
    keys = (TURN.chronology, TURN.policy, TURN.model)
    parts = {r.run_id: {kind: split(records(getattr(r, kind)), keys) for kind in KINDS} for r in runs}
    many_models = len(unique(m for r in runs for m in r.manifest.models)) > 1
    columns = []
    for policy in unique(p for r in runs for p in r.policy_order):
        for run in (r for r in runs if policy in r.policy_order):
            for model in run.manifest.models:
                header = policy + (f" · {model}" if many_models else "")
                header += f" @ {run.run_id}" if len(runs) > 1 else ""
                columns.append(Column(run, model, policy, header, parts[run.run_id]))
    calls = {r.run_id: [c for rows in parts[r.run_id]["calls"].values() for c in rows] for r in runs}
    return Comparison(tuple(runs), tuple(columns), calls)
