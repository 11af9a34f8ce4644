"""Per chronology, with `--judge`: the judge's verdicts beside the pattern checks, how many it
could not give, and where the two disagree (a confusion table per policy)."""

from __future__ import annotations

from harness.report.cells import JUDGED_FACETS, survival_cell
from harness.report.comparison import Column, Comparison, Record
from harness.report.markdown import table
from harness.report.probes import probe_table
from harness.results.rows import JUDGE_FAILED as FAILED
from harness.results.rows import JUDGE_UNUSABLE as UNUSABLE
from harness.results.rows import NOT_ASKED, PROBE

# (facet name, pattern field, judge field, what "yes" means)
FACETS = (
    ("view", PROBE.in_view, PROBE.judged_in_view, "kept in view"),
    ("answer", PROBE.in_answer, PROBE.judged_in_answer, "honoured"),
)
AGREEMENT = ("both yes", "both no", "pattern yes, judge no", "pattern no, judge yes", "no verdict")


def judged_rows(column: Column, chronology: str) -> list[Record]:
    """The measured prohibition rows the judge was asked about (a note: a verdict, or why none)."""
    return column.records(
        "probes",
        chronology,
        "judged prohibitions",
        lambda f: (f[PROBE.check] == "prohibition") & (f[PROBE.status] == "measured") & f[PROBE.judge_note].notna(),
    )


def judged(cmp: Comparison, chronology: str) -> list[str]:
    """The judge's section; nothing when the run had no judge."""
    per_column = [judged_rows(c, chronology) for c in cmp.columns]
    if not any(per_column):
        return []
    lines = [
        "### Prohibition survival as a judge model read it",
        "",
        "The judge model's verdicts on the same view and answer: a model's reading (it may catch a "
        "paraphrase the pattern misses, and it may be wrong), shown beside the pattern checks above, never "
        "replacing them. Its verdicts and reasons are in probes.csv (`judge_note`). Its `LOST-HONOURED` "
        "(the view lost, the answer refused) reads `refused, not in view`, not honoured.",
        "",
    ]
    if any(r.get(PROBE.judged_in_view) is not None for rows in per_column for r in rows):
        body = probe_table(
            cmp,
            chronology,
            ["prohibition"],
            (PROBE.turn, PROBE.probe, PROBE.subject, PROBE.age),
            lambda key, tally: survival_cell(tally, JUDGED_FACETS),
        )
        lines += [table(["probe", "prohibition", "age (turns)"] + cmp.headers, body), ""]
    else:
        lines += ["The judge gave no usable verdict on this chronology.", ""]
    counts = [[c.header, *verdict_counts(rows)] for c, rows in zip(cmp.columns, per_column, strict=True) if rows]
    lines += [
        "Verdicts asked of the judge (one per prohibition in force at a probe, per repetition): usable, "
        "unusable (the reply named no verdict word, or several), and lost to a failed judge call (listed "
        'under "Policy stops and errors").',
        "",
        table(["policy", "asked", "usable", "unusable", "judge call failed"], counts),
        "",
    ]
    return lines + agreement(cmp, per_column)


def verdict_counts(rows: list[Record]) -> list[int]:
    unusable = sum(1 for r in rows if str(r[PROBE.judge_note]).startswith(UNUSABLE))
    failed = sum(1 for r in rows if str(r[PROBE.judge_note]).startswith(FAILED))
    return [len(rows), len(rows) - unusable - failed, unusable, failed]


def agreement(cmp: Comparison, per_column: list[list[Record]]) -> list[str]:
    """Per policy and facet: how the judge's verdicts sit against the pattern's (counts of verdicts)."""
    body = []
    for column, rows in zip(cmp.columns, per_column, strict=True):
        for name, pattern, judge, _ in FACETS:
            asked = [r for r in rows if not (name == "answer" and r.get(PROBE.note) == NOT_ASKED)]
            if asked:
                body.append([column.header, name, *confusion(asked, pattern, judge)])
    if not body:
        return []
    return [
        "Where the judge and the pattern checks agree: counts of verdicts per policy. Yes means kept in the "
        "view (view) or that the answer refused (answer); an answer that refused a prohibition not in view "
        "counts as yes here, since both read the same answer (the tables above show it apart, as `refused, "
        "not in view`). Neither is the truth; a disagreement is where to read the answer.",
        "",
        table(["policy", "facet", *AGREEMENT], body),
        "",
    ]


def confusion(rows: list[Record], pattern: str, judge: str) -> list[int]:
    """Counts of (pattern, judge) pairs in AGREEMENT order; a row without either verdict is `no verdict`."""
    cells = [0] * len(AGREEMENT)
    for row in rows:
        p, j = row.get(pattern), row.get(judge)
        if p is None or j is None:
            cells[4] += 1
        else:
            cells[{(True, True): 0, (False, False): 1, (True, False): 2, (False, True): 3}[(bool(p), bool(j))]] += 1
    return cells
