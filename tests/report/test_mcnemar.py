"""The exact sign test over conversations, Holm's correction and the pass rates beside them, against
values worked out by hand."""

from __future__ import annotations

import random

import pytest
from scipy.stats import binom, binomtest

from harness.report.mcnemar import holm, mcnemar_exact, paired


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


def one_check_each(*pairs: tuple[bool, bool]) -> list[list[list[tuple[bool, bool]]]]:
    """Conversations of one check in one repetition each."""
    return [[[pair]] for pair in pairs]


def test_without_repetitions_an_item_is_one_pair_and_a_conversation_of_one_check_one_unit() -> None:
    counts = paired(one_check_each((True, False), (True, False), (False, True), (True, True)))
    assert (counts.pairs, counts.passed_to_failed, counts.failed_to_passed) == (4, 2, 1)
    assert (counts.items, counts.items_passed_to_failed, counts.items_failed_to_passed) == (4, 2, 1)
    assert (counts.conversations, counts.conversations_lower, counts.conversations_higher) == (4, 2, 1)
    assert counts.p_value == 1.0  # 2 · (1 + 3)/8
    assert (counts.a.pass_at_1, counts.b.pass_at_1) == (0.75, 0.5)


def test_the_checks_of_one_conversation_are_one_unit() -> None:
    """Ten checks of one conversation fail together: ten flips, one unit (p = 1), not ten (p = 0.002)."""
    counts = paired([[[(True, False)]] * 10])
    assert (counts.passed_to_failed, counts.items_passed_to_failed) == (10, 10)
    assert (counts.conversations, counts.conversations_lower) == (1, 1)
    assert counts.p_value == 1.0


def test_a_conversation_counts_by_its_pass_share_whichever_checks_moved() -> None:
    """Two checks lost and one gained: its share fell (3/4 → 2/4), one unit lower in B; a
    conversation with one lost and one gained is the same in both runs and says nothing."""
    fell = [[(True, False)], [(True, False)], [(False, True)], [(True, True)]]
    even = [[(True, False)], [(False, True)]]
    counts = paired([fell, even])
    assert (counts.conversations, counts.conversations_lower, counts.conversations_higher) == (2, 1, 0)


def test_repetitions_move_a_conversations_share_never_the_number_of_units() -> None:
    """Three repetitions of one check flip passed→failed: three pairs flip, but one item and one
    conversation; the test sees one unit (p = 1), not three (p = 0.25)."""
    counts = paired([[[(True, False), (True, False), (True, False)]]])
    assert (counts.pairs, counts.passed_to_failed) == (3, 3)
    assert (counts.items, counts.items_passed_to_failed, counts.conversations) == (1, 1, 1)
    assert counts.p_value == 1.0


def test_pass_power_k_passes_an_item_only_when_every_repetition_passed() -> None:
    counts = paired([[[(True, True), (True, False)], [(True, True), (True, True)]]])
    assert (counts.a.passed, counts.a.pairs, counts.a.items_passed, counts.a.items) == (4, 4, 2, 2)
    assert (counts.b.passed, counts.b.pairs, counts.b.items_passed, counts.b.items) == (3, 4, 1, 2)
    assert (counts.b.pass_at_1, counts.b.pass_power_k) == (0.75, 0.5)
    assert counts.items_passed_to_failed == 1  # passed every repetition in A, not in B


def test_no_pairs_give_no_rate() -> None:
    counts = paired([])
    assert (counts.a.pass_at_1, counts.a.pass_power_k, counts.p_value) == (None, None, 1.0)


@pytest.mark.parametrize(
    ("raw", "adjusted"),
    [
        ([], []),
        ([0.2], [0.2]),
        ([0.01, 0.04, 0.03], [0.03, 0.06, 0.06]),  # 3 · 0.01; 2 · 0.03; max(1 · 0.04, 0.06)
        ([0.5, 0.001, 0.3, 0.01], [0.6, 0.004, 0.6, 0.03]),  # 4 · 0.001; 3 · 0.01; 2 · 0.3; max(0.5, 0.6)
        ([0.6, 0.9], [1.0, 1.0]),  # capped at 1
    ],
)
def test_holm_multiplies_the_kth_smallest_by_m_minus_k_plus_1_and_keeps_the_order(
    raw: list[float], adjusted: list[float]
) -> None:
    assert holm(raw) == pytest.approx(adjusted)


def clustered_aa(rng: random.Random, units: int = 15, checks: int = 18) -> list[list[list[tuple[bool, bool]]]]:
    """Two runs of the same conversations that do not differ: in each run, each conversation
    independently misses one fact with probability 0.3, failing 8 to 18 of its checks at once (as a
    fact writer's miss does); its other checks pass with probability 0.9 each."""

    def run() -> list[list[bool]]:
        outcomes = []
        for _ in range(units):
            lost = rng.randint(8, checks) if rng.random() < 0.3 else 0
            outcomes.append([i >= lost and rng.random() < 0.9 for i in range(checks)])
        return outcomes

    a, b = run(), run()
    return [[[(x, y)] for x, y in zip(ca, cb, strict=True)] for ca, cb in zip(a, b, strict=True)]


def test_on_clustered_data_that_does_not_differ_the_test_alarms_at_its_nominal_rate() -> None:
    """300 synthetic A/A comparisons at p < 0.05: a test over checks alarms in most of them, the test
    over conversations in at most 5% plus slack: the 99% upper binomial bound of 300 trials at 5%
    (binom.ppf(0.99, 300, 0.05) = 25, 8.3%)."""
    rng = random.Random(20261207)
    trials = 300
    alarms_checks = alarms_conversations = 0
    for _ in range(trials):
        counts = paired(clustered_aa(rng))
        alarms_checks += mcnemar_exact(counts.passed_to_failed, counts.failed_to_passed) < 0.05
        alarms_conversations += counts.p_value < 0.05
    bound = int(binom.ppf(0.99, trials, 0.05))
    assert alarms_conversations <= bound
    assert alarms_checks > trials // 4  # what the unit of the test corrects: checks fail together
