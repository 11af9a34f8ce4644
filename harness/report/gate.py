"""The CI gate of `harness compare --fail-on`: conditions on the passed→failed direction that,
when met, make the command exit 1 with one line saying why.

- `failed>=N`: N or more paired checks (× repetitions) passed in run A and failed in run B
  (the rows of the flip table in that direction).
- `p<X` (0 < X ≤ 1): for some policy and check kind (a row of the comparison's statistics,
  `all checks` included), the sign test over conversations has a Holm-adjusted p-value below X
  (adjusted for every row the gate reads) and more conversations lost pass share in B than
  gained it (harness.report.mcnemar).

Several conditions may be given; any one met fails the gate. Failed→passed flips never fail it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from harness.base.text import shown
from harness.report.mcnemar import Paired

Row = tuple[str, str]  # (policy pair, check kind or `all checks`)

MAX_FAILED = 10**12  # more flips than any comparison holds; a longer number is refused, not parsed
FORMS = f"failed>=N (N a whole number from 1 to {MAX_FAILED:,}) or p<X (X a number, 0 < X ≤ 1)"
# Digits are bounded in the pattern, so Python never converts thousands of them (it refuses past 4,300).
_FAILED = re.compile(r"failed\s*>=\s*0*(\d{1,13})")
_P = re.compile(r"p\s*<\s*((?:\d{1,40}(?:\.\d{0,40})?|\.\d{1,40})(?:[eE][-+]?\d{1,4})?)")


@dataclass(frozen=True)
class Condition:
    """One `--fail-on` condition: `failed` (a count) or `p` (a threshold)."""

    kind: str
    limit: float

    def __str__(self) -> str:
        return f"failed>={int(self.limit)}" if self.kind == "failed" else f"p<{self.limit:g}"


def parse_condition(text: str) -> Condition:
    """A condition from its text; ValueError naming the accepted forms otherwise."""
    stripped = text.strip()
    if found := _FAILED.fullmatch(stripped):
        count = int(found.group(1))
        if 1 <= count <= MAX_FAILED:
            return Condition("failed", count)
    elif found := _P.fullmatch(stripped):
        limit = float(found.group(1))
        if 0 < limit <= 1:
            return Condition("p", limit)
    raise ValueError(f"{shown(text)} is not a condition; give {FORMS}")


def verdict(
    conditions: list[Condition],
    passed_to_failed: int,
    statistics: Mapping[Row, Paired],
    adjusted: Mapping[Row, float],
) -> str | None:
    """One line saying which conditions are met, or None when none is. `adjusted`: each row's
    Holm-adjusted p-value (harness.report.compare)."""
    met = []
    for condition in conditions:
        if condition.kind == "failed" and passed_to_failed >= condition.limit:
            met.append(f"{passed_to_failed} checks passed in A and failed in B ({condition})")
        if condition.kind == "p":
            worse = [
                f"{policy} · {kind} (adjusted p={p_text(adjusted[(policy, kind)])}, raw p={p_text(counts.p_value)}; "
                f"conversations {counts.conversations_lower} lower in B, {counts.conversations_higher} higher)"
                for (policy, kind), counts in statistics.items()
                if adjusted[(policy, kind)] < condition.limit and counts.worse
            ]
            if worse:
                met.append(
                    f"more conversations lost pass share than gained it at {condition} (Holm-adjusted over "
                    f"{len(statistics)} tests): {', '.join(worse)}"
                )
    return "gate failed: " + "; ".join(met) if met else None


def p_text(p: float) -> str:
    """A p-value in four significant digits (`1`, `0.03125`, `1.526e-05`)."""
    return f"{p:.4g}"
