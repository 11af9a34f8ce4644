"""Across every probe: prohibition survival by age (turns since the prohibition was stated)."""

from __future__ import annotations

import math

from harness.charts import Chart
from harness.markdown import table
from harness.report.chart_names import SURVIVAL_CHART, chart_link
from harness.report.comparison import Column, Comparison, Record, split

MAX_AGES = 16  # more distinct ages are shown as ranges of ages


def prohibitions(column: Column) -> list[Record]:
    """The column's prohibition checks at every probe of every chronology."""
    return [r for r in column.all_rows("probes") if r["check"] == "prohibition"]


def age_groups(cmp: Comparison) -> tuple[list[str], list[list[list[Record]]]]:
    """Age labels, and per column the prohibition checks of each age (ranges of ages when many)."""
    columns = [split(prohibitions(c), ["age"]) for c in cmp.columns]
    ages = sorted({age for groups in columns for (age,) in groups if age is not None})
    size = 1 if len(ages) <= MAX_AGES else math.ceil(len(ages) / MAX_AGES)
    spans = [ages[start:start + size] for start in range(0, len(ages), size)]
    labels = [str(s[0]) if len(s) == 1 else f"{s[0]}–{s[-1]}" for s in spans]
    return labels, [[[r for a in span for r in groups.get((a,), [])] for span in spans] for groups in columns]


def by_age(cmp: Comparison, charts: dict[str, Chart]) -> list[str]:
    labels, columns = age_groups(cmp)
    lines = ["## Prohibition survival by age", ""]
    if not labels:
        return lines + ["No prohibition was in force at any probe.", ""]
    body = [[label] + [age_cell(rows[n]) for rows in columns] for n, label in enumerate(labels)]
    intro = ("Across every probe of every chronology: of the measured checks at each age (turns since the "
             "prohibition was stated), how many had it in the request view, and how many answers honoured it.")
    return lines + [intro, "", *chart_link(cmp, charts, SURVIVAL_CHART), table(["age (turns)"] + cmp.headers, body), ""]


def age_counts(rows: list[Record], field: str) -> tuple[int, int] | None:
    """(checks where `field` held, measured checks with a known `field`), None when there are none."""
    known = [bool(r[field]) for r in rows if r["status"] == "measured" and r[field] is not None]
    return (sum(known), len(known)) if known else None


def age_cell(rows: list[Record]) -> str:
    if not rows:
        return "none"
    view, answer = age_counts(rows, "in_view"), age_counts(rows, "in_answer")
    if view is None or answer is None:
        return "none measured"
    unmeasured = sum(1 for r in rows if r["status"] != "measured")
    return f"view: {view[0]}/{view[1]} · answer: {answer[0]}/{answer[1]}" + (
        f" ({unmeasured} not measured)" if unmeasured else "")  # fmt: skip
