"""A batch's plan: its conversations in plan order, the one definition of that order, which a
run (`harness.run.spec.RunSpec.conversations`), a merge of its shards and a report of what an
incomplete run is missing (harness.report.completeness) all follow, the last two from the
manifest alone.

A plan is built whole, in memory, before anything runs: it holds at most `MAX_CONVERSATIONS`
(chronologies × policies × each model's repetitions, summed over the models), far more than any
real comparison runs. A larger one is refused before it is built (`check_plan_size`), whether
the options ask for it or a manifest claims it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from harness.base.errors import InputError

__all__ = ["MAX_CONVERSATIONS", "check_plan_size", "plan_order", "plan_size"]

C = TypeVar("C")
P = TypeVar("P")

MAX_CONVERSATIONS = 1_000_000  # in one plan: 50 chronologies × 10 policies × 4 models × 500 repetitions


def plan_size(chronologies: int, policies: int, repetitions: Sequence[int]) -> int:
    """The conversations of a plan: chronologies × policies × the repetitions of each model, summed."""
    return chronologies * policies * sum(repetitions)


def check_plan_size(size: int, what: str) -> None:
    """Raise InputError when a plan of `size` conversations (`what` says whose) is past the bound."""
    if size > MAX_CONVERSATIONS:
        raise InputError(
            f"{what} makes {size:,} conversations; a run holds at most {MAX_CONVERSATIONS:,} "
            "(its plan is built whole before anything runs): ask for fewer, or split the comparison into several runs"
        )


def plan_order(
    chronologies: Sequence[C], models: Sequence[str], repetitions_of: Callable[[str], int], policies: Sequence[P]
) -> list[tuple[C, P, str, int]]:
    """A batch's conversations in plan order: chronology, model, repetition, then policies as
    declared. The one definition of that order: a run (`RunSpec.conversations`) and a merge of
    its shards (from the manifest) both follow it. A plan past `MAX_CONVERSATIONS` is refused
    before it is built."""
    size = plan_size(len(chronologies), len(policies), [repetitions_of(m) for m in models])
    check_plan_size(size, "the plan")
    return [
        (c, p, m, r) for c in chronologies for m in models for r in range(1, repetitions_of(m) + 1) for p in policies
    ]
