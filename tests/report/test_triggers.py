"""The report's "Token triggers" section: what counted each policy's token trigger, and on how
many turns it could not count and did not fire; absent without a token trigger, and for older results."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from harness.report.markdown import cell
from harness.results.tables import load_results
from tests.report.test_invariants import run
from tests.report_text import whole_report


def section(report: str) -> str:
    return report.split("### Token triggers", 1)[1].split("###", 1)[0]


def test_each_policy_says_what_counted_its_trigger_and_where_it_could_not_count(tmp_path: Path) -> None:
    policies = ["full-history", "clear-tool-uses", "token-budget:counter=provider", "summary-buffer:counter=estimate"]
    shown = section(whole_report(run(tmp_path, policies), charts=False))  # on the chronology's page
    rows = [line for line in shown.splitlines() if line.startswith("| ") and not line.startswith("| policy")]
    provider = (
        "the provider's reported usage (the session's latest answer call, plus characters/4 of what changed since)"
    )
    assert rows == [
        "| clear-tool-uses | tiktoken (the local tokenizer) | counted on 3 turns |",
        f"| token-budget:counter=provider | {cell(provider)} | "
        "unknown (nothing reported to count from): did not fire on 3 turns |",  # scripted replies: no answer call
        "| summary-buffer:counter=estimate | the characters/4 estimate | counted on 3 turns |",
    ]


def test_without_a_token_trigger_there_is_no_section(tmp_path: Path) -> None:
    assert "Token triggers" not in whole_report(run(tmp_path, ["full-history", "last-turns"]), charts=False)


def test_results_written_before_the_columns_still_report(tmp_path: Path) -> None:
    results = run(tmp_path, ["clear-tool-uses"])
    turns = results.directory / "turns.csv"
    frame = pd.read_csv(turns, dtype=str, keep_default_na=False)
    frame.drop(columns=["trigger_counter", "trigger_tokens", "trigger_status"]).to_csv(turns, index=False)
    report = whole_report(load_results(results.directory), charts=False)
    assert "Token triggers" not in report and "Sizes per turn" in report
