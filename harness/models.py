"""The model seam: what the runner asks of any model, and what comes back.

A model answers three kinds of call: the answer to a user turn, the summarizer of the
`summary` policy, and the fact writer of `bounded-facts`. Every call carries the exact
messages sent (recorded in `calls.jsonl`); the structured fields beside them exist so a
deterministic model such as `reference` need not parse its own prompt.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from harness.chronology import UserTurn
from harness.messages import Message
from harness.usage import Usage  # with the rule for a valid count; part of this seam

__all__ = ["CallKind", "CallRequest", "Completion", "Model", "Usage"]

CallKind = Literal["answer", "summarizer", "writer", "judge"]


@dataclass(frozen=True)
class CallRequest:
    """One model call: the messages sent, and the structured inputs they were built from."""

    kind: CallKind
    messages: tuple[Message, ...]
    turn: UserTurn  # the chronology turn being replayed (carries scripted summary / writer)
    previous_summary: str | None = None  # summarizer: the running summary before this exchange
    exchange: tuple[str, str] | None = None  # summarizer: (user text, answer) of the exchange
    user_text: str | None = None  # writer: the user's original text, nothing else
    max_summary_chars: int | None = None  # summarizer: the cap the policy will enforce


@dataclass(frozen=True)
class Completion:
    """A model's reply; `usage` is None when the provider reported none (never 0)."""

    text: str
    usage: Usage | None = None
    attempts: int = 1  # requests made for this call, retries included
    scripted: bool = False  # the chronology's scripted output (summary:, writer:), not a model's
    notes: tuple[str, ...] = ()  # what the figures do not show, e.g. a Retry-After wait that was capped


class Model(Protocol):
    """Anything that can answer a `CallRequest`; raise `ModelError` when a call fails."""

    name: str

    def complete(self, request: CallRequest) -> Completion: ...
