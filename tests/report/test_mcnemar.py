"""McNemar's exact test and the pass rates beside it, against values worked out by hand."""

from __future__ import annotations

import pytest
from scipy.stats import binomtest

from harness.report.mcnemar import mcnemar_exact, paired


@pytest.mark.parametrize(
    ("b", "c", "p"),
    [
        (0, 0, 1.0),  # no discordant pair: nothing to test
        (1, 0, 1.0),  # 2 · C(1,0)/2 = 1
        (3, 0, 0.25),  # 2 · 1/8
        (5, 0, 0.0625),  # 2 · 1/32
        (6, 0, 0.03125),  # 2 · 1/64: the first count of one direction alone below 0.05
        (0, 6, 0.03125),  # two-sided: the direction does not change p
        (1, 4, 0.375),  # 2 · (1 + 5)/32
        (2, 2, 1.0),  # 2 · (1 + 4 + 6)/16 > 1: capped
        (10, 2, 0.03857421875),  # 2 · (1 + 12 + 66)/4096
    ],
)
def test_the_exact_p_value_is_twice_the_smaller_binomial_tail(b: int, c: int, p: float) -> None:
    assert mcnemar_exact(b, c) == p


@pytest.mark.parametrize(("b", "c"), [(0, 7), (4, 9), (13, 13), (40, 21), (150, 120)])
def test_it_agrees_with_scipys_binomial_test(b: int, c: int) -> None:
    assert mcnemar_exact(b, c) == pytest.approx(binomtest(b, b + c, 0.5).pvalue, rel=1e-12)


def test_a_negative_count_is_refused() -> None:
    with pytest.raises(ValueError, match="negative"):
        mcnemar_exact(-1, 2)


def test_without_repetitions_an_item_is_one_pair() -> None:
    counts = paired([[(True, False)], [(True, False)], [(False, True)], [(True, True)]])
    assert (counts.pairs, counts.passed_to_failed, counts.failed_to_passed) == (4, 2, 1)
    assert (counts.items, counts.items_passed_to_failed, counts.items_failed_to_passed) == (4, 2, 1)
    assert counts.p_value == 1.0  # 2 · (1 + 3)/8
    assert (counts.a.pass_at_1, counts.b.pass_at_1) == (0.75, 0.5)


def test_repetitions_are_clustered_by_item_not_counted_as_items() -> None:
    """Three repetitions of one check flip passed→failed: three pairs flip, but one item; the
    test sees one discordant item (p = 1), not three (p = 0.25)."""
    counts = paired([[(True, False), (True, False), (True, False)]])
    assert (counts.pairs, counts.passed_to_failed) == (3, 3)
    assert (counts.items, counts.items_passed_to_failed) == (1, 1)
    assert counts.p_value == 1.0


def test_pass_power_k_passes_an_item_only_when_every_repetition_passed() -> None:
    counts = paired([[(True, True), (True, False)], [(True, True), (True, True)]])
    assert (counts.a.passed, counts.a.pairs, counts.a.items_passed, counts.a.items) == (4, 4, 2, 2)
    assert (counts.b.passed, counts.b.pairs, counts.b.items_passed, counts.b.items) == (3, 4, 1, 2)
    assert (counts.b.pass_at_1, counts.b.pass_power_k) == (0.75, 0.5)
    assert counts.items_passed_to_failed == 1  # passed every repetition in A, not in B


def test_no_pairs_give_no_rate() -> None:
    counts = paired([])
    assert (counts.a.pass_at_1, counts.a.pass_power_k, counts.p_value) == (None, None, 1.0)
