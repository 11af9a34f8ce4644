"""`--fail-on`: the conditions a CI job gates on, parsed strictly and applied to passed→failed only."""

from __future__ import annotations

import pytest

from harness.report.gate import Condition, parse_condition, verdict
from harness.report.mcnemar import paired


@pytest.mark.parametrize(
    ("text", "kind", "limit"),
    [
        ("failed>=1", "failed", 1),
        ("failed >= 12", "failed", 12),
        ("p<0.05", "p", 0.05),
        (" p < .01 ", "p", 0.01),
        ("p<1", "p", 1),
    ],
)
def test_the_two_forms_parse(text: str, kind: str, limit: float) -> None:
    assert parse_condition(text) == Condition(kind, limit)


@pytest.mark.parametrize(
    "text", ["failed>0", "failed>=0", "failed>=x", "p<0", "p<1.5", "p<=0.05", "passed>=1", "", "p<0.05;"]
)
def test_anything_else_is_refused_naming_the_forms(text: str) -> None:
    with pytest.raises(ValueError, match=r"failed>=N .* or p<X"):
        parse_condition(text)


def test_failed_counts_the_passed_to_failed_flips() -> None:
    assert verdict([Condition("failed", 2)], 1, {}) is None
    line = verdict([Condition("failed", 2)], 2, {})
    assert line == "gate failed: 2 checks passed in A and failed in B (failed>=2)"


def test_p_fails_only_where_passed_to_failed_outnumbers_the_other_direction() -> None:
    worse = paired([[(True, False)]] * 6)  # p = 0.03125, all passed→failed
    better = paired([[(False, True)]] * 6)  # the same p, the other way
    assert verdict([Condition("p", 0.05)], 0, {"better": better}) is None
    line = verdict([Condition("p", 0.05)], 6, {"better": better, "worse": worse})
    assert line is not None and "worse (p=0.03125, items 6 passed→failed, 0 failed→passed)" in line
    assert "better" not in line
    assert verdict([Condition("p", 0.01)], 6, {"worse": worse}) is None


def test_several_conditions_met_are_said_on_one_line() -> None:
    worse = paired([[(True, False)]] * 6)
    line = verdict([Condition("failed", 1), Condition("p", 0.05)], 6, {"worse": worse})
    assert line is not None and "\n" not in line and "failed>=1" in line and "p<0.05" in line
