"""The report's first section: which policy lost which prohibition or current value, where, and why.

One table, chronologies × policies in declared order: each cell says how many prohibitions and
current values were missing from the request view at a probe and tags each cause with the turns
of its probes (`window@5`, `evicted@7`: harness.report.loss_tags), in at most 100 characters,
with a legend under the table naming each tag used; or says that nothing was lost, or, when no
probe checked a prohibition or a current value (an imported chat's last turn, a benchmark
question with expectations only), that nothing was checked: never "nothing lost" for what was
not looked at. `glance_cell` words the same losses in full (an item's page). No score, no
ranking; the chronology's name links to its section, whose *Where each loss happened* words
each loss in full.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

import numpy as np
import pandas as pd

from harness.report.chart_data import Chart
from harness.report.chart_names import MEASURES_CHART, chart_link
from harness.report.comparison import (
    OWNER,
    Column,
    Comparison,
    PerChronology,
    Tables,
    flags,
    in_groups,
    in_order,
    owner_rows,
    ranks,
    unique,
)
from harness.report.loss_tags import TAGS, tags_cell
from harness.report.markdown import anchor, link, table
from harness.results.rows import PROBE

CAUSE_WORDS = {
    "window": "left the window",
    "reduction": "reduced out of the history",
    "summary": "absent from the summary",
    "eviction": "evicted from the fact store",
    "replaced": "replaced in the fact store by a correction",
    "not-stored": "never stored",
    "tool-collapse": "collapsed with its tool results",
    "forget": "cleared by a forget (the seed's rule: every history and summary)",
    "tool-clear": "tool result cleared from the request (history kept)",
    "other-session": "from another session (never shared: not a loss)",
    "stopped": "policy stopped",
    "error": "model error",
    "untraced": "dropped, no reason reported",
}
LOST_CHECKS = ("prohibition", "current")
NOTHING_LOST = "nothing lost"
NOTHING_CHECKED = "nothing checked"  # no probe row of a prohibition or current value: nothing to lose


def glance_row(cmp: Comparison, chronology: str) -> list[object]:
    """One chronology's row: its name, linked, then a cell per column."""
    return [link(chronology, f"#{anchor(chronology)}")] + [glance_tags(c, chronology) for c in cmp.columns]


def at_a_glance(
    cmp: Comparison, rows: list[list[object]] | None = None, charts: Mapping[str, Chart] | None = None
) -> list[str]:
    """The section; `rows` are the chronologies' rows when the caller has made them; the chart of
    the policies' measures under the legend when drawn (in `charts`)."""
    rows = [glance_row(cmp, name) for name in cmp.chronologies] if rows is None else rows
    intro = (
        "How many prohibitions and current values each policy no longer had in its request view at a probe, and "
        "why: each cause tagged with the turns of the probes that found them missing (the legend is under the "
        "table). `nothing checked`: no probe checked a prohibition or a current value there. "
        "A subject from another session is listed so that nothing is hidden, but it is not a loss: "
        "sessions never share history (only a shared fact store carries across them). A forget clears "
        "every history and summary by the seed's rule, whichever key it names: full history loses "
        "what was said before it too. "
        "Nothing is scored: the sections below give the detail, and each chronology's own expectation."
    )
    cells = (str(c) for row in rows for c in row[1:])
    return [
        "## At a glance",
        "",
        intro,
        "",
        table(["chronology"] + cmp.headers, rows),
        "",
        *legend(cells),
        *chart_link(cmp, charts or {}, MEASURES_CHART),
    ]


def legend(cells: Iterable[str]) -> list[str]:
    """The lines under the table: the tags the `cells` use, each with its cause in words."""
    text = "\n".join(cells)
    used = [c for c, word in TAGS.items() if re.search(rf"(?:^|: | · ){re.escape(word)}(?:@| |$)", text, re.M)]
    if not used:
        return []
    entries = " · ".join(f"`{TAGS[cause]}`: {CAUSE_WORDS[cause]}" for cause in used)
    return [
        "Tags: a cause and the turns of the probes where a prohibition or current value was missing from the "
        "request view for it (`window@5,9`: at the probes of turns 5 and 9; `window@5–201 (7 probes)`: seven "
        "probes from turn 5 to 201; ` k/n` after a tag: in at most k of the n repetitions); before them, how many "
        f"distinct prohibitions and values were lost. {entries}. Each loss in words, where and how: each "
        "chronology's *Where each loss happened*.",
        "",
    ]


def found_losses(column: Column, chronology: str) -> dict | str:
    """(probe, turn) -> its losses (`Subjects`) of a column in one chronology, or the cell saying
    it was not run, lost nothing or checked nothing."""
    if not column.has("turns", chronology):
        return "not run"
    found = column.tables.once("losses at a glance", count_glance, chronology).get(column.key(chronology))
    return found or (NOTHING_LOST if checks_something(column, chronology) else NOTHING_CHECKED)


def glance_tags(column: Column, chronology: str) -> str:
    """A glance cell: `2 prohibitions, 1 value lost: window@5,9 · evicted@7` (harness.report.loss_tags)."""
    found = found_losses(column, chronology)
    return found if isinstance(found, str) else tags_cell(found, column.repetitions(chronology))


def glance_cell(column: Column, chronology: str) -> str:
    """`probe (turn), probe (turn): subjects — cause; ...`, probes with the same losses together."""
    found = found_losses(column, chronology)
    if isinstance(found, str):
        return found
    reps = column.repetitions(chronology)
    by_losses: dict[str, list[str]] = {}
    for (probe, turn), causes in found.items():
        by_losses.setdefault(probe_losses(causes, reps), []).append(f"{probe} ({turn})")
    return "; ".join(f"{', '.join(probes)}: {losses}" for losses, probes in by_losses.items())


def checks_something(column: Column, chronology: str) -> bool:
    """Whether any probe of this column checked a prohibition or a current value, in one chronology."""
    checked = column.records(
        "probes", chronology, "glance checks", lambda f: f[PROBE.check].isin(LOST_CHECKS), [PROBE.check]
    )
    return bool(checked)


Subjects = dict[object, dict[tuple, int]]  # cause -> (check, subject) -> in how many repetitions it was lost


def count_glance(tables: Tables) -> PerChronology | dict:
    """(chronology, policy, model) -> (probe, turn) -> its losses (`Subjects`), each in the order
    of its first row once a column's rows are sorted by turn, check (prohibitions first) and
    subject: counted over every chronology at once by NumPy and pandas, kept as one row per
    (probe, cause, subject), made into `Subjects` one chronology at a time."""
    probes = tables.probes
    chosen = probes[PROBE.check].isin(LOST_CHECKS) & probes[PROBE.cause].notna()
    fields = [PROBE.probe, PROBE.turn, PROBE.check, PROBE.subject, PROBE.cause, PROBE.repetition]
    rows = probes[[*OWNER, *fields]].take(np.flatnonzero(flags(chosen)))
    if rows.empty:
        return {}
    keys = [
        rows[PROBE.turn].to_numpy(dtype=np.float64, na_value=np.nan),
        ranks(rows[PROBE.check], lambda check: check != "prohibition"),
        ranks(rows[PROBE.subject]),
    ]
    grouped = in_groups(in_order(rows, keys), [*OWNER, *NAMED])
    shown = grouped.head(1)[[*OWNER, *NAMED]]
    shown["repetitions"] = grouped[PROBE.repetition].nunique(dropna=False).to_numpy()
    return PerChronology(shown, glance_of)


NAMED = (PROBE.probe, PROBE.turn, PROBE.cause, PROBE.check, PROBE.subject)


def glance_of(shown: pd.DataFrame) -> dict[tuple, dict[tuple, Subjects]]:
    """The losses of these rows of `count_glance`, by owner and (probe, turn), in order."""
    found: dict[tuple, dict[tuple, Subjects]] = {}
    for owner, (probe, turn, cause, check, subject, repetitions) in owner_rows(shown, [*NAMED, "repetitions"]):
        causes = found.setdefault(owner, {}).setdefault((probe, turn), {})
        causes.setdefault(cause, {})[(check, subject)] = repetitions
    return found


def probe_losses(causes: Subjects, reps: int) -> str:
    """`no-restart, database — left the window; module — never stored` for one probe."""
    parts = []
    for cause, subjects in causes.items():
        names = unique(short(subject) + share(count, reps) for (_, subject), count in subjects.items())
        parts.append(f"{', '.join(names)} — {CAUSE_WORDS.get(cause, cause)}")
    return "; ".join(parts)


def short(subject: str) -> str:
    """A prohibition's id, or a value's key (its value is in the sections below)."""
    return subject.split("=", 1)[0]


def share(count: int, reps: int) -> str:
    """` k/n`: in how many of the repetitions a subject was lost; nothing with one repetition."""
    return "" if reps == 1 else f" {count}/{reps}"
