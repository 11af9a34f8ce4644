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

The plan and its order are harness.results.plan's: a merge, and a report of what an incomplete
run is missing, follow them from the manifest alone.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from harness.base.errors import InputError

__all__ = ["MAX_SHARDS", "Shard", "parse_shard", "slice_of"]

C = TypeVar("C")
P = TypeVar("P")


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
