"""The statistics of a paired comparison: an exact sign test whose unit is the conversation, Holm's
correction over the tests a gate reads, and the counts and pass rates beside them.

**The unit is the conversation**, not the check: one fact a writer missed fails ten checks of one
conversation at once, and a test over checks (McNemar's over checks) read such events as
independent and found "p < 0.05" in most pairs of runs of one seeded lossy model with itself. So
each conversation gives its *pass share* in each run; `lower` and `higher` count the conversations
whose share fell or rose, and the exact two-sided sign test (McNemar's exact test with
conversations as pairs, in exact integer arithmetic) gives p; docs/comparing.md, "The
statistics", has the formula and why it is exact. Repetitions move a conversation's share, never
the number of units.

**Several tests, one gate.** A gate that reads many tests (every policy and check kind) finds a small
p-value somewhere by chance; Holm's step-down correction (`holm`) adjusts each p-value for the number
of tests read, controlling the chance of any false alarm at the level asked, whatever the tests'
dependence. A p-value states how surprising an imbalance would be if nothing had changed; it names no
winner.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction

METHOD = (
    "Exact two-sided sign test over conversations (chronology × policy × model): each conversation's pass "
    "share (its paired checks passed, every paired repetition counted) is compared between the runs, and the "
    "conversations whose share is lower in B are tested against those whose share is higher (binomial, 1/2; "
    "math.comb, exact), so the checks of one conversation never count as independent; p-values adjusted by "
    "Holm's step-down correction over every row of this table (the tests `--fail-on p<X` reads)"
)

Pair = tuple[bool, bool]  # (passed in A, passed in B) of one check in one paired repetition
Item = Sequence[Pair]  # one check of one subject at one probe, across its paired repetitions
Conversation = Sequence[Item]  # the items of one conversation


def mcnemar_exact(b: int, c: int) -> float:
    """The exact two-sided p-value of `b` units one way and `c` the other (sign test, McNemar's exact test)."""
    if b < 0 or c < 0:
        raise ValueError(f"counts must not be negative: {b}, {c}")
    n = b + c
    if n == 0:
        return 1.0
    tail = Fraction(sum(math.comb(n, i) for i in range(min(b, c) + 1)), 2**n)
    return float(min(Fraction(1), 2 * tail))


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given: the k-th smallest of m is multiplied by
    m − k + 1, kept at least as large as the one before it, and capped at 1."""
    m = len(p_values)
    adjusted = [1.0] * m
    running = 0.0
    for rank, index in enumerate(sorted(range(m), key=lambda i: p_values[i])):
        running = max(running, min(1.0, (m - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted


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
    """A set of paired checks counted three ways: per repetition (`flips`), per item (pass^k), and per
    conversation (the test)."""

    pairs: int  # paired checks × repetitions, outcome known in both runs
    passed_to_failed: int  # of those, passed in A and failed in B
    failed_to_passed: int
    items: int  # paired items (check × subject × probe)
    items_passed_to_failed: int  # items passed in every repetition in A, not in B
    items_failed_to_passed: int
    conversations: int  # conversations with a paired check (the test's units)
    conversations_lower: int  # pass share lower in B than in A
    conversations_higher: int  # pass share higher in B than in A
    a: Rates
    b: Rates

    @property
    def p_value(self) -> float:
        """The sign test's exact two-sided p-value over conversations (before any correction)."""
        return mcnemar_exact(self.conversations_lower, self.conversations_higher)

    @property
    def worse(self) -> bool:
        """More conversations lost pass share in B than gained it: the direction a gate fails on."""
        return self.conversations_lower > self.conversations_higher


def paired(conversations: Iterable[Conversation]) -> Paired:
    """Count conversations, each its items, each the (passed in A, passed in B) of its paired
    repetitions (none empty)."""
    pairs = pf = fp = count = ipf = ifp = a_pass = b_pass = a_items = b_items = units = lower = higher = 0
    for conversation in conversations:
        units += 1
        own_pairs = own_a = own_b = 0
        for reps in conversation:
            count += 1
            a_all, b_all = all(a for a, _ in reps), all(b for _, b in reps)
            a_items, b_items = a_items + a_all, b_items + b_all
            ipf, ifp = ipf + (a_all and not b_all), ifp + (b_all and not a_all)
            for a, b in reps:
                own_pairs, own_a, own_b = own_pairs + 1, own_a + a, own_b + b
                pf, fp = pf + (a and not b), fp + (b and not a)
        # Both shares have the same denominator (the conversation's pairs): compare the counts.
        lower, higher = lower + (own_b < own_a), higher + (own_b > own_a)
        pairs, a_pass, b_pass = pairs + own_pairs, a_pass + own_a, b_pass + own_b
    return Paired(
        pairs,
        pf,
        fp,
        count,
        ipf,
        ifp,
        units,
        lower,
        higher,
        Rates(a_pass, pairs, a_items, count),
        Rates(b_pass, pairs, b_items, count),
    )
