"""Chat messages as the harness passes them between policies, models and records."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Role = Literal["system", "user", "assistant"]

# Where a message of a request view came from. `harness show` prints it beside each message.
# `facts+current` is a user message with the facts block prepended (bounded-facts, message mode);
# `retrieved` is an earlier history message a policy selected by relevance (retrieval).
Origin = Literal["system", "history", "summary", "facts", "current", "facts+current", "retrieved"]


@dataclass(frozen=True, slots=True)
class Message:
    """One chat message; `turn` and `session` say which chronology turn produced it."""

    role: Role
    content: str
    origin: Origin = "history"
    turn: int | None = None
    session: str | None = None

    def as_openai(self) -> dict[str, str]:
        """The message in the chat-completions wire format (role and content only)."""
        return {"role": self.role, "content": self.content}

    def as_record(self) -> dict[str, object]:
        """The message as written to `calls.jsonl`."""
        return {
            "role": self.role,
            "content": self.content,
            "origin": self.origin,
            "turn": self.turn,
            "session": self.session,
        }


def total_chars(messages: list[Message] | tuple[Message, ...]) -> int:
    """Characters of message contents, the basis of the characters/4 estimate."""
    return sum(len(m.content) for m in messages)
