"""Table cells: a number or its min–max spread, k/n across repetitions, `unknown` never 0."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from harness.checks import NOT_ASKED
from harness.markdown import plural  # noqa: F401  (the report's modules take it from here)
from harness.report.comparison import Record
from harness.report.spread import interval_text
from harness.rows import PROBE

SURVIVAL_FACETS = ((PROBE.in_view, "view", "kept", "lost"), (PROBE.in_answer, "answer", "honoured", "not honoured"))
JUDGED_FACETS = (
    (PROBE.judged_in_view, "view", "kept", "lost"),
    (PROBE.judged_in_answer, "answer", "honoured", "not honoured"),
)
STALE_PLACES = ((PROBE.in_view, "view"), (PROBE.in_answer, "answer"))
FORGOTTEN_PLACES = STALE_PLACES + ((PROBE.in_retained, "kept state"),)


def spread(values: Iterable[object]) -> str:
    """One number, or `min–max` when repetitions differ; `unknown` if any value is missing."""
    listed = list(values)
    if not listed or any(v is None for v in listed):
        return "unknown"
    numbers = [int(v) for v in listed]  # type: ignore[call-overload]  # counts and sizes: int-like
    low, high = min(numbers), max(numbers)
    return str(low) if low == high else f"{low}–{high}"


def facet(values: list[object], yes: str, no: str) -> str:
    """`yes`/`no` for one observation; `k/n yes` across repetitions; unknown stays unknown."""
    seen = [bool(v) for v in values if v is not None]
    if not seen:
        return "unknown"
    if len(values) == 1:
        return yes if seen[0] else no
    missing = f", {len(values) - len(seen)} unknown" if len(seen) < len(values) else ""
    return f"{sum(seen)}/{len(values)} {yes} {interval_text(sum(seen), len(seen))}{missing}"


def measured_or_why(rows: list[Record]) -> tuple[list[Record], str | None]:
    """The measured rows, or why there is nothing to show."""
    if not rows:
        return [], "not run"
    measured = [r for r in rows if r[PROBE.status] == "measured"]
    return measured, None if measured else f"not measured ({rows[0][PROBE.status]})"


def unmeasured_note(rows: list[Record], measured: list[Record]) -> str:
    missing = len(rows) - len(measured)
    return f" ({missing} of {len(rows)} repetitions not measured)" if missing else ""


def survival_cell(rows: list[Record], facets: Sequence[tuple[str, str, str, str]] = SURVIVAL_FACETS) -> str:
    """`kept · honoured` (view · answer); `2/3 kept · ...` across repetitions; `not asked` where
    the probe's question did not ask about the prohibition (its answer is not judged)."""
    measured, why = measured_or_why(rows)
    if why:
        return why
    asked = [r for r in measured if r.get(PROBE.note) != NOT_ASKED]
    shown = []
    for f, name, yes, no in facets:
        pool = asked if name == "answer" else measured
        shown.append((name, facet([r.get(f) for r in pool], yes, no) if pool else NOT_ASKED))
    passes = [r[PROBE.passed] for r in asked if r.get(PROBE.passed) is not None]
    if len(passes) > 1 and facets is SURVIVAL_FACETS:
        shown.append(("pass", f"pass^{len(passes)}: {'yes' if all(passes) else 'no'}"))
    text = " · ".join(f"{name} unknown" if value == "unknown" else value for name, value in shown)
    return text + unmeasured_note(rows, measured)


def where_cell(rows: list[Record], places: Sequence[tuple[str, str]]) -> str:
    """Where a value that should be gone appears: `nowhere`, `in view, answer`; k/n across repetitions."""
    measured, why = measured_or_why(rows)
    if why:
        return why
    found, n = [], len(measured)
    for field, name in places:
        seen = [bool(r[field]) for r in measured if r[field] is not None]
        if len(seen) < n:
            found.append(f"{name} unknown" if n == 1 else f"{name} {sum(seen)}/{n}, {n - len(seen)} unknown")
        elif any(seen):
            found.append(name if n == 1 else f"{name} {sum(seen)}/{n}")
    text = ("in " + ", ".join(found)) if found else ("nowhere" if n == 1 else f"nowhere ({n}/{n})")
    return text + unmeasured_note(rows, measured)
