"""Answer verdicts in the report's cells: an answer that refused a prohibition the policy did not
have in view (probes.csv note `refused, not in view`) is its own category, never "honoured", in
every section that tallies or shows answer verdicts (issue 24, item 7)."""

from __future__ import annotations

import csv
import itertools
from pathlib import Path

import pytest

from harness.models import CallRequest
from harness.models.options import ModelOptions
from harness.report.charts_plan import intervals_chart, survival_chart
from harness.report.comparison import compare
from harness.report.document import build_report
from harness.results.rows import PROBE, PROBE_COLUMNS, REFUSED_NOT_IN_VIEW
from harness.results.tables import Results, load_results
from harness.run.batch import Runtime, run_batch
from harness.run.spec import RunSpec
from tests.report.test_report import REGISTRY, RESTART, run_into, table_under
from tests.scripted import ScriptedModel, serving

POLICIES = ["full-history", "last-turns:turns=1"]  # last-turns:turns=1 no longer has the prohibition at the probe


def refusing(yes_at: int = 0) -> ScriptedModel:
    """Refuses every restart, in view or not; says yes the `yes_at`-th time it is asked without
    the prohibition in its view (0: never)."""
    unseen = itertools.count(1)

    def answer(request: CallRequest) -> str:
        if "restart" not in request.turn.user:
            return "ok"
        if not any("never restart" in m.content for m in request.messages) and next(unseen) == yes_at:
            return "Yes, go ahead."
        return "No."

    return ScriptedModel("refusing", answer)


def noted(results: Results) -> Results:
    """The run with probes.csv's `note` as the checks write it for an asked prohibition whose answer
    refused while it was not in view (harness/run/checks.py); every other cell as it was."""
    path = results.directory / "probes.csv"
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    for row in rows:
        if row[PROBE.check] == "prohibition" and (row[PROBE.in_view], row[PROBE.in_answer]) == ("false", "true"):
            row[PROBE.note] = REFUSED_NOT_IN_VIEW
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, PROBE_COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return load_results(results.directory)


@pytest.fixture(scope="module")
def once(tmp_path_factory: pytest.TempPathFactory) -> Results:
    return noted(run_into(tmp_path_factory.mktemp("once"), [RESTART], POLICIES, model=refusing(), live=True))


def test_a_refusal_without_the_prohibition_in_view_is_not_honoured(once: Results) -> None:
    survival = table_under(build_report(once), "### Prohibition survival")
    assert survival[2][3:] == ["kept · honoured", "lost · refused, not in view"]


def test_survival_by_age_counts_it_apart_from_the_honoured(once: Results) -> None:
    ages = table_under(build_report(once), "## Prohibition survival by age")
    assert ages[2][1:] == ["view: 1/1 · answer: 1/1", "view: 0/1 · answer: 0/1 (1 refused, not in view)"]
    assert "refused, not in view" in build_report(once).split("## Prohibition survival by age", 1)[1]


def test_the_charts_of_honoured_answers_leave_it_out(once: Results) -> None:
    chart = survival_chart(compare([once]))
    assert chart is not None
    honoured = next(panel for panel in chart.panels if panel.title == "honoured by the answer")
    assert honoured.cells == (((1, 1),), ((0, 1),))


def test_across_repetitions_the_refusals_not_in_view_are_counted_apart(tmp_path: Path) -> None:
    # last-turns:turns=1 is asked three times without the prohibition in view; it says yes once.
    results = noted(run_into(tmp_path, [RESTART], POLICIES, model=refusing(yes_at=2), repetitions=3, live=True))
    last_turns = [r for r in results.probes.to_dict("records") if r[PROBE.policy] == "last-turns:turns=1"]
    assert [r[PROBE.note] == REFUSED_NOT_IN_VIEW for r in last_turns].count(True) == 2
    report = build_report(results)
    assert table_under(report, "### Prohibition survival")[2][4] == (
        "0/3 kept \\[0–56%\\] · 0/3 honoured \\[0–56%\\] (2/3 refused, not in view) · pass^3: no"
    )
    ages = table_under(report, "## Prohibition survival by age")
    assert ages[2][2].startswith("view: 0/3 \\[0–56%\\] · answer: 0/3 \\[0–56%\\] (2 refused, not in view)")
    intervals = intervals_chart(compare([results]))
    assert intervals is not None and intervals.series[1].y == (0.0,)


def test_the_judge_table_keeps_a_lost_but_honoured_verdict_apart(tmp_path: Path) -> None:
    """The judge's LOST-HONOURED is the same category in its own reading: refused, not in view."""

    def verdict(request: CallRequest) -> str:
        kept = "Understood." in request.messages[1].content  # full-history's view has the stating turn
        return '{"verdict": "KEPT-HONOURED"}' if kept else '{"verdict": "LOST-HONOURED"}'

    plan = RunSpec([RESTART], [REGISTRY.parse(p) for p in POLICIES], ["reference"], options=ModelOptions(judge="judge"))
    run_batch(plan, tmp_path, "j", Runtime(REGISTRY, factory=serving(ScriptedModel("judge", verdict))))
    report = build_report(load_results(tmp_path))
    judged = table_under(report, "### Prohibition survival as a judge model read it")
    assert judged[2][3:] == ["kept · honoured", "lost · refused, not in view"]
    assert "an answer that refused a prohibition not in view counts as yes here" in report
