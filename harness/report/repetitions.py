"""Per chronology, when a cell has several repetitions: how much each conversation's outcome
varies from one repetition to the next (aptitude and unreliability, as in Laban et al.)."""

from __future__ import annotations

from harness.report.answers import probe_answers
from harness.report.comparison import OWNER, Column, Comparison, Tables, flags
from harness.report.markdown import table
from harness.report.spread import LIBRARY, percentiles
from harness.results.rows import EXPECT, JUDGED_EXPECT, PROBE, expect_kind


def repeated(cmp: Comparison, chronology: str) -> bool:
    return any(c.repetitions(chronology) > 1 for c in cmp.columns)


def scores(column: Column, chronology: str) -> list[float]:
    """Per repetition, the share of its measured checks (with a verdict) that passed; offline
    checks only: a rubric the judge decided is a model's reading, counted apart."""
    return column.tables.once("scores", count_scores, chronology).get((chronology, column.policy, column.model), [])


def count_scores(tables: Tables) -> dict[tuple, list[float]]:
    """(chronology, policy, model) -> `scores`, repetitions in the order they first appear: one
    pandas group-by over every chronology."""
    probes = tables.probes
    judged = flags(probes[PROBE.check] == EXPECT) & flags(
        probes[PROBE.subject].astype(object).map(expect_kind).isin(JUDGED_EXPECT)
    )
    known = probes[flags((probes[PROBE.status] == "measured") & probes[PROBE.passed].notna()) & ~judged]
    if known.empty:
        return {}
    keys = [known[k] for k in (*OWNER, PROBE.repetition)]
    passed = known[PROBE.passed].astype(bool).groupby(keys, observed=True, sort=False)
    found: dict[tuple, list[float]] = {}
    sums = passed.sum()
    for key, k, n in zip(sums.index.tolist(), sums.tolist(), passed.count().tolist(), strict=True):
        found.setdefault(tuple(str(v) for v in key[:3]), []).append(int(k) / int(n))
    return found


def differing(column: Column, chronology: str) -> tuple[int, int]:
    """(probes whose answer text differs between repetitions, probes answered in every repetition)."""
    repeated = [found for found in probe_answers(column, chronology).values() if found.calls > 1]
    return sum(found.distinct > 1 for found in repeated), len(repeated)


def spread_row(column: Column, chronology: str) -> list[object]:
    found = scores(column, chronology)
    if len(found) < 2:
        return [column.header, len(found), "one repetition", "", ""]
    low, high = percentiles(found)
    differ, probes = differing(column, chronology)
    return [
        column.header,
        len(found),
        f"{round(low * 100)}%–{round(high * 100)}%",
        f"{round((high - low) * 100)} points",
        f"{differ} of {probes} probes",
    ]


def spread(cmp: Comparison, chronology: str) -> list[str]:
    """The section's lines; none when no cell of this chronology was repeated."""
    if not repeated(cmp, chronology):
        return []
    body: list[list[object]] = [spread_row(c, chronology) for c in cmp.columns]
    intro = (
        "Each repetition's score is the share of its measured checks that passed. Aptitude is the 90th "
        "percentile of those scores, unreliability the 90th minus the 10th (Laban et al., 2025): a wide "
        "gap means the same policy and model passed in one repetition and failed in another. "
        f"Computed with {LIBRARY}. Nothing is ranked."
    )
    return [
        "### Spread over repetitions",
        "",
        intro,
        "",
        table(
            [
                "policy",
                "repetitions",
                "score per repetition (10th–90th percentile)",
                "unreliability (90th − 10th)",
                "probe answers that differ across repetitions",
            ],
            body,
        ),
        "",
    ]
