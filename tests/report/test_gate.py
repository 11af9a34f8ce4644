"""`--fail-on`: the conditions a CI job gates on, parsed strictly and applied to passed→failed only;
`p<X` reads the Holm-adjusted p-values of the sign test over conversations."""

from __future__ import annotations

import pytest

from harness.report.gate import Condition, parse_condition, verdict
from harness.report.mcnemar import holm, paired


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


def conversations(a: bool, b: bool, count: int, checks: int = 1) -> list[list[list[tuple[bool, bool]]]]:
    """`count` conversations of `checks` checks each, every check (a, b) in one repetition."""
    return [[[(a, b)]] * checks] * count


def gate(conditions: list[Condition], passed_to_failed: int, **rows: object) -> str | None:
    """The verdict over rows given as policy=counts (kind `all checks`), adjusted as compare adjusts them."""
    statistics = {(policy, "all checks"): counts for policy, counts in rows.items()}
    adjusted = dict(zip(statistics, holm([s.p_value for s in statistics.values()]), strict=True))
    return verdict(conditions, passed_to_failed, statistics, adjusted)  # type: ignore[arg-type]


def test_failed_counts_the_passed_to_failed_flips() -> None:
    assert gate([Condition("failed", 2)], 1) is None
    line = gate([Condition("failed", 2)], 2)
    assert line == "gate failed: 2 checks passed in A and failed in B (failed>=2)"


def test_p_fails_only_where_more_conversations_lost_pass_share_than_gained_it() -> None:
    worse = paired(conversations(True, False, 7))  # p = 2/128 = 0.015625, all lower in B
    better = paired(conversations(False, True, 7))  # the same p, the other way
    assert gate([Condition("p", 0.05)], 0, better=better) is None
    line = gate([Condition("p", 0.05)], 7, better=better, worse=worse)  # two tests: adjusted 2 · 0.015625
    assert line is not None and "worse · all checks (adjusted p=0.03125, raw p=0.01562;" in line
    assert "conversations 7 lower in B, 0 higher" in line and "Holm-adjusted over 2 tests" in line
    assert "better" not in line
    assert gate([Condition("p", 0.01)], 7, worse=worse) is None


def test_p_counts_conversations_not_the_checks_that_failed_in_them() -> None:
    """Three conversations, each losing 18 checks at once (one missed fact): 54 checks passed→failed,
    which a test over checks would call p = 1e-16; over conversations it is three units, p = 0.25."""
    lost = paired(conversations(True, False, 3, checks=18))
    assert lost.passed_to_failed == 54 and lost.p_value == 0.25
    assert gate([Condition("p", 0.05)], 54, lost=lost) is None


def test_p_gates_on_the_adjusted_p_value_not_the_raw_one() -> None:
    worse = paired(conversations(True, False, 7))  # raw p = 0.015625 < 0.05
    quiet = {f"policy {i}": paired(conversations(True, True, 7)) for i in range(3)}
    assert gate([Condition("p", 0.05)], 7, worse=worse) is not None  # one test: adjusted = raw
    assert gate([Condition("p", 0.05)], 7, worse=worse, **quiet) is None  # four tests: 4 · 0.015625 = 0.0625


def test_several_conditions_met_are_said_on_one_line() -> None:
    worse = paired(conversations(True, False, 7))
    line = gate([Condition("failed", 1), Condition("p", 0.05)], 7, worse=worse)
    assert line is not None and "\n" not in line and "failed>=1" in line and "p<0.05" in line


@pytest.mark.parametrize("text", ["failed>=" + "9" * 5000, "failed>=" + "9" * 14, "p<" + "0" * 5000 + "1", "p<1e999"])
def test_a_huge_number_is_refused_naming_the_forms_and_quoting_little(text: str) -> None:
    with pytest.raises(ValueError, match=r"failed>=N .* or p<X") as refused:
        parse_condition(text)
    assert len(str(refused.value)) < 200
