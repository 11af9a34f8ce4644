"""Per chronology, when its probes expect an answer (`expect:`): each expectation per probe and
policy, met or not, and for one not met whether its evidence was in the view, and if not where
and why it left (probes.csv `in_view`, `lost_at`, `cause` of the `expect` rows).

Offline kinds (`value`, `pattern`, `not`, `abstain`) and rubrics the `--judge` model decides are
shown apart (the kind opens each expectation's name); a rubric in a run without a judge reads
`needs --judge`, counted neither met nor not met. With repetitions, a cell counts `k/n met` and
describes the evidence of the first repetition that did not meet it. Under a literal reader on an
imported item (harness.report.offline), a cell gives the evidence first and the verdict as not
meaningful.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.report.answers import collapsed
from harness.report.comparison import Column, Comparison, Record, unique
from harness.report.markdown import table
from harness.report.offline import NOT_MEANINGFUL, cannot_answer
from harness.results.rows import EXPECT, JUDGED_EXPECT, NEEDS_JUDGE, PROBE, expect_kind

SUBJECT_CHARS = 80  # an expectation's name in the table (a rubric may be a paragraph)
FIELDS = (
    PROBE.turn,
    PROBE.probe,
    PROBE.subject,
    PROBE.status,
    PROBE.passed,
    PROBE.in_view,
    PROBE.lost_at,
    PROBE.cause,
    PROBE.note,
    PROBE.judge_note,
)


@dataclass
class Cell:
    """One expectation at one probe under one column, over its repetitions."""

    rows: list[Record] = field(default_factory=list)

    def text(self, unanswerable: bool = False) -> str:
        """The verdict, then for one not met where its evidence was; `unanswerable` (a literal
        reader on an imported item, harness.report.offline): where its evidence was first, then
        the verdict labelled not meaningful."""
        measured = self.measured()
        if not measured:
            return self.verdict()
        if unanswerable:
            return f"{evidence_text(measured[0])}; {NOT_MEANINGFUL} ({self.verdict()})"
        failed = [r for r in measured if r[PROBE.passed] is not None and not r[PROBE.passed]]
        return self.verdict() + (f"; {evidence_text(failed[0])}" if failed else "")

    def measured(self) -> list[Record]:
        return [r for r in self.rows if r[PROBE.status] == "measured"]

    def verdict(self) -> str:
        """`met`, `not met`, `k/n met` over repetitions, `needs --judge`, or why there is none."""
        measured = self.measured()
        if not measured:
            return f"not measured ({self.rows[0][PROBE.status]})" if self.rows else "not run"
        known = [r for r in measured if r[PROBE.passed] is not None]
        if not known:
            return _no_verdict(measured[0])
        met = sum(bool(r[PROBE.passed]) for r in known)
        words = ("met" if met else "not met") if len(measured) == 1 else f"{met}/{len(measured)} met"
        if len(known) < len(measured):
            words += f", {len(measured) - len(known)} without a verdict"
        return words


def _no_verdict(row: Record) -> str:
    if row.get(PROBE.note) == NEEDS_JUDGE:
        return NEEDS_JUDGE
    return f"no verdict ({row.get(PROBE.judge_note) or 'unknown'})"


def evidence_text(row: Record) -> str:
    """Where a failed expectation's evidence was: in view, lost (where and why), or none marked."""
    if row[PROBE.in_view] is None:
        return "no evidence marked"
    if row[PROBE.in_view]:
        return "evidence in view"
    return f"evidence not in view: {row[PROBE.lost_at]} ({row[PROBE.cause]})"


def expectation_rows(column: Column, chronology: str) -> list[Record]:
    """This column's expectation rows in one chronology, in file order."""
    return column.records("probes", chronology, "expectations", lambda f: f[PROBE.check] == EXPECT, FIELDS)


def section(cmp: Comparison, chronology: str) -> list[str]:
    """The section's lines; nothing when no probe of the chronology expects an answer."""
    per_column = [expectation_rows(c, chronology) for c in cmp.columns]
    keys = sorted(
        unique((r[PROBE.turn], r[PROBE.probe], r[PROBE.subject]) for rows in per_column for r in rows),
        key=lambda key: key[0],  # a stable sort: expectations of one probe keep their order
    )
    if not keys:
        return []
    cells: list[dict[tuple, Cell]] = []
    for rows in per_column:
        found: dict[tuple, Cell] = {}
        for r in rows:
            found.setdefault((r[PROBE.turn], r[PROBE.probe], r[PROBE.subject]), Cell()).rows.append(r)
        cells.append(found)
    unanswerable = [cannot_answer(c, cmp, chronology) for c in cmp.columns]
    body = [
        [f"{probe} (turn {turn})", collapsed(subject, SUBJECT_CHARS), _kind(subject)]
        + [found.get((turn, probe, subject), Cell()).text(u) for found, u in zip(cells, unanswerable, strict=True)]
        for turn, probe, subject in keys
    ]
    offline = (
        " Under a model that is a literal reader (the offline `reference`), which cannot answer an imported "
        f"item, a cell says where the evidence was first, then the verdict as `{NOT_MEANINGFUL}`: it "
        "measures no policy."
        if any(unanswerable)
        else ""
    )
    return [
        "Each expectation of a probe's answer, per policy: met or not met, and for one not met, whether "
        "the messages marked as its evidence were in the request view (as the user's own messages), and if "
        "not where and why the first missing one left. Offline expectations are checked on the answer "
        "alone; a rubric is judged by the `--judge` model (`needs --judge` without one: not measured). "
        f"With repetitions: how many met it, and the evidence of the first that did not.{offline}",
        "",
        table(["probe", "expectation", "checked"] + cmp.headers, body),
        "",
    ]


def _kind(subject: str) -> str:
    return "judged" if expect_kind(subject) in JUDGED_EXPECT else "offline"
