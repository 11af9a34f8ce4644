"""The statistics of a paired comparison: McNemar's exact test, and the pass rates beside it.

Two runs of the same chronologies give each check an outcome in both: a *pair*. Pairs where
both passed or both failed say nothing about a difference; the *discordant* pairs do:
`b` passed in run A and failed in run B, `c` failed in A and passed in B. Under the hypothesis
that the runs do not differ, each discordant pair falls either way with probability 1/2, so `b`
is binomial(b + c, 1/2). The exact two-sided p-value (McNemar's exact test) is

    p = min(1, 2 · Σ_{i=0}^{min(b, c)} C(b + c, i) / 2^(b + c)),

computed here in exact integer arithmetic (`math.comb`), with p = 1 when no pair is
discordant. It states how surprising the imbalance would be if nothing had changed; it names
no winner.

**Repetitions are clustered, not multiplied.** With repetitions, one check of one subject at one
probe (an *item*) is paired once per repetition, but its repetitions are not independent items:
they replay the same conversation. The test therefore counts items, not repetitions: an item
passed in a run when it passed in every one of its paired repetitions (pass^k over those
repetitions), and McNemar's test compares these item outcomes. With one repetition an item is
one pair. Flips per repetition are counted beside it, as counts, outside the test.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction

METHOD = (
    "McNemar's exact test: two-sided binomial test of the discordant items against 1/2 (math.comb, exact); "
    "an item is one check of one subject at one probe, passed in a run when it passed in every paired "
    "repetition (pass^k), so repetitions never count as independent items"
)


def mcnemar_exact(b: int, c: int) -> float:
    """The exact two-sided McNemar p-value of `b` pairs passed→failed and `c` failed→passed."""
    if b < 0 or c < 0:
        raise ValueError(f"counts must not be negative: {b}, {c}")
    n = b + c
    if n == 0:
        return 1.0
    tail = Fraction(sum(math.comb(n, i) for i in range(min(b, c) + 1)), 2**n)
    return float(min(Fraction(1), 2 * tail))


@dataclass(frozen=True)
class Rates:
    """Pass rates of one set of paired checks in one run: pass@1 over every paired repetition
    (`passed` of `pairs`), pass^k over items (`items_passed` of `items`: passed in every repetition)."""

    passed: int
    pairs: int
    items_passed: int
    items: int

    @property
    def pass_at_1(self) -> float | None:
        return self.passed / self.pairs if self.pairs else None

    @property
    def pass_power_k(self) -> float | None:
        return self.items_passed / self.items if self.items else None


@dataclass(frozen=True)
class Paired:
    """A set of paired checks counted both ways: per repetition (`flips`) and per item (the test)."""

    pairs: int  # paired checks × repetitions, outcome known in both runs
    passed_to_failed: int  # of those, passed in A and failed in B
    failed_to_passed: int
    items: int  # paired items (check × subject × probe)
    items_passed_to_failed: int  # items passed in every repetition in A, not in B
    items_failed_to_passed: int
    a: Rates
    b: Rates

    @property
    def p_value(self) -> float:
        return mcnemar_exact(self.items_passed_to_failed, self.items_failed_to_passed)


def paired(items: Iterable[Sequence[tuple[bool, bool]]]) -> Paired:
    """Count items, each the (passed in A, passed in B) of its paired repetitions (none empty)."""
    pairs = pf = fp = count = ipf = ifp = a_pass = b_pass = a_items = b_items = 0
    for reps in items:
        count += 1
        a_all, b_all = all(a for a, _ in reps), all(b for _, b in reps)
        a_items, b_items = a_items + a_all, b_items + b_all
        ipf, ifp = ipf + (a_all and not b_all), ifp + (b_all and not a_all)
        for a, b in reps:
            pairs, a_pass, b_pass = pairs + 1, a_pass + a, b_pass + b
            pf, fp = pf + (a and not b), fp + (b and not a)
    return Paired(
        pairs, pf, fp, count, ipf, ifp, Rates(a_pass, pairs, a_items, count), Rates(b_pass, pairs, b_items, count)
    )
