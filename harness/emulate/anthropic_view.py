"""What the emulated model reads of a request: its window, its messages, and their token count.

- **The window** (`window`): everything before the latest compaction block that holds a summary
  is ignored, as the API ignores it ("the API automatically drops all message blocks prior to the
  compaction block", Compaction, https://platform.claude.com/docs/en/build-with-claude/compaction);
  a compaction block whose `content` is null is a no-op (`BetaCompactionBlockParam`: "the server
  treats these as no-ops"). A `system` message with `clear_at: "next_user_message"` stops being
  shown once a later user message exists (`BetaSystemMessageParam.clear_at`).
- **The messages** (`as_messages`): the window as the harness's `Message`s, the shape every
  offline model and every check reads: the top-level `system` and each `system` message as a
  system message; a user message's tool results as `tool` messages (before its text, as the API
  orders them), then its text; an assistant message's thinking and text as its content (thinking
  first) and its tool uses as tool calls; a compaction block as an assistant message of origin
  `summary`. A window with no user message after a summary (a paused compaction sent back last)
  continues the paused turn: the user message it was answering is added (`continued`).
- **The count** (`input_tokens`): the characters/4 estimate of those messages' text (a tool call
  counted as `name(arguments)`) plus the JSON of the tool definitions. It is neither Claude's
  tokenizer nor tiktoken: every reply says so in the `x-harness-token-counter` header
  (`TOKEN_COUNTER`), and the triggers compare the same estimate.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from harness.base.messages import Message, ToolCall, estimate_tokens
from harness.chronology import UserTurn
from harness.emulate.anthropic_wire import ApiMessage, Compaction, Text, Thinking, ToolResult, ToolUse
from harness.models.anthropic_params import as_params  # noqa: F401 - the emulator's inverse of as_messages, one home

TOKEN_COUNTER = "characters/4 estimate"  # the `x-harness-token-counter` header of every reply
CHARS_PER_TOKEN = 4


def window(messages: Sequence[ApiMessage]) -> tuple[ApiMessage, ...]:
    """The messages the model is shown: from the latest compaction block with a summary on (the
    block's own message kept from the block), less the system messages cleared at a later user message."""
    start = 0
    for index, message in enumerate(messages):
        if any(isinstance(b, Compaction) and b.content is not None for b in message.blocks):
            start = index
    shown = list(messages[start:])
    if shown:
        first = shown[0]
        at = max(
            (i for i, b in enumerate(first.blocks) if isinstance(b, Compaction) and b.content is not None), default=0
        )
        shown[0] = ApiMessage(first.role, first.blocks[at:], first.clear_at)
    return tuple(m for i, m in enumerate(shown) if not _cleared_system(m, shown[i + 1 :]))


def _cleared_system(message: ApiMessage, after: Sequence[ApiMessage]) -> bool:
    return (
        message.role == "system"
        and message.clear_at == "next_user_message"
        and any(m.role == "user" and any(isinstance(b, Text) for b in m.blocks) for m in after)
    )


def as_messages(system: str | None, messages: Sequence[ApiMessage]) -> list[Message]:
    """The window as harness messages (see the module docstring for the mapping)."""
    out = [Message("system", system, origin="system")] if system else []
    for message in messages:
        out.extend(_converted(message))
    return out


def _converted(message: ApiMessage) -> list[Message]:
    texts = [b.text for b in message.blocks if isinstance(b, Text)]
    if message.role == "system":
        return [Message("system", "\n".join(texts), origin="system")]
    if message.role == "user":
        results = [
            Message("tool", b.content, tool_call_id=b.tool_use_id) for b in message.blocks if isinstance(b, ToolResult)
        ]
        return results + ([Message("user", "\n".join(texts))] if texts else [])
    out: list[Message] = []
    said: list[str] = []
    calls: list[ToolCall] = []
    for block in message.blocks:
        if isinstance(block, Compaction) and block.content is not None:
            out.append(Message("assistant", block.content, origin="summary"))
        elif isinstance(block, Thinking):
            said.append(block.thinking)
        elif isinstance(block, Text):
            said.append(block.text)
        elif isinstance(block, ToolUse):
            calls.append(ToolCall(block.id, block.name, json.dumps(block.input, ensure_ascii=False)))
    if said or calls:
        out.append(Message("assistant", "\n".join(said), tool_calls=tuple(calls)))
    return out


def continued(view: list[Message], messages: Sequence[ApiMessage]) -> list[Message]:
    """The view, and the question it answers when it holds none: a request that sends a paused
    compaction's block back last continues the paused turn, so the model reads the summary and
    the user message the paused request was answering (the last before the block)."""
    if any(m.role == "user" for m in view) or not any(m.origin == "summary" for m in view):
        return view
    asked = [m for m in as_messages(None, messages) if m.role == "user"]
    return [*view, *asked[-1:]]


def input_tokens(messages: Sequence[Message], tools: Sequence[Mapping[str, object]] = ()) -> int:
    """The characters/4 estimate (rounded up) of `messages`' text and the tool definitions' JSON."""
    chars = sum(len(m.text) for m in messages) + sum(len(json.dumps(t, ensure_ascii=False)) for t in tools)
    return estimate(chars)


def estimate(chars: int) -> int:
    """Characters/4, rounded up: the emulator's one token figure (`TOKEN_COUNTER`), by the harness's
    one rule (`harness.base.messages.estimate_tokens`)."""
    return estimate_tokens(chars)


def emulated_turn(user: str = "") -> UserTurn:
    """The turn an offline model is called at: the emulator sees one request, not a chronology
    (so no scripted output, and the default key set)."""
    return UserTurn(number=1, line=0, user=user, session="emulated")
