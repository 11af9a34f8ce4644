"""Chat messages as the harness passes them between policies, models and records."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

# `tool`: a tool's result, answering one call of the assistant message before it (`tool_call_id`).
Role = Literal["system", "user", "assistant", "tool"]

# Where a message of a request view came from. `harness show` prints it beside each message.
# `facts+current` is a user message with the facts block prepended (bounded-facts, message mode);
# `retrieved` is an earlier history message a policy selected by relevance (retrieval).
# A tool step of the current turn (its calls and results) enters the view as `current`, and so
# does a system message the turn adds (role `system`). `pinned` is a verbatim copy of a statement
# the chronology pins, which a policy run with `pin=true` sends in every later view. `opaque` is
# content the harness may not read: a provider's encrypted compaction item (OpenAI's), which the
# checks never match, so "in view" is unknown for what no other message of the view states.
Origin = Literal["system", "history", "summary", "facts", "current", "facts+current", "retrieved", "pinned", "opaque"]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call of an assistant message: its id, the tool's name, its arguments as JSON text."""

    id: str
    name: str
    arguments: str

    def as_openai(self) -> dict[str, object]:
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}

    def as_record(self) -> dict[str, str]:
        return {"id": self.id, "name": self.name, "arguments": self.arguments}


@dataclass(frozen=True, slots=True)
class Message:
    """One chat message; `turn` and `session` say which chronology turn produced it.

    An assistant message may carry `tool_calls` (its content is then often empty); a `tool`
    message answers the call whose id is its `tool_call_id`.
    """

    role: Role
    content: str
    origin: Origin = "history"
    turn: int | None = None
    session: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None

    @property
    def text(self) -> str:
        """What a reader of text reads, and what the character and token figures count: the
        content, then each tool call as `name(arguments)` on a line of its own. The calls' ids
        and the wire format's framing around them are not counted."""
        if not self.tool_calls:
            return self.content
        calls = "\n".join(f"{call.name}({call.arguments})" for call in self.tool_calls)
        return f"{self.content}\n{calls}" if self.content else calls

    def as_openai(self) -> dict[str, object]:
        """The message in the chat-completions wire format: role and content; an assistant's
        `tool_calls` (`type: function`, content null when empty), a tool message's `tool_call_id`."""
        wire: dict[str, object] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            wire["content"] = self.content or None
            wire["tool_calls"] = [call.as_openai() for call in self.tool_calls]
        if self.tool_call_id is not None:
            wire["tool_call_id"] = self.tool_call_id
        return wire

    def as_record(self) -> dict[str, object]:
        """The message as written to `calls.jsonl` and `messages.jsonl`; `tool_calls` and
        `tool_call_id` only when the message has them."""
        record: dict[str, object] = {
            "role": self.role,
            "content": self.content,
            "origin": self.origin,
            "turn": self.turn,
            "session": self.session,
        }
        if self.tool_calls:
            record["tool_calls"] = [call.as_record() for call in self.tool_calls]
        if self.tool_call_id is not None:
            record["tool_call_id"] = self.tool_call_id
        return record

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Message:
        """A message read back from its record (`as_record`), its tool calls and call id included."""
        calls = tuple(ToolCall(c["id"], c["name"], c["arguments"]) for c in record.get("tool_calls") or ())
        return cls(
            record["role"],
            record["content"],
            record.get("origin") or "history",
            record.get("turn"),
            record.get("session"),
            calls,
            record.get("tool_call_id"),
        )


def total_chars(messages: list[Message] | tuple[Message, ...]) -> int:
    """Characters of the messages' text (`Message.text`: contents, and each tool call's name
    and arguments), the basis of the characters/4 estimate."""
    return sum(len(m.text) for m in messages)


def estimate_tokens(chars: int) -> int:
    """The characters/4 estimate, rounded up. It is neither a tokenizer count nor billed tokens."""
    return math.ceil(chars / 4)
