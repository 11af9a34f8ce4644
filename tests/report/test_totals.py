"""The report's head figures added up block by block are those of the whole run: every figure
is a sum, a count or a set, per column or per run."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.report.comparison import ONLY, READ
from harness.report.totals import RunTotals, call_counts
from harness.results.calls_in_bulk import read_calls
from harness.results.rows import CALL, TURN
from harness.results.tables import read_columns
from tests.conftest import run_through_cli
from tests.paths import SHIPPED

NAMES = ("constraint-eviction", "correct-then-forget", "two-sessions")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    files = [SHIPPED / f"{name}.yaml" for name in NAMES]
    # one policy per kind of call (answer, summarizer, writer): the three kinds a run's calls have
    policies = ("--policy", "full-history", "--policy", "summary", "--policy", "bounded-facts")
    options = ("--model", "reference:lossy", "--repetitions", "2", "--no-charts", *policies)
    return run_through_cli(tmp_path_factory.mktemp("totals"), files, "totals", *options)


def test_totals_added_a_chronology_at_a_time_are_the_totals_of_the_whole_run(run: Path) -> None:
    turns = read_columns(run / "turns.csv", READ["turns"])
    calls = read_calls(run / "calls.jsonl", READ["calls"], drop=CALL.messages, only=ONLY)
    whole, parts = RunTotals(), RunTotals()
    whole.add(turns, calls, call_counts(calls))
    for name in NAMES:
        mine = turns[turns[TURN.chronology] == name].reset_index(drop=True)
        theirs = calls[calls[CALL.chronology] == name].reset_index(drop=True)
        parts.add(mine, theirs, call_counts(theirs))
    assert parts.statuses == whole.statuses and sum(whole.statuses[next(iter(whole.statuses))].values()) == 6
    assert parts.kinds == whole.kinds and parts.cached == whole.cached
    assert parts.roles == whole.roles and parts.prompts == whole.prompts
    assert {kind for _, kind in whole.roles} == {"answer", "summarizer", "writer"}  # every kind was added up
    assert parts.calls == whole.calls and whole.calls is not None and whole.calls.calls == len(calls)
