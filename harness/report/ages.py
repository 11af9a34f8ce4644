"""Across every probe: prohibition survival by age (turns since the prohibition was stated).

Only losses that can depend on age count here (a window exit, a reduction, a summary, an
eviction); a prohibition that was never stored, cleared by a `forget` of another key, or
stated in another session is shown apart, by cause. Answers count only where the probe asked.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

import pandas as pd

from harness.report.cells import refused_not_in_view
from harness.report.chart_data import Chart
from harness.report.chart_names import INTERVALS_CHART, SURVIVAL_CHART, chart_link
from harness.report.comparison import Column, Comparison
from harness.report.markdown import table
from harness.report.spread import LIBRARY, interval_text
from harness.results.rows import PROBE, REFUSED_NOT_IN_VIEW

MAX_AGES = 16  # more distinct ages are shown as ranges of ages

# Losses that can depend on age (how long ago the subject was stated); the others are shown
# apart in survival by age.
AGE_CAUSES = frozenset({"window", "reduction", "summary", "eviction", "tool-collapse", "tool-clear"})


@dataclass(frozen=True)
class AgeCell:
    """The prohibition checks of one column at one age (or range of ages), counted."""

    view: tuple[int, int] | None  # (in the view, measured with a known in_view); None: none known
    # (honoured, answers with a verdict) where the probe asked; an answer that refused a
    # prohibition not in view has a verdict but is not honoured: `refused` counts those
    answer: tuple[int, int] | None
    unmeasured: int  # checks not measured (the policy stopped, or an error)
    repeated: bool  # several repetitions among them
    passes: tuple[int, int]  # (checks passed in every repetition, checks): pass^n
    refused: int = 0  # answers that refused the prohibition although it was not in view

    def counts(self, field: str) -> tuple[int, int] | None:
        return self.view if field == PROBE.in_view else self.answer


def checks(column: Column) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The column's prohibition checks at every probe: those whose outcome can depend on age, and
    those set apart (a measured loss whose cause does not: never stored, a forget, another session)."""
    frame = column.frame("probes")
    prohibition = frame[frame[PROBE.check] == "prohibition"]
    cause = prohibition[PROBE.cause]
    apart = (prohibition[PROBE.status] == "measured") & cause.notna() & ~cause.isin(AGE_CAUSES)
    return prohibition[~apart], prohibition[apart]


def apart_cell(apart: pd.DataFrame) -> str:
    """How many prohibition checks were set apart, by cause."""
    counts = apart[PROBE.cause].astype(str).value_counts()
    return ", ".join(f"{cause}: {int(counts[cause])}" for cause in sorted(counts.index)) or "none"


@lru_cache(maxsize=2)
def age_groups(cmp: Comparison) -> tuple[list[str], list[list[AgeCell | None]]]:
    """Age labels, and per column its prohibition checks of each age counted (ranges of ages when
    many); computed once per comparison (the section and two charts read it)."""
    columns = [checks(c)[0] for c in cmp.columns]
    ages = sorted({int(a) for frame in columns for a in frame[PROBE.age].dropna().unique()})
    size = 1 if len(ages) <= MAX_AGES else math.ceil(len(ages) / MAX_AGES)
    spans = [ages[start : start + size] for start in range(0, len(ages), size)]
    labels = [str(s[0]) if len(s) == 1 else f"{s[0]}–{s[-1]}" for s in spans]
    place = {age: n for n, span in enumerate(spans) for age in span}
    return labels, [age_cells(frame, place, len(spans)) for frame in columns]


def age_cells(frame: pd.DataFrame, place: dict[int, int], count: int) -> list[AgeCell | None]:
    """The checks of one column counted per age group (`place`: age -> its group), grouped by pandas."""
    frame = frame[frame[PROBE.age].notna()]
    group = frame[PROBE.age].astype(int).map(place).rename("group")
    measured = frame[PROBE.status] == "measured"

    refused = pd.Series(refused_not_in_view(frame), index=frame.index)

    def held(field: str, apart: pd.Series | None = None) -> dict[int, tuple[int, int]]:
        """(true, known) per group; `apart` rows have a verdict that is not a yes."""
        known = measured & (frame[field].notna() if apart is None else frame[field].notna() | apart)
        yes = frame[field][known].fillna(False).astype(bool)
        if apart is not None:
            yes &= ~apart[known]
        counted = yes.groupby(group[known]).agg(["sum", "count"])
        return {int(g): (int(row["sum"]), int(row["count"])) for g, row in counted.iterrows()}

    view, answer = held(PROBE.in_view), held(PROBE.in_answer, refused)
    refusals = (measured & refused).groupby(group).sum()
    rows = group.value_counts()
    unmeasured = (~measured).groupby(group).sum()
    repetitions = frame[PROBE.repetition].groupby(group).nunique()
    known = measured & frame[PROBE.passed].notna()
    keys = [group[known], frame[PROBE.chronology][known], frame[PROBE.turn][known], frame[PROBE.subject][known]]
    every = frame[PROBE.passed][known].astype(bool).groupby(keys, observed=True).all()
    passes = every.groupby(level=0).agg(["sum", "count"])
    return [
        AgeCell(
            view.get(n),
            answer.get(n),
            int(unmeasured.get(n, 0)),
            int(repetitions.get(n, 0)) > 1,
            (int(passes.loc[n, "sum"]), int(passes.loc[n, "count"])) if n in passes.index else (0, 0),
            int(refusals.get(n, 0)),
        )
        if n in rows.index
        else None
        for n in range(count)
    ]


def by_age(cmp: Comparison, charts: Mapping[str, Chart]) -> list[str]:
    labels, columns = age_groups(cmp)
    apart = [apart_cell(checks(c)[1]) for c in cmp.columns]
    lines = ["## Prohibition survival by age", ""]
    if not labels and set(apart) == {"none"}:
        return lines + ["No prohibition was in force at any probe.", ""]
    body = [[label] + [age_cell(rows[n]) for rows in columns] for n, label in enumerate(labels)]
    body.append(["set apart (cause: checks)", *apart])
    intro = (
        "Across every probe of every chronology: of the measured checks at each age (turns since the "
        "prohibition was stated), how many had it in the request view, and, where the probe asked about "
        "it, how many answers honoured it; an answer that refused although the prohibition was not in the "
        f"view is not counted as honouring it (`{REFUSED_NOT_IN_VIEW}`, its count in brackets). Only "
        "losses that can depend on age are counted (window, reduction, summary, eviction, tool-collapse, tool-clear); the last row "
        "sets apart the losses with another cause: never stored (not-stored), replaced by a correction in "
        "the fact store (replaced), cleared by a forget of "
        "another key (forget), stated in a session whose history this one does not share (other-session: "
        "not applicable there, not a loss), or with no reported reason (untraced)."
    )
    if any(cell is not None and cell.repeated for column in columns for cell in column):
        intro += (
            " With repetitions, each k/n has its 95% Wilson interval, and pass^n counts the probes' checks "
            f"that passed in every repetition (computed with {LIBRARY})."
        )
    return lines + [
        intro,
        "",
        *chart_link(cmp, charts, SURVIVAL_CHART),
        *chart_link(cmp, charts, INTERVALS_CHART),
        table(["age (turns)"] + cmp.headers, body),
        "",
    ]


def age_cell(cell: AgeCell | None) -> str:
    """`view: k/n · answer: k/n`; with repetitions, each with its 95% interval, and pass^n."""
    if cell is None:
        return "none"
    if cell.view is None:
        return "none measured"
    honoured = counted(cell.answer, cell.repeated) if cell.answer else "not asked"
    if cell.refused:
        honoured += f" ({cell.refused} {REFUSED_NOT_IN_VIEW})"
    text = f"view: {counted(cell.view, cell.repeated)} · answer: {honoured}"
    if cell.repeated:
        text += f" · pass^n: {'{}/{}'.format(*cell.passes)}"
    return text + (f" ({cell.unmeasured} not measured)" if cell.unmeasured else "")


def counted(kn: tuple[int, int], repeated: bool) -> str:
    return f"{kn[0]}/{kn[1]}" + (f" {interval_text(*kn)}" if repeated else "")
