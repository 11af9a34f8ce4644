"""Per chronology: the request view and retained state sizes at each turn (characters)."""

from __future__ import annotations

import math

from harness.charts import Chart
from harness.markdown import table
from harness.report.cells import spread
from harness.report.chart_names import chart_link, chart_name
from harness.report.comparison import Column, Comparison, Record, split
from harness.rows import PROBE, TURN

MAX_TURN_ROWS = 24  # longer chronologies get ranges of turns in the size tables; charts keep every turn
TURN_RANGES = 12


def by_turn(column: Column, chronology: str) -> dict[int, list[Record]]:
    """turn -> this column's turn rows (one per repetition); kept with the chronology's records."""
    return column.derived(
        "by_turn", chronology, lambda rows: {key[0]: group for key, group in split(rows, [TURN.turn]).items()}
    )


def turn_labels(cmp: Comparison, chronology: str) -> dict[int, str]:
    """Turn number -> row label, naming forgets, probes and (when several) sessions."""
    turns = [r for c in cmp.columns for r in c.rows("turns", chronology)]
    probe_at = {r[PROBE.turn]: r[PROBE.probe] for c in cmp.columns for r in c.rows("probes", chronology)}
    sessions = len({r[TURN.session] for r in turns if r[TURN.status] != "forget"}) > 1
    labels = {}
    for (turn,), rows in sorted(split(turns, [TURN.turn]).items()):
        if all(r[TURN.status] == "forget" for r in rows):
            labels[turn] = f"{turn} · forget"
            continue
        label = f"{turn}" + (f" · {rows[0][TURN.session]}" if sessions else "")
        labels[turn] = label + (f" · probe {probe_at[turn]}" if turn in probe_at else "")
    return labels


def size_cell(rows: list[Record] | None, field: str) -> str:
    if rows is None:
        return "not run"
    if field == TURN.view_chars and all(r[TURN.status] == "forget" for r in rows):
        return "forget: no request"
    return spread(r[field] for r in rows)


def size_table(cmp: Comparison, chronology: str, field: str, labels: dict[int, str]) -> str:
    """A row per turn, or per range of turns (the largest value) when the chronology is long."""
    turns, columns = list(labels), [by_turn(c, chronology) for c in cmp.columns]
    if len(turns) <= MAX_TURN_ROWS:
        body = [[labels[t]] + [size_cell(c.get(t), field) for c in columns] for t in turns]
        return table(["turn"] + cmp.headers, body)
    size = math.ceil(len(turns) / TURN_RANGES)
    spans = [turns[start : start + size] for start in range(0, len(turns), size)]
    body = [
        [f"turns {span[0]}–{span[-1]}"] + [largest([r for t in span for r in c.get(t, [])], field) for c in columns]
        for span in spans
    ]
    return table(["turns"] + cmp.headers, body)


def largest(rows: list[Record], field: str) -> str:
    values = [r[field] for r in rows if r[field] is not None]
    return "not run" if not rows else (str(max(values)) if values else "none")


def sizes(cmp: Comparison, chronology: str, charts: dict[str, Chart]) -> list[str]:
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
        lines += chart_link(cmp, charts, chart_name(cmp, chronology, kind))
    return lines
