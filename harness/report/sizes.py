"""Per chronology: the request view and retained state sizes at each turn (characters)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd

from harness.report.chart_data import Chart
from harness.report.chart_names import chart_link, chart_name
from harness.report.comparison import Column, Comparison, Record, Tables, plain_column, records
from harness.report.markdown import table
from harness.report.prefix_breaks import prefix_breaks
from harness.results.rows import TURN

MAX_TURN_ROWS = 24  # longer chronologies get ranges of turns in the size tables; charts keep every turn
TURN_RANGES = 12


def by_turn(column: Column, chronology: str) -> dict[int, list[Record]]:
    """turn -> this column's turn rows (one per repetition), as records: the chart plan draws every
    value; the size tables count with `turn_sizes` instead."""
    return column.derived("by_turn", chronology, grouped_by_turn)


def grouped_by_turn(rows: list[Record]) -> dict[int, list[Record]]:
    """turn -> its rows, in first-seen order."""
    found: dict[int, list[Record]] = {}
    for row in rows:
        found.setdefault(row[TURN.turn], []).append(row)
    return found


FIELDS = (TURN.view_chars, TURN.retained_chars)


@dataclass(frozen=True)
class TurnSizes:
    """One column's turn rows at one turn (a row per repetition), counted: whether every one was a
    forget, and per size field its least and largest value (None when any row has none: unknown)
    and its largest known value (None when no row has one)."""

    all_forget: bool
    low: tuple[int | None, ...]  # per field of FIELDS
    high: tuple[int | None, ...]
    largest: tuple[int | None, ...]
    first_session: object  # the session of its first row


@dataclass(eq=False)
class TurnTables:
    """Turns counted by a pandas group-by over the block of chronologies read (`Tables.at`) when
    one of them is first asked for (one row per (policy, model, turn), in first-seen order), made
    into `TurnSizes`; and per (chronology, policy, model) the sessions of its turns that were no
    forget. Only the block's counts are kept: counted for every chronology at once, they
    would be a copy of the run's turns, and the report's memory would grow with the batch."""

    tables: Tables

    def of(self, chronology: str) -> dict[tuple, dict[int, TurnSizes]]:
        """(policy, model) -> turn -> its `TurnSizes`, in one chronology."""
        return self.tables.once("turn sizes", lambda t: count_turns(t.turns), chronology)[0].get(chronology, {})

    def sessions(self, chronology: str) -> dict[tuple, set[object]]:
        """(chronology, policy, model) -> the sessions of its turns that were no forget."""
        return self.tables.once("turn sizes", lambda t: count_turns(t.turns), chronology)[1]


def count_turns(turns: pd.DataFrame) -> tuple[dict[str, dict[tuple, dict[int, TurnSizes]]], dict[tuple, set[object]]]:
    """The counts of `TurnTables` of these turn rows (a block of chronologies, in file order):
    chronology -> (policy, model) -> turn -> `TurnSizes`, and the sessions."""
    if turns.empty:
        return {}, {}
    keys = [TURN.chronology, TURN.policy, TURN.model, TURN.turn]
    frame = turns[keys].copy()
    forget = (turns[TURN.status] == "forget").to_numpy(dtype=bool)
    frame["forget"] = forget
    named = {"forget": ("forget", "all")}
    for n, field in enumerate(FIELDS):
        frame[f"v{n}"], frame[f"m{n}"] = turns[field], turns[field].isna().to_numpy(dtype=bool)
        named |= {f"low{n}": (f"v{n}", "min"), f"high{n}": (f"v{n}", "max"), f"missing{n}": (f"m{n}", "any")}
    counted = frame.groupby(keys, observed=True, sort=False, dropna=False).agg(**named)
    firsts = turns[TURN.session].loc[frame.drop_duplicates(keys).index]
    counted["first_session"] = firsts.to_numpy(dtype=object, na_value=None)  # groups in first-seen order
    found: dict[str, dict[tuple, dict[int, TurnSizes]]] = {}
    columns = {str(name): plain_column(counted[name]) for name in counted.columns}  # Python values, column by column
    fields = range(len(FIELDS))
    lows, highs, missings = ([columns[f"{name}{n}"] for n in fields] for name in ("low", "high", "missing"))
    for at, key in enumerate(counted.index.tolist()):
        missing = [column[at] for column in missings]
        largest = tuple(known(column[at]) for column in highs)
        low = tuple(None if missing[n] else known(lows[n][at]) for n in fields)
        high = tuple(None if missing[n] else largest[n] for n in fields)
        sizes = TurnSizes(bool(columns["forget"][at]), low, high, largest, columns["first_session"][at])
        found.setdefault(str(key[0]), {}).setdefault((str(key[1]), str(key[2])), {})[int(key[3])] = sizes
    owner = [TURN.chronology, TURN.policy, TURN.model]
    kept = turns.loc[~forget, [*owner, TURN.session]].drop_duplicates()
    sessions: dict[tuple, set[object]] = {}
    for row in records(kept):
        sessions.setdefault(tuple(str(row[k]) for k in owner), set()).add(row[TURN.session])
    return found, sessions


def known(value: object) -> int | None:
    return None if value is None or pd.isna(value) else int(value)  # type: ignore[call-overload]


def turn_tables(column: Column) -> TurnTables:
    return TurnTables(column.tables)  # its counts are kept by the tables, per block


def turn_sizes(column: Column, chronology: str) -> dict[int, TurnSizes]:
    """turn -> this column's `TurnSizes` in one chronology."""
    return turn_tables(column).of(chronology).get((column.policy, column.model), {})


def turn_labels(cmp: Comparison, chronology: str) -> dict[int, str]:
    """Turn number -> row label, naming forgets, probes and (when several) sessions."""
    owners = [(c, (chronology, c.policy, c.model)) for c in cmp.columns]
    sessions = set().union(*(turn_tables(c).sessions(chronology).get(key, set()) for c, key in owners))
    probe_at: dict[int, object] = {}
    for column in cmp.columns:
        probe_at |= column.probe_places(chronology)[0]
    labels = {}
    for turn in sorted({t for c, _ in owners for t in turn_sizes(c, chronology)}):
        present = [(c, key) for c, key in owners if turn in turn_sizes(c, chronology)]
        if all(turn_sizes(c, chronology)[turn].all_forget for c, _ in present):
            labels[turn] = f"{turn} · forget"
            continue
        column, key = present[0]
        label = f"{turn}" + (f" · {turn_sizes(column, chronology)[turn].first_session}" if len(sessions) > 1 else "")
        labels[turn] = label + (f" · probe {probe_at[turn]}" if turn in probe_at else "")
    return labels


def size_cell(sizes: TurnSizes | None, field: str) -> str:
    if sizes is None:
        return "not run"
    if field == TURN.view_chars and sizes.all_forget:
        return "forget: no request"
    low, high = sizes.low[FIELDS.index(field)], sizes.high[FIELDS.index(field)]
    return "unknown" if low is None or high is None else (str(low) if low == high else f"{low}–{high}")


def size_table(cmp: Comparison, chronology: str, field: str, labels: dict[int, str]) -> str:
    """A row per turn, or per range of turns (the largest value) when the chronology is long."""
    turns, columns = list(labels), [turn_sizes(c, chronology) for c in cmp.columns]
    if len(turns) <= MAX_TURN_ROWS:
        body = [[labels[t]] + [size_cell(c.get(t), field) for c in columns] for t in turns]
        return table(["turn"] + cmp.headers, body)
    size = math.ceil(len(turns) / TURN_RANGES)
    spans = [turns[start : start + size] for start in range(0, len(turns), size)]
    body = [
        [f"turns {span[0]}–{span[-1]}"] + [largest([c[t] for t in span if t in c], field) for c in columns]
        for span in spans
    ]
    return table(["turns"] + cmp.headers, body)


def largest(present: list[TurnSizes], field: str) -> str:
    at = FIELDS.index(field)
    values = [s.largest[at] for s in present if s.largest[at] is not None]
    return "not run" if not present else (str(max(values)) if values else "none")


def sizes(cmp: Comparison, chronology: str, charts: Mapping[str, Chart], beside: bool = False) -> list[str]:
    """The section; `beside`: on a page in the charts' folder (harness.report.chart_names.chart_link)."""
    labels = turn_labels(cmp, chronology)
    if not labels:
        return ["No turn was recorded.", ""]
    long = len(labels) > MAX_TURN_ROWS
    drawn = chart_name(cmp, chronology, "view") in charts
    lines = [
        (
            "This chronology is long: each row covers a range of turns and shows the largest value in it"
            + ("; the charts show every turn." if drawn else ".")
            if long
            else "Characters of message contents. With repetitions, `min–max` when they differ."
        ),
        "",
    ]
    for kind, field, what in (
        ("view", TURN.view_chars, "Request view sent at each turn (characters)"),
        ("retained", TURN.retained_chars, "Retained state after each turn (characters)"),
    ):
        lines += [f"**{what}**", "", size_table(cmp, chronology, field, labels), ""]
        lines += chart_link(cmp, charts, chart_name(cmp, chronology, kind), beside)
        if kind == "view":
            lines += prefix_breaks(cmp, chronology)
    return lines
