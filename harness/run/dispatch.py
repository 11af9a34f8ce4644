"""Which waiting conversation a free slot of a concurrent batch starts next: the one expected to
make the most calls, so that no long conversation starts last and ends the batch late.

A conversation's calls are its planned calls (its answers, and its judge calls in a run with a
judge: `harness.run.events.planned_calls`) times the calls its policy has made per planned call
so far in this run, under the same model. User turns alone do not show a policy's own calls: a
summary or a fact memory adds one after each answer, twice the calls of a window on the same
chronology. A policy not yet seen making a call counts as the costliest seen so far, so that it
starts, and is learned, early; before any call every policy counts one call per planned call,
which orders the conversations by their planned calls.

Rates within `MOVE` of each other count as one (the highest of them): a difference the order
would not move for once learned is not one it acts on. Among equals the order is plan order,
chronology by chronology, so that the conversations of one chronology start close together and
the loader (`harness.run.loaded`, which keeps a few chronologies besides those running) loads it
once per group of policies of about the same rate, not once per policy (benchmarks/README.md,
"Chronology loads": ordered policy by policy, 20 LongMemEval-sized items loaded 264 times at
`--concurrency 4`, where `--concurrency 1` loads them 20 times).

What it buys (benchmarks/batch_latency.py, 500 ms per call, the wall time of the batch, every
default policy; benchmarks/README.md): against an order fixed by the planned calls alone, 2-10%
less at concurrency 64 (the shipped chronologies, 1 and 3 repetitions; memory-drift × 40
repetitions), the same within 2% at 16; against plan order, up to 15% less.

Only the order of starting depends on this: the records are rewritten in plan order at the end,
so the files do not.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, Any

from harness.run.conversation import Conversation
from harness.run.events import PLANNED_KINDS

if TYPE_CHECKING:
    from harness.results.rows import CallRecord
    from harness.run.events import CallEvents

# A policy's rate moves the waiting conversations only when it has moved by more than this
# share since they were last ordered: ordering them again costs a sort of every waiting one.
MOVE = 0.1


class Dispatch:
    """The order in which `todo` starts, learned from the calls as they start. Thread-safe: the
    threads of a batch take from it, and every call's start is told to it (`started`)."""

    def __init__(
        self, todo: Sequence[Any], planned: Sequence[int], labels: Sequence[Hashable], learns: bool = True
    ) -> None:
        """`todo` with the planned calls and the label of each (`of` gives a batch's); `learns`:
        whether the calls' starts reorder what waits."""
        self.todo, self._planned, self._labels = todo, planned, labels
        self._learns = learns
        self._calls: dict[Hashable, list[int]] = {}  # label -> [calls started, planned calls started]
        self._used: dict[Hashable, float] = {}  # label -> its rate when the waiting ones were ordered
        self._order = self._ranked(range(len(todo)))
        self._next = 0  # the position in `_order` of the next conversation to start
        self._lock = threading.Lock()
        self.stale = False  # a rate moved: the waiting conversations are to be ordered again

    @classmethod
    def of(cls, todo: Sequence[Conversation], planned: Sequence[int]) -> Dispatch:
        """A batch's conversations, labelled by policy and model: what their calls per planned call depend on."""
        return cls(todo, planned, [(c.policy.label, c.model) for c in todo])

    @classmethod
    def in_order(cls, todo: Sequence[Any]) -> Dispatch:
        """`todo` started in its own order, whatever the calls: a batch run one conversation at
        a time writes its records in plan order as it goes."""
        return cls(todo, [0] * len(todo), [None] * len(todo), learns=False)

    def take(self) -> int | None:
        """The position in `todo` of the conversation to start now; None when all have started."""
        with self._lock:
            if self.stale:
                self._order[self._next :] = self._ranked(self._order[self._next :])
            if self._next == len(self._order):
                return None
            self._next += 1
            return self._order[self._next - 1]

    def started(self, index: int, kind: str) -> None:
        """A call of kind `kind` of the conversation at `index` in `todo` has started."""
        if not self._learns:
            return
        label = self._labels[index]
        with self._lock:
            counts = self._calls.setdefault(label, [0, 0])
            counts[0] += 1
            counts[1] += kind in PLANNED_KINDS
            used = self._used.get(label)
            if used is None or abs(self._rate(label) - used) > MOVE * used:
                self.stale = True

    def _ranked(self, waiting: Sequence[int]) -> list[int]:
        """`waiting` (positions in `todo`), most expected calls first, in plan order among equals;
        the rates used are remembered, and `stale` cleared."""
        seen = max((self._rate(label) for label in self._calls), default=1.0)
        rates = {label: self._rate(label) if label in self._calls else seen for label in set(self._labels)}
        self._used = {label: rates[label] for label in self._calls}
        self.stale = False
        alike = _alike(rates)
        return sorted(waiting, key=lambda i: (-self._planned[i] * alike[self._labels[i]], i))

    def _rate(self, label: Hashable) -> float:
        calls, planned = self._calls[label]
        return calls / max(planned, 1)

    def events(self, index: int, forward: CallEvents | None) -> CallEvents:
        """The call events of the conversation at `index`: told here, then to `forward` (the progress)."""
        return Observed(self, index, forward)


def _alike(rates: dict[Hashable, float]) -> dict[Hashable, float]:
    """Each label's rate as the highest of those within `MOVE` below it, from the highest down:
    rates that close order their conversations as equals."""
    alike: dict[Hashable, float] = {}
    top = None
    for label, rate in sorted(rates.items(), key=lambda item: -item[1]):
        if top is None or rate < top * (1 - MOVE):
            top = rate
        alike[label] = top
    return alike


class Observed:
    """One conversation's `CallEvents`: each start told to its `Dispatch`, every event to `forward`."""

    def __init__(self, dispatch: Dispatch, index: int, forward: CallEvents | None) -> None:
        self._dispatch, self._index, self._forward = dispatch, index, forward

    def call_started(self, kind: str) -> None:
        self._dispatch.started(self._index, kind)
        if self._forward is not None:
            self._forward.call_started(kind)

    def call_ended(self, kind: str, record: CallRecord | None) -> None:
        if self._forward is not None:
            self._forward.call_ended(kind, record)
