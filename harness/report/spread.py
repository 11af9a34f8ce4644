"""Counts over repetitions, with their spread: 95% Wilson intervals, pass^n next to pass@1, and
how much a conversation's score varies from one repetition to the next.

The interval is scipy's (`scipy.stats.binomtest(k, n).proportion_ci(method="wilson")`) and the
percentiles numpy's: no hand-written formula. Nothing here ranks: an interval is a range, not a
verdict, and overlapping intervals say the repetitions could not tell the policies apart.

- **pass@1** over a set of checks is the share that passed (k/n over every repetition).
- **pass^n** counts a probe's check as passed only if it passed in every one of its n
  repetitions: the share of such checks.
- **Score per repetition** is the share of a conversation's checks that passed in that
  repetition; its 90th percentile is the **aptitude** and the 90th minus the 10th the
  **unreliability** (Laban et al., "LLMs Get Lost in Multi-Turn Conversation", 2025).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

LIBRARY = "scipy.stats.binomtest(...).proportion_ci(method='wilson') for intervals, numpy.percentile for spread"


@cache
def wilson(k: int, n: int) -> tuple[float, float]:
    """The 95% Wilson score interval of k successes out of n (n > 0); each (k, n) computed once:
    a large run asks for the same few thousand pairs many times."""
    from scipy.stats import binomtest  # imported where used: scipy is slow to import

    interval = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    return float(interval.low), float(interval.high)


def interval_text(k: int, n: int) -> str:
    """`[23–88%]`: the interval in whole percents."""
    low, high = wilson(k, n)
    return f"[{round(low * 100)}–{round(high * 100)}%]"


def percentiles(scores: Sequence[float]) -> tuple[float, float]:
    """(10th, 90th) percentile of per-repetition scores (numpy's linear interpolation)."""
    import numpy

    return float(numpy.percentile(scores, 10)), float(numpy.percentile(scores, 90))
