"""Across every probe: prohibition survival by age (turns since the prohibition was stated).

Only losses that can depend on age count here (a window exit, a reduction, a summary, an
eviction); a prohibition that was never stored, cleared by a `forget` of another key, or
stated in another session is shown apart, by cause. Answers count only where the probe asked.
"""

from __future__ import annotations

import math

from harness.charts import Chart
from harness.checks import AGE_CAUSES
from harness.markdown import table
from harness.report.chart_names import INTERVALS_CHART, SURVIVAL_CHART, chart_link
from harness.report.comparison import Column, Comparison, Record, split
from harness.report.spread import LIBRARY, interval_text, pass_power
from harness.rows import PROBE

MAX_AGES = 16  # more distinct ages are shown as ranges of ages


def prohibitions(column: Column) -> list[Record]:
    """The column's prohibition checks whose outcome can depend on age, at every probe."""
    return [r for r in column.all_rows("probes") if r[PROBE.check] == "prohibition" and not set_apart(r)]


def set_apart(row: Record) -> bool:
    """A measured loss whose cause does not depend on age (never stored, a forget, another session)."""
    return row[PROBE.status] == "measured" and row[PROBE.cause] is not None and row[PROBE.cause] not in AGE_CAUSES


def apart_cell(column: Column) -> str:
    """How many prohibition checks were set apart, by cause."""
    rows = [r for r in column.all_rows("probes") if r[PROBE.check] == "prohibition" and set_apart(r)]
    counts = {cause: len(group) for (cause,), group in sorted(split(rows, [PROBE.cause]).items())}
    return ", ".join(f"{cause}: {n}" for cause, n in counts.items()) or "none"


def age_groups(cmp: Comparison) -> tuple[list[str], list[list[list[Record]]]]:
    """Age labels, and per column the prohibition checks of each age (ranges of ages when many)."""
    columns = [split(prohibitions(c), [PROBE.age]) for c in cmp.columns]
    ages = sorted({age for groups in columns for (age,) in groups if age is not None})
    size = 1 if len(ages) <= MAX_AGES else math.ceil(len(ages) / MAX_AGES)
    spans = [ages[start : start + size] for start in range(0, len(ages), size)]
    labels = [str(s[0]) if len(s) == 1 else f"{s[0]}–{s[-1]}" for s in spans]
    return labels, [[[r for a in span for r in groups.get((a,), [])] for span in spans] for groups in columns]


def by_age(cmp: Comparison, charts: dict[str, Chart]) -> list[str]:
    labels, columns = age_groups(cmp)
    apart = [apart_cell(c) for c in cmp.columns]
    lines = ["## Prohibition survival by age", ""]
    if not labels and set(apart) == {"none"}:
        return lines + ["No prohibition was in force at any probe.", ""]
    body = [[label] + [age_cell(rows[n]) for rows in columns] for n, label in enumerate(labels)]
    body.append(["set apart (cause: checks)", *apart])
    intro = (
        "Across every probe of every chronology: of the measured checks at each age (turns since the "
        "prohibition was stated), how many had it in the request view, and, where the probe asked about "
        "it, how many answers honoured it. Only losses that can depend on age are counted (window, "
        "reduction, summary, eviction); the last row sets apart the losses with another cause: never "
        "stored (not-stored), cleared by a forget of another key (forget), stated in a session whose "
        "history this one does not share (other-session: not applicable there, not a loss), or with no "
        "reported reason (untraced)."
    )
    if any(len({r[PROBE.repetition] for r in rows}) > 1 for column in columns for rows in column):
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


def age_counts(rows: list[Record], field: str) -> tuple[int, int] | None:
    """(checks where `field` held, measured checks with a known `field`), None when there are none."""
    known = [bool(r[field]) for r in rows if r[PROBE.status] == "measured" and r[field] is not None]
    return (sum(known), len(known)) if known else None


def age_cell(rows: list[Record]) -> str:
    """`view: k/n · answer: k/n`; with repetitions, each with its 95% interval, and pass^n."""
    if not rows:
        return "none"
    view, answer = age_counts(rows, PROBE.in_view), age_counts(rows, PROBE.in_answer)
    if view is None:
        return "none measured"
    unmeasured = sum(1 for r in rows if r[PROBE.status] != "measured")
    repeated = len({r[PROBE.repetition] for r in rows}) > 1
    honoured = counted(answer, repeated) if answer else "not asked"
    text = f"view: {counted(view, repeated)} · answer: {honoured}"
    if repeated:
        text += f" · pass^n: {'{}/{}'.format(*pass_power(passes_by_check(rows)))}"
    return text + (f" ({unmeasured} not measured)" if unmeasured else "")


def counted(kn: tuple[int, int], repeated: bool) -> str:
    return f"{kn[0]}/{kn[1]}" + (f" {interval_text(*kn)}" if repeated else "")


def passes_by_check(rows: list[Record]) -> list[list[bool]]:
    """Each asked check's `passed` over its repetitions (one list per chronology, probe and subject)."""
    known = [r for r in rows if r[PROBE.status] == "measured" and r[PROBE.passed] is not None]
    return [
        [bool(r[PROBE.passed]) for r in group]
        for group in split(known, [PROBE.chronology, PROBE.turn, PROBE.subject]).values()
    ]
