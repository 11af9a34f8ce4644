"""`--shard K/N`: one of N deterministic slices of a batch, so N machines split it without talking.

The slice is a pure function of the plan: the batch's conversations in plan order and their
lengths (user turns). Every machine given the same chronologies, policies, models and options
computes the same N slices and runs only its own. The slices are balanced by work, not count:
conversations are dealt longest first (plan order among equals), each to the shard with the
fewest turns so far (the lowest-numbered among equals) — the greedy "longest processing time"
rule, within 4/3 of the best possible balance. Shards are numbered from 1, as in `--shard 1/3`
(Playwright, Jest); a 0-based job index (Kubernetes' JOB_COMPLETION_INDEX) needs `+ 1`.

A shard may be empty (more shards than conversations): it then records an empty run, which a
merge accepts, so a job array of any size works.

A plan is built whole, in memory, before anything runs: it holds at most `MAX_CONVERSATIONS`
(chronologies × policies × each model's repetitions, summed over the models), far more than any
real comparison runs. A larger one is refused before it is built (`check_plan_size`), whether
the options ask for it or a manifest claims it.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from harness.base.errors import InputError

__all__ = ["MAX_CONVERSATIONS", "MAX_SHARDS", "Shard", "check_plan_size", "parse_shard", "plan_order", "slice_of"]

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


MAX_SHARDS = 10_000  # a job array larger than this splits nothing further: conversations are the unit
_FORM = re.compile(r"\s*(\d{1,6})\s*/\s*(\d{1,6})\s*\Z")


@dataclass(frozen=True)
class Shard:
    """Shard `index` of `count` (1-based), as given by `--shard index/count`."""

    index: int
    count: int

    @property
    def label(self) -> str:
        return f"{self.index}/{self.count}"

    def as_record(self) -> dict[str, Any]:
        """The manifest's `shard` field of a shard run (a merged run records `merged_from` too)."""
        return {"index": self.index, "count": self.count}

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Shard:
        return cls(int(record["index"]), int(record["count"]))


def parse_shard(text: str, option: str = "--shard") -> Shard:
    """`K/N` with 1 <= K <= N; anything else is an InputError saying what to give."""
    found = _FORM.match(text)
    if not found:
        raise InputError(f"{option} {text}: expected K/N, e.g. --shard 2/3 (shard 2 of 3, numbered from 1)")
    index, count = int(found[1]), int(found[2])
    if not 1 <= count <= MAX_SHARDS:
        raise InputError(f"{option} {text}: the number of shards N must be from 1 to {MAX_SHARDS:,}")
    if index == 0:
        raise InputError(
            f"{option} {text}: shards are numbered from 1 to N; with a 0-based index such as "
            "JOB_COMPLETION_INDEX give $((INDEX + 1))/N"
        )
    if index > count:
        raise InputError(f"{option} {text}: shard {index} of {count} does not exist; K runs from 1 to {count}")
    return Shard(index, count)


T = TypeVar("T")


def slice_of(conversations: Sequence[T], works: Sequence[int], shard: Shard) -> list[T]:
    """The conversations of `shard`, in their given (plan) order; `works[i]` is the work of
    `conversations[i]`. Pure: the same inputs give the same slices on every machine."""
    owner = assign(works, shard.count)
    return [c for c, k in zip(conversations, owner) if k == shard.index]


def assign(works: Sequence[int], count: int) -> list[int]:
    """The shard (1-based) of each item: longest first, each to the least-loaded shard."""
    owner = [0] * len(works)
    loads = [(0, k) for k in range(1, count + 1)]  # (turns so far, shard): a heap, least loaded first
    for i in sorted(range(len(works)), key=lambda i: (-works[i], i)):
        load, k = heapq.heappop(loads)
        owner[i] = k
        heapq.heappush(loads, (load + works[i], k))
    return owner
