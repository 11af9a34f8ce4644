"""The report's "Invariants broken" section: each policy that split a tool group (or broke
another rule of harness.run.groups), by turn; absent where none did, and for older results."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from harness.models.reference import ReferenceModel
from harness.report.document import build_report
from harness.report.markdown import cell
from harness.results.tables import Results, load_results
from harness.run.batch import Runtime, run_batch
from harness.run.spec import RunSpec
from tests.run.test_groups import AGENT, REGISTRY


def run(directory: Path, policies: list[str]) -> Results:
    plan = RunSpec([AGENT], [REGISTRY.parse(p) for p in policies], ["reference"])
    run_batch(plan, directory, "t", Runtime(REGISTRY, factory=lambda _name, _stack: ReferenceModel()))
    return load_results(directory)


def test_a_policy_that_splits_a_group_is_listed_by_turn(tmp_path: Path) -> None:
    report = build_report(run(tmp_path, ["full-history", "call-dropper"]), charts=False)
    section = report.split("### Invariants broken", 1)[1].split("###", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| call-dropper")]
    assert rows == [
        f"| call-dropper | {turn} | {cell('view: result call_1 (turn 1) without its call before it')} | 1 of 1 |"
        for turn in (1, 2, 3)
    ]
    assert "full-history" not in section


def test_without_a_violation_there_is_no_section(tmp_path: Path) -> None:
    assert "Invariants broken" not in build_report(run(tmp_path, ["full-history"]), charts=False)


def test_results_written_before_the_column_still_report(tmp_path: Path) -> None:
    results = run(tmp_path, ["call-dropper"])
    turns = results.directory / "turns.csv"
    pd.read_csv(turns, dtype=str, keep_default_na=False).drop(columns="group_violations").to_csv(turns, index=False)
    report = build_report(load_results(results.directory), charts=False)
    assert "Invariants broken" not in report and "Prohibition survival" in report
