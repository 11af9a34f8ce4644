"""What a batch tells whoever watches it, and what a conversation's calls tell the batch.

The run wing reports through these protocols and never imports a display: the progress
display (`harness.cli.progress`) implements `BatchEvents`; a batch's start order
(`harness.run.dispatch`) listens to `CallEvents`.

**Planned calls.** What a conversation will call is known in part before it runs: its answers
(every user turn with `--live`, else the turns without a scripted reply) and, with `--judge`,
one judge call per prohibition in force and per rubric expectation at each probe (`planned_calls`). A policy's own calls
(summarizer, writer, a plug-in's) are not: they are seen as they start.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from harness.results.rows import CallRecord
from harness.run.conversation import Conversation, planned

if TYPE_CHECKING:
    from harness.models.options import Models
    from harness.run.spec import RunSpec

PLANNED_KINDS = frozenset({"answer", "judge"})  # call kinds counted before a conversation runs


class CallEvents(Protocol):
    """What `harness.run.calls` reports about each model call."""

    def call_started(self, kind: str) -> None: ...

    def call_ended(self, kind: str, record: CallRecord | None) -> None:
        """`record` is None when the call ended without one (an interrupt)."""


def planned_calls(conversation: Conversation, live: bool, judging: bool) -> int:
    """The answer calls of a conversation, and its judge calls when `judging` (a run with a judge),
    from what its chronology's plan records (`Planned`): its turns need not be loaded."""
    found = planned(conversation.chronology)
    answers = found.user_turns if live else found.user_turns - found.scripted
    return answers + (found.judged if judging else 0)


@dataclass
class CallStats:
    """Counts for progress lines: calls made, retries, errors, calls served from the cache."""

    calls: int = 0
    retries: int = 0
    errors: int = 0
    cached: int = 0

    def add(self, record: CallRecord) -> None:
        self.calls += 1
        # A structured-output form the endpoint refused is a negotiation, not a retry.
        self.retries += max(record.attempts - 1 - record.format_refusals, 0)
        self.errors += record.error is not None
        self.cached += record.cached


@dataclass(frozen=True)
class Finished:
    """How a conversation ended, and what its calls cost in attempts."""

    status: str  # complete | stopped | error
    stats: CallStats


class BatchEvents(CallEvents, Protocol):
    """What a batch tells its watcher: what it runs, each call's start and end, each finished
    conversation (in the order they started)."""

    def begin(self, plan: RunSpec, todo: Sequence[Conversation], done: int, models: Mapping[str, Models]) -> None:
        """The batch is about to run `todo` (after `done` finished conversations of a resume)."""

    def conversation_ended(self, done: int, total: int, conversation: Conversation, finished: Finished) -> None: ...
