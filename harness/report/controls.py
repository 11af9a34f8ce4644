"""The control: which checks a policy passes that the policy `none` passes too.

`none` (policies/none.py) keeps nothing, so a check it passes needs no memory: such a check of
another policy is **passable without memory**, counted apart from retention, never as a loss or a
gain of either policy. How a row is paired with the control's and where it is marked is in
docs/reports.md, "Passable without memory"; a row without a measured counterpart is not marked,
and a run without the control marks nothing (`marks` is None): nothing is guessed.

Everything is counted here, with pandas over the run's probes.csv, once per run; the sections
(the policies side by side, the chronologies' tables, `harness compare`) read the marks.
"""

from __future__ import annotations

import pandas as pd

from harness.report.comparison import Column, Comparison, Tables
from harness.report.totals import flags
from harness.results.rows import PROBE, Manifest

CONTROL = "none"  # the control policy's name (docs/policies.md)
PLACES = (PROBE.in_view, PROBE.in_answer, PROBE.passed)  # what a mark is about: a place, or the check
KEY = (PROBE.chronology, PROBE.model, PROBE.repetition, PROBE.probe, PROBE.check, PROBE.subject)
WORDS = "passable without memory"
IS_CONTROL = "control"  # the marks' column: the row is the control's own


def control_labels(manifest: Manifest) -> list[str]:
    """The labels of the control's policies in a run (empty: it did not run)."""
    return [p["label"] for p in manifest.policies if p.get("name", p["label"]) == CONTROL]


def no_control_line(run_ids: list[str]) -> str:
    """The one line a report says when a run has no control, so nothing is marked."""
    runs = ", ".join(run_ids)
    return (
        f"Nothing is marked {WORDS}: the control `{CONTROL}` did not run in {runs}, and without it which checks "
        f"pass with no memory is not known (a plain `harness run` runs it; or add `--policy {CONTROL}`)."
    )


def marks(probes: pd.DataFrame, manifest: Manifest) -> pd.DataFrame | None:
    """Per probes.csv row (same index): `control` (the control's own row) and, per place of
    `PLACES`, whether the row is passable without memory there; None when the control did not run."""
    labels = control_labels(manifest)
    if not labels:
        return None
    of_control = flags(probes[PROBE.policy].isin(labels))
    rows = ranked(probes[[*KEY, PROBE.policy, PROBE.status, *PLACES]])
    control = rows[of_control & flags(rows[PROBE.status] == "measured")]
    counterpart = rows[[*KEY, "nth"]].merge(
        control[[*KEY, "nth", *PLACES]].rename(columns={p: f"control {p}" for p in PLACES}),
        on=[*KEY, "nth"],
        how="left",
        sort=False,
    )
    measured = flags(rows[PROBE.status] == "measured") & ~of_control
    found = {IS_CONTROL: of_control}
    for place in PLACES:
        mine = flags(rows[place].astype("boolean"))
        theirs = flags(counterpart[f"control {place}"].astype("boolean"))
        found[place] = measured & mine & theirs
    return pd.DataFrame(found, index=probes.index)


def run_marks(tables: Tables) -> pd.DataFrame | None:
    """The marks of a run (`marks` of its whole probes.csv), counted once per run."""
    if "control marks" not in tables.whole:
        found = None if tables.manifest is None else marks(tables.whole_probes, tables.manifest)
        tables.whole["control marks"] = found
    return tables.whole["control marks"]


def is_control(column: Column) -> bool:
    """Whether a column is the control's own (shown as the control, never compared as a contender)."""
    return column.policy in control_labels(column.run.manifest)


def without_control(cmp: Comparison) -> list[str]:
    """The runs of a report that have no control (nothing of theirs is marked)."""
    return [r.run_id for r in cmp.runs if not control_labels(r.manifest)]


def mark_words(cmp: Comparison) -> str:
    """The sentence a chronology's table adds when its cells may carry the control's mark."""
    if len(without_control(cmp)) == len(cmp.runs):
        return ""
    return (
        f" `({WORDS})`: the control `{CONTROL}` had the same outcome there (the same check at the same probe "
        "and repetition), so it needs no memory (see Policies side by side)."
    )


def ranked(probes: pd.DataFrame) -> pd.DataFrame:
    """Probe rows with plain key values and `nth`, each row's rank among its policy's rows of the
    same `KEY` (file order), as `harness compare` ranks them."""
    rows = probes.copy()
    for column in (*KEY, PROBE.policy):  # plain values: categories of the two sides never disagree
        rows[column] = rows[column].astype(object)
    rows["nth"] = rows.groupby([PROBE.policy, *KEY], sort=False, dropna=False).cumcount()
    return rows


def passable_checks(probes: pd.DataFrame, manifest: Manifest) -> pd.DataFrame | None:
    """The checks of a run that passed and are passable without memory, by `KEY`, policy and
    `nth` (for `harness compare`); None when the control did not run."""
    found = marks(probes, manifest)
    if found is None:
        return None
    return ranked(probes[[*KEY, PROBE.policy]])[found[PROBE.passed].to_numpy(dtype=bool)]


def marks_of(frame: pd.DataFrame, whole: pd.DataFrame | None) -> pd.DataFrame | None:
    """The marks of some rows of the run's probes (`frame`, a selection of the rows `whole` marks)."""
    if whole is None:
        return None
    return whole.reindex(frame.index, fill_value=False) if len(frame) else whole.iloc[:0]
