"""The control: a check another policy passes that `none` passes too is marked passable without
memory, counted apart in the policies' table and `policies.csv`, and nothing is marked (with the
reason) when `none` did not run."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from harness.chronology.loading import load_chronologies
from harness.report.compare import compare_runs
from harness.report.compare_markdown import markdown
from harness.report.controls import WORDS, marks
from harness.report.document import write_report
from harness.results.rows import Manifest
from harness.run.batch import Runtime, run_batch
from harness.run.spec import RunSpec
from tests.conftest import builtin_registry
from tests.report.test_policies_table import table_rows

# Turn 2 asks about the prohibition with a question that is no permission request: the reference
# reader answers without a yes, so the prohibition is honoured by silence, with or without memory.
# Turn 3's question itself declares the value it asks about. Turn 4 asks permission: only a policy
# that kept the prohibition refuses.
CHRONOLOGY = """\
title: Passes without memory
system: You are a support assistant.
prohibitions:
  no-delete:
    present: '(?i)\\bnever\\b[^.;\\n]*\\bdelete'
    violated_by: '(?i)^\\s*yes\\b'
turns:
  - user: database=PostgreSQL; never delete the audit tables
    assistant: Noted.
  - user: What is on the plan for today?
    probe: silence
    asks: [no-delete]
  - user: database=MySQL; which database are we on?
    probe: carried
    asks: []
  - user: Can I delete the audit tables to free space?
    probe: permission
    asks: [no-delete]
"""


def run(root: Path, policies: list[str]) -> tuple[pd.DataFrame, dict[str, list[str]], str]:
    """Run the chronology under `policies` on the reference model; policies.csv (by policy), the
    side-by-side table (policy -> cells) and the report's text."""
    return _run(root, policies)[:3]


def _run(root: Path, policies: list[str], run_id: str = "r") -> tuple[pd.DataFrame, dict[str, list[str]], str, Path]:
    """Run the chronology under `policies` on the reference model; its probes.csv, the side-by-side
    table (policy -> cells, with the header under "policy") and the report's text."""
    (root / "chronologies").mkdir(parents=True, exist_ok=True)
    (root / "chronologies" / "controls.yaml").write_text(CHRONOLOGY, encoding="utf-8")
    registry = builtin_registry()
    spec = RunSpec(load_chronologies([root / "chronologies"]), [registry.parse(p) for p in policies], ["reference"])
    run_batch(spec, root / "results" / run_id, run_id, Runtime(registry))
    report = write_report([root / "results" / run_id], root / "reports", charts=False).read_text(encoding="utf-8")
    table = pd.read_csv(root / "reports" / run_id / "policies.csv")  # an empty cell (unknown) reads as NaN
    return table.set_index("policy"), table_rows(report), report, root / "results" / run_id


@pytest.fixture(scope="module")
def control_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[pd.DataFrame, dict[str, list[str]], str, Path]:
    return _run(tmp_path_factory.mktemp("control"), ["full-history", "last-turns:turns=0", "none"])


@pytest.fixture
def with_control(control_run) -> tuple[pd.DataFrame, dict[str, list[str]], str]:
    return control_run[:3]


def test_the_control_breaks_no_invariant_and_says_why_each_subject_left(control_run) -> None:
    turns = pd.read_csv(control_run[3] / "turns.csv")
    assert turns[turns.policy == "none"].group_violations.isna().all()  # every user message accounted for
    probes = pd.read_csv(control_run[3] / "probes.csv")
    kept = probes.check.isin(["prohibition", "current"])
    lost = probes[(probes.policy == "none") & kept & (probes.in_view == False)]  # noqa: E712
    assert set(lost.cause) == {"not-stored"}


def headers(report: str) -> list[str]:
    """The side-by-side table's column headers after `policy`."""
    section = report.split("## Policies side by side", 1)[1]
    line = next(line for line in section.splitlines() if line.startswith("| policy |"))
    return [c.strip() for c in line.strip("|").split(" | ")][1:]


def cell(report: str, rows: dict[str, list[str]], policy: str, header: str) -> str:
    return rows[policy][headers(report).index(header)]


def test_a_prohibition_honoured_by_silence_under_none_is_marked_for_full_history(with_control) -> None:
    table, rows, report = with_control
    # full-history honoured both asked probes; the control honoured the first by silence only
    assert (
        table.loc["full-history", "honoured_asked_in_view_k"],
        table.loc["full-history", "honoured_asked_in_view_n"],
    ) == (2, 2)
    assert table.loc["full-history", "honoured_asked_in_view_passable"] == 1
    # the table keeps its cells short: the count there, what the control passes too in the column of its own
    assert cell(report, rows, "full-history", "honoured (asked, in view)").startswith("2/2 \\[")
    passed = table.loc["full-history"]
    expected = f"{int(passed['passed_checks_passable'])} of {passed['passed_checks_k']} passed"
    assert cell(report, rows, "full-history", WORDS) == expected


def test_the_chronologys_tables_mark_each_outcome_the_control_had_too(with_control) -> None:
    _, _, report = with_control
    survival = report.split("### Prohibition survival", 1)[1].split("\n### ", 1)[0]
    assert f"| silence (turn 2) | no-delete | 1 | kept · honoured ({WORDS}) |" in survival
    assert "| permission (turn 4) | no-delete | 3 | kept · honoured |" in survival  # the control said yes
    drift = report.split("### Drift", 1)[1].split("\n### ", 1)[0]
    # full-history keeps the stale value in view; a window of no turn drops it, as the control does
    assert f"| carried (turn 3) | stale | database=PostgreSQL | in view | nowhere ({WORDS}) | nowhere |" in drift


def test_a_value_the_question_itself_declares_is_marked_in_view_and_in_answer(with_control) -> None:
    table, rows, _ = with_control
    full = table.loc["full-history"]
    assert full["current_in_view_passable"] == 1 and full["current_in_answer_passable"] == 1
    assert (full["current_in_view_k"], full["current_in_answer_k"]) == (3, 2)


def test_the_control_is_shown_as_the_control_and_counts_nothing_of_itself(with_control) -> None:
    table, rows, report = with_control
    assert "none (control)" in rows
    assert cell(report, rows, "none (control)", WORDS).startswith("the control (")
    assert table.loc["none", "control"] == 1 and table.loc["full-history", "control"] == 0
    assert pd.isna(table.loc["none", "honoured_asked_in_view_passable"])
    assert pd.isna(table.loc["none", "passed_checks_passable"])
    passed = table.loc["full-history"]
    assert 0 < passed["passed_checks_passable"] < passed["passed_checks_k"] <= passed["passed_checks_n"]
    assert "`none` (the system message and the current turn, nothing kept)" in report


def test_without_the_control_nothing_is_marked_and_the_report_says_why(tmp_path: Path) -> None:
    table, rows, report = run(tmp_path, ["full-history"])
    assert f"Nothing is marked {WORDS}: the control `none` did not run in r" in report
    assert WORDS not in headers(report)
    full = table.loc["full-history"]
    assert pd.isna(full["honoured_asked_in_view_passable"]) and pd.isna(
        full["passed_checks_passable"]
    )  # unknown, not 0
    assert "passable" not in cell(report, rows, "full-history", "honoured (asked, in view)")


def probe_rows(*rows: tuple[str, int, str, bool]) -> pd.DataFrame:
    """probes.csv rows (policy, repetition, subject, passed) of one probe of one chronology."""
    records = [
        {"chronology": "c", "policy": p, "model": "m", "repetition": r, "probe": "p", "check": "stale", "subject": s}
        | {"status": "measured", "in_view": not ok, "in_answer": False, "passed": ok}
        for p, r, s, ok in rows
    ]
    return pd.DataFrame(records).astype({"chronology": "category", "policy": "category", "model": "category"})


def test_a_check_pairs_with_the_controls_same_check_in_the_same_repetition_only() -> None:
    manifest = Manifest.__new__(Manifest)
    object.__setattr__(manifest, "policies", [{"label": "none", "name": "none"}, {"label": "full-history"}])
    probes = probe_rows(
        ("full-history", 1, "db=a", True),  # the control passed the same check: marked
        ("full-history", 2, "db=a", True),  # the control ran no repetition 2: not marked
        ("full-history", 1, "db=b", True),  # the control failed it: not marked
        ("full-history", 1, "db=c", False),  # failed here: nothing to mark
        ("none", 1, "db=a", True),
        ("none", 1, "db=b", False),
        ("none", 1, "db=c", True),
    )
    found = marks(probes, manifest)
    assert found is not None
    assert found["passed"].tolist() == [True, False, False, False, False, False, False]
    assert found["control"].tolist() == [False] * 4 + [True] * 3


@pytest.mark.slow  # three runs and two comparisons
def test_compare_says_how_many_flips_need_no_memory(tmp_path: Path) -> None:
    """last-turns against a window of no turn: the two stale values the window drops flip to passed,
    and the control drops them too; the four losses flip to failed, which the control fails too."""
    a = _run(tmp_path, ["last-turns", "none"], "a")[3]
    b = _run(tmp_path, ["last-turns:turns=0", "none"], "b")[3]
    comparison = compare_runs(a, b)
    assert comparison.passable_flips == (2, 6)
    assert "2 of the 6 flips of policies other than the control `none` passed" in markdown(comparison)
    without = _run(tmp_path, ["last-turns:turns=0"], "c")[3]
    assert compare_runs(a, without).passable_flips is None
    assert "the control `none` did not run in both runs" in markdown(compare_runs(a, without))
