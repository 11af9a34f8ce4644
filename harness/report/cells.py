"""Table cells: a number or its min–max spread, k/n across repetitions, `unknown` never 0."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from harness.report.comparison import flags
from harness.report.controls import PLACES, WORDS
from harness.report.markdown import plural  # noqa: F401  (the report's modules take it from here)
from harness.report.spread import interval_text
from harness.results.rows import NOT_ASKED, PROBE, REFUSED_NOT_IN_VIEW

SURVIVAL_FACETS = ((PROBE.in_view, "view", "kept", "lost"), (PROBE.in_answer, "answer", "honoured", "not honoured"))
JUDGED_FACETS = (
    (PROBE.judged_in_view, "view", "kept", "lost"),
    (PROBE.judged_in_answer, "answer", "honoured", "not honoured"),
)
STALE_PLACES = ((PROBE.in_view, "view"), (PROBE.in_answer, "answer"))
FORGOTTEN_PLACES = STALE_PLACES + ((PROBE.in_retained, "kept state"),)
# An answer that refused a prohibition the policy did not have in view is not "honoured": it is
# counted apart, as `refused, not in view`, under these tally names (one per answer verdict).
APART = {PROBE.in_answer: "refused, not in view", PROBE.judged_in_answer: "judged refused, not in view"}
# The control's marks (harness.report.controls), counted per cell under these tally names: the rows
# true in a place (or passed) whose counterpart under `none` was too.
FREE = {place: f"{WORDS} {place}" for place in PLACES}


def free_text(tally: Tally, pool: str, field: str, size: int) -> str:
    """` (passable without memory)` after an outcome the control had too; `(k passable ...)` across
    repetitions; nothing where none was, or where the run has no control."""
    free = tally.true.get((pool, FREE[field]), 0) if field in FREE else 0
    if not free:
        return ""
    return f" ({WORDS})" if size == 1 else f" ({free} {WORDS})"


def refused_not_in_view(probes: pd.DataFrame, answer: str = PROBE.in_answer) -> np.ndarray:
    """The rows whose answer refused a prohibition that was not in the view: where the checks'
    `note` says so (the pattern checks), or, for the judge's verdicts, where the judge read the
    view as lost and the answer as honoured (its `LOST-HONOURED`)."""
    if answer == PROBE.judged_in_answer:
        lost = flags(probes[PROBE.judged_in_view].astype("boolean").eq(False))
        return lost & flags(probes[PROBE.judged_in_answer].astype("boolean"))
    return flags(probes[PROBE.note] == REFUSED_NOT_IN_VIEW)


def spread(values: Iterable[object]) -> str:
    """One number, or `min–max` when repetitions differ; `unknown` if any value is missing."""
    listed = list(values)
    if not listed or any(v is None for v in listed):
        return "unknown"
    numbers = [int(v) for v in listed]  # type: ignore[call-overload]  # counts and sizes: int-like
    low, high = min(numbers), max(numbers)
    return str(low) if low == high else f"{low}–{high}"


@dataclass(frozen=True)
class Tally:
    """The probe rows of one cell (a check at a probe, one row per repetition) counted: how many,
    the first one's status, how many were measured and how many asked (measured, and not
    `not asked`), and per field how many of the measured (`known[("measured", f)]`) or asked
    rows have a value, and how many of those are true (`true`)."""

    rows: int
    first_status: object
    measured: int
    asked: int
    known: dict[tuple[str, str], int]
    true: dict[tuple[str, str], int]


def why_not(tally: Tally) -> str | None:
    """Why a cell has nothing to show, if it has not."""
    if not tally.rows:
        return "not run"
    return None if tally.measured else f"not measured ({tally.first_status})"


def unmeasured_note(tally: Tally) -> str:
    missing = tally.rows - tally.measured
    return f" ({missing} of {tally.rows} repetitions not measured)" if missing else ""


def facet(pool: int, known: int, true: int, yes: str, no: str, refused: int = 0) -> str:
    """`yes`/`no` for one observation; `k/n yes` across repetitions (of `pool` rows, `known` with a
    value, `true` of them true); unknown stays unknown. `refused` of the known answers refused a
    prohibition that was not in view: neither yes nor no, they are named apart."""
    if not known:
        return "unknown"
    if pool == 1:
        return REFUSED_NOT_IN_VIEW if refused else yes if true else no
    apart = f" ({refused}/{pool} {REFUSED_NOT_IN_VIEW})" if refused else ""
    missing = f", {pool - known} unknown" if known < pool else ""
    return f"{true}/{pool} {yes} {interval_text(true, known)}{apart}{missing}"


def survival_cell(tally: Tally, facets: Sequence[tuple[str, str, str, str]] = SURVIVAL_FACETS) -> str:
    """`kept · honoured` (view · answer); `2/3 kept · ...` across repetitions; `not asked` where
    the probe's question did not ask about the prohibition (its answer is not judged); `refused,
    not in view` for an answer that refused a prohibition the policy did not have (not honoured)."""
    why = why_not(tally)
    if why:
        return why
    shown = []
    for f, name, yes, no in facets:
        pool = "asked" if name == "answer" else "measured"
        size = tally.asked if name == "answer" else tally.measured
        counts = tally.known[(pool, f)], tally.true[(pool, f)]
        refused = tally.true.get((pool, APART[f]), 0) if f in APART else 0
        free = free_text(tally, pool, f, size) if facets is SURVIVAL_FACETS else ""
        shown.append((name, facet(size, *counts, yes, no, refused) + free if size else NOT_ASKED))
    passes, passed = tally.known[("asked", PROBE.passed)], tally.true[("asked", PROBE.passed)]
    if passes > 1 and facets is SURVIVAL_FACETS:
        shown.append(("pass", f"pass^{passes}: {'yes' if passed == passes else 'no'}"))
    text = " · ".join(f"{name} unknown" if value == "unknown" else value for name, value in shown)
    return text + unmeasured_note(tally)


def where_cell(tally: Tally, places: Sequence[tuple[str, str]]) -> str:
    """Where a value that should be gone appears: `nowhere`, `in view, answer`; k/n across repetitions."""
    why = why_not(tally)
    if why:
        return why
    found, n = [], tally.measured
    for field, name in places:
        known, true = tally.known[("measured", field)], tally.true[("measured", field)]
        if known < n:
            found.append(f"{name} unknown" if n == 1 else f"{name} {true}/{n}, {n - known} unknown")
        elif true:
            found.append(name if n == 1 else f"{name} {true}/{n}")
    text = ("in " + ", ".join(found)) if found else ("nowhere" if n == 1 else f"nowhere ({n}/{n})")
    return text + free_text(tally, "measured", PROBE.passed, n) + unmeasured_note(tally)
