"""Token figures of two runs by policy and call kind: each figure of its own kind, summed over the
conversations both runs hold, unknown kept unknown, and the ratio B / A."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.report.compare import compare_runs
from harness.report.compare_tokens import Sums, TokenRow
from tests.report.test_compare import run, shipped

FIGURE = "estimate_tokens"


def sums(value: int | None, calls: int = 2) -> Sums:
    return Sums(calls, 0, {FIGURE: value}, {FIGURE: calls if value is not None else 1})


@pytest.mark.parametrize(
    ("a", "b", "ratio"),
    [(sums(100), sums(50), 0.5), (sums(None), sums(50), None), (sums(100), sums(None), None), (sums(0), sums(5), None)],
)
def test_a_ratio_needs_both_figures_known_and_a_nonzero_first(a: Sums, b: Sums, ratio: float | None) -> None:
    assert TokenRow("p", "answer", a, b).ratio(FIGURE) == ratio


def test_a_kind_one_run_never_called_has_no_ratio() -> None:
    assert TokenRow("p", "summarizer", None, sums(10)).ratio(FIGURE) is None


def estimates(directory: Path, policy: str, chronologies: set[str]) -> dict[str, int]:
    """Per call kind, the estimate tokens of a policy's calls in these chronologies, read by hand."""
    found: dict[str, int] = {}
    for line in (directory / "calls.jsonl").read_text(encoding="utf-8").splitlines():
        call = json.loads(line)
        if call["policy"] == policy and call["chronology"] in chronologies:
            found[call["kind"]] = found.get(call["kind"], 0) + call["estimate_tokens"]
    return found


@pytest.mark.slow
def test_only_the_conversations_both_runs_hold_are_summed(tmp_path: Path) -> None:
    a = run(tmp_path, "a", shipped("budget-cut-correction", "two-sessions"), ("summary", "last-turns"))
    b = run(tmp_path, "b", shipped("two-sessions"), ("summary", "last-turns:turns=1"))
    rows = {(r.policy, r.kind): r for r in compare_runs(a, b).tokens}
    assert set(rows) == {
        ("summary", "answer"),
        ("summary", "summarizer"),
        ("last-turns → last-turns:turns=1", "answer"),
    }
    shared = {"two-sessions"}
    for kind in ("answer", "summarizer"):
        row = rows[("summary", kind)]
        assert row.a is not None and row.b is not None
        assert row.a.sums[FIGURE] == estimates(a, "summary", shared)[kind] == row.b.sums[FIGURE]
        assert row.ratio(FIGURE) == 1.0
    window = rows[("last-turns → last-turns:turns=1", "answer")]
    assert window.a is not None and window.b is not None
    assert window.a.sums[FIGURE] == estimates(a, "last-turns", shared)["answer"]
    assert window.b.sums[FIGURE] == estimates(b, "last-turns:turns=1", shared)["answer"]
    assert window.b.sums["reported_prompt_tokens"] is None  # the reference model reports no usage: unknown
