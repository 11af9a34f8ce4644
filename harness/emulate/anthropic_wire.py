"""An Anthropic Messages API request read into typed records, validated as the API validates it.

The one reader of a request body: `read_request` turns the JSON of `POST /v1/messages` (and of
`POST /v1/messages/count_tokens`) into a `MessagesRequest`, or raises `ApiError` carrying the
status and the error in Anthropic's shape (`{"type": "error", "error": {"type": ..., "message":
...}}`). Shapes follow the official SDK's types (`anthropic.types.beta`, SDK 2.10.0):
`BetaMessageParam` (user, assistant and `system` messages), `BetaTextBlockParam`,
`BetaToolUseBlockParam`, `BetaToolResultBlockParam`, `BetaThinkingBlockParam`,
`BetaCompactionBlockParam`. A block type the emulator does not answer (images, documents, server
tools...) is refused with a 400 that says so, rather than silently ignored.

The context-management parameters (`context_management`, `compaction`) are read into their own
records in `harness.emulate.anthropic_edits`; this module checks the headers they need.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

# The `anthropic-version`s the emulator speaks: the API's first, and the one SDK 2.10.0 sends
# (`anthropic._constants.ANTHROPIC_API_VERSION`); `headers_for` sends the SDK's.
API_VERSIONS = ("2023-06-01", "2026-10-21")
API_VERSION = API_VERSIONS[-1]
MAX_MESSAGES = 100_000  # "There is a limit of 100,000 messages in a single request." (SDK docstring)


class ApiError(Exception):
    """An error the emulator answers with: an HTTP status and Anthropic's error `type`."""

    def __init__(self, status: int, kind: str, message: str, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.kind, self.message = status, kind, message
        self.headers = dict(headers or {})

    def body(self) -> dict[str, Any]:
        """The error as the API writes it (`anthropic.types.ErrorResponse`)."""
        return {"type": "error", "error": {"type": self.kind, "message": self.message}}


def invalid(message: str) -> ApiError:
    """A 400 `invalid_request_error`, the API's answer to a request it will not run."""
    return ApiError(400, "invalid_request_error", message)


@dataclass(frozen=True)
class Text:
    text: str
    type: Literal["text"] = "text"


@dataclass(frozen=True)
class ToolUse:
    id: str
    name: str
    input: Mapping[str, Any]
    type: Literal["tool_use"] = "tool_use"


@dataclass(frozen=True)
class ToolResult:
    tool_use_id: str
    content: str  # its text blocks joined by a line break (a string content as given)
    is_error: bool = False
    type: Literal["tool_result"] = "tool_result"


@dataclass(frozen=True)
class Thinking:
    thinking: str
    signature: str
    type: Literal["thinking"] = "thinking"


@dataclass(frozen=True)
class Compaction:
    """A compaction block sent back: its summary (None: a failed compaction, a no-op) and signature."""

    content: str | None
    signature: str | None = None
    type: Literal["compaction"] = "compaction"


Block = Text | ToolUse | ToolResult | Thinking | Compaction
Role = Literal["user", "assistant", "system"]


@dataclass(frozen=True)
class ApiMessage:
    """One entry of `messages`; `clear_at` only on a `system` message (`BetaSystemMessageParam`)."""

    role: Role
    blocks: tuple[Block, ...]
    clear_at: Literal["next_user_message", "never"] = "never"


@dataclass(frozen=True)
class MessagesRequest:
    """A validated request: what the emulator answers from, the parameters it reads kept typed."""

    model: str
    max_tokens: int
    system: str | None
    messages: tuple[ApiMessage, ...]
    betas: frozenset[str]
    stream: bool = False
    tools: tuple[Mapping[str, Any], ...] = ()
    context_management: Mapping[str, Any] | None = None
    compaction: Mapping[str, Any] | None = None
    thinking: Mapping[str, Any] | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False)


def read_json(body: bytes) -> dict[str, Any]:
    """The body as a JSON object, else a 400 saying what is wrong with it."""
    try:
        data = json.loads(body or b"null")
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise invalid(f"the request body is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise invalid("the request body must be a JSON object")
    return data


def check_version(headers: Mapping[str, str]) -> None:
    """The `anthropic-version` header is required and must name a version the API speaks."""
    version = headers.get("anthropic-version")
    if not version:
        raise invalid("anthropic-version: header is required")
    if version not in API_VERSIONS:
        raise invalid(f"anthropic-version: {version!r} is not a valid version; use one of {', '.join(API_VERSIONS)}")


def read_request(data: Mapping[str, Any], headers: Mapping[str, str], counting: bool = False) -> MessagesRequest:
    """`data` (a request body) as a `MessagesRequest`; `counting`: a count_tokens request, which
    takes no `max_tokens` nor `stream`."""
    check_version(headers)
    model = data.get("model")
    if not isinstance(model, str) or not model:
        raise invalid("model: Field required")
    max_tokens = data.get("max_tokens", 0 if counting else None)
    if not counting and (isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1):
        raise invalid("max_tokens: Field required, an integer of at least 1")
    stream = data.get("stream", False)
    if not isinstance(stream, bool):
        raise invalid("stream: Input should be a valid boolean")
    raw_messages = data.get("messages")
    if not isinstance(raw_messages, list):
        raise invalid("messages: Field required, a list of messages")
    if len(raw_messages) > MAX_MESSAGES:
        raise invalid(f"messages: at most {MAX_MESSAGES} messages in a single request")
    messages = tuple(read_message(m, i) for i, m in enumerate(raw_messages))
    check_conversation(messages)
    tools = data.get("tools", [])
    if not isinstance(tools, list) or not all(isinstance(t, dict) and isinstance(t.get("name"), str) for t in tools):
        raise invalid("tools: a list of tool definitions, each with a name")
    for key in ("context_management", "compaction", "thinking"):
        if data.get(key) is not None and not isinstance(data[key], dict):
            raise invalid(f"{key}: Input should be an object")
    return MessagesRequest(
        model=model,
        max_tokens=int(max_tokens or 0),
        system=read_system(data.get("system")),
        messages=messages,
        # The betas the `anthropic-beta` header turns on (comma-separated, as the SDK joins them).
        betas=frozenset(b.strip() for b in headers.get("anthropic-beta", "").split(",") if b.strip()),
        stream=stream,
        tools=tuple(tools),
        context_management=data.get("context_management"),
        compaction=data.get("compaction"),
        thinking=data.get("thinking"),
        raw=data,
    )


def read_system(system: object) -> str | None:
    """The top-level `system`: a string, or text blocks (joined by line breaks)."""
    if system is None:
        return None
    if isinstance(system, str):
        return system
    if isinstance(system, list):
        texts = [read_block(b, "system", "system") for b in system]
        if all(isinstance(t, Text) for t in texts):
            return "\n".join(t.text for t in texts if isinstance(t, Text))
    raise invalid("system: a string or a list of text blocks")


def read_message(raw: object, index: int) -> ApiMessage:
    where = f"messages.{index}"
    if not isinstance(raw, dict):
        raise invalid(f"{where}: Input should be an object with role and content")
    role = raw.get("role")
    if role not in ("user", "assistant", "system"):
        raise invalid(f"{where}.role: Input should be 'user', 'assistant' or 'system'")
    clear_at = raw.get("clear_at")
    if clear_at is not None and role != "system":
        raise invalid(f'{where}.clear_at: only permitted on role: "system" messages')
    if clear_at not in (None, "never", "next_user_message"):
        raise invalid(f"{where}.clear_at: Input should be 'next_user_message' or 'never'")
    content = raw.get("content")
    if isinstance(content, str):
        blocks: tuple[Block, ...] = (Text(content),)
    elif isinstance(content, list):
        blocks = tuple(read_block(b, f"{where}.content.{i}", role) for i, b in enumerate(content))
    else:
        raise invalid(f"{where}.content: Field required, a string or a list of content blocks")
    if not blocks:
        raise invalid(f"{where}: all messages must have non-empty content")
    return ApiMessage(role, blocks, clear_at or "never")


# Which block types each role may send (the API's rules, as the SDK's param unions type them).
ALLOWED = {
    "user": ("text", "tool_result"),
    "assistant": ("text", "tool_use", "thinking", "compaction"),
    "system": ("text",),
}


def read_block(raw: object, where: str, role: str) -> Block:
    if not isinstance(raw, dict) or not isinstance(raw.get("type"), str):
        raise invalid(f"{where}: a content block needs a type")
    kind = raw["type"]
    if kind not in {k for kinds in ALLOWED.values() for k in kinds}:
        raise invalid(
            f"{where}.type: {kind!r} blocks are not emulated (text, tool_use, tool_result, thinking, compaction)"
        )
    if kind not in ALLOWED.get(role, ()):
        raise invalid(f"{where}: a {kind} block cannot be sent in a {role} message")
    if kind == "text":
        return Text(_string(raw, "text", where))
    if kind == "tool_use":
        if not isinstance(raw.get("input"), dict):
            raise invalid(f"{where}.input: Field required, an object")
        return ToolUse(_string(raw, "id", where), _string(raw, "name", where), raw["input"])
    if kind == "tool_result":
        return ToolResult(
            _string(raw, "tool_use_id", where),
            _result_text(raw.get("content", ""), where),
            bool(raw.get("is_error", False)),
        )
    if kind == "thinking":
        return Thinking(_string(raw, "thinking", where, empty=True), _string(raw, "signature", where))
    content = raw.get("content")
    if content is not None and (not isinstance(content, str) or not content):
        raise invalid(f"{where}.content: a string (empty string content is not allowed) or null")
    if raw.get("tool_changes"):
        raise invalid(f"{where}.tool_changes: tool changes are not emulated (the emulator never writes them)")
    signature = raw.get("signature")
    return Compaction(content, signature if isinstance(signature, str) else None)


def _string(raw: Mapping[str, Any], key: str, where: str, empty: bool = False) -> str:
    value = raw.get(key)
    if not isinstance(value, str) or (not value and not empty and key != "text"):
        raise invalid(f"{where}.{key}: Field required, a string")
    return value


def _result_text(content: object, where: str) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(b, dict) and b.get("type") == "text" for b in content):
        return "\n".join(str(b.get("text", "")) for b in content)
    raise invalid(f"{where}.content: a string or text blocks (other tool result content is not emulated)")


def check_conversation(messages: Sequence[ApiMessage]) -> None:
    """The API's rules over the whole list: user and assistant alternate (system messages stand
    between them freely), the conversation opens with a user message (or with an assistant
    message that opens with a compaction block, as a conversation compacted on demand does),
    every tool_use is answered by a tool_result in the next user message, and every tool_result
    answers a tool_use of the assistant message just before it."""
    turns = [(i, m) for i, m in enumerate(messages) if m.role != "system"]
    if not turns:
        raise invalid("messages: at least one user message is required")
    first_index, first = turns[0]
    if first.role != "user" and not isinstance(first.blocks[0], Compaction):
        raise invalid(f"messages.{first_index}: the first message must use the user role")
    for (_, before), (index, message) in zip(turns, turns[1:], strict=False):
        if before.role == message.role:
            raise invalid(f"messages.{index}: roles must alternate between user and assistant")
    for (at, before), (index, message) in zip(turns, turns[1:], strict=False):
        _check_tool_pairs(before, at, message, index)
    if first.role == "user":
        orphans = [b.tool_use_id for b in first.blocks if isinstance(b, ToolResult)]
        if orphans:
            raise invalid(
                f"messages.{first_index}: tool_result block(s) provided when previous message does not contain tool_use"
            )


def _check_tool_pairs(before: ApiMessage, at: int, message: ApiMessage, index: int) -> None:
    if before.role != "assistant":
        return
    asked = [b.id for b in before.blocks if isinstance(b, ToolUse)]
    answered = [b.tool_use_id for b in message.blocks if isinstance(b, ToolResult)]
    missing = [i for i in asked if i not in answered]
    if missing:
        raise invalid(
            f"messages.{index}: tool_use ids were found without tool_result blocks immediately after: {', '.join(missing)}. "
            f"Each tool_use block (messages.{at}) must have a corresponding tool_result block in the next message."
        )
    unknown = [i for i in answered if i not in asked]
    if unknown:
        raise invalid(f"messages.{index}: unexpected tool_use_id found in tool_result blocks: {', '.join(unknown)}")
    first_other = next((n for n, b in enumerate(message.blocks) if not isinstance(b, ToolResult)), len(message.blocks))
    if any(isinstance(b, ToolResult) for b in message.blocks[first_other:]):
        raise invalid(f"messages.{index}: tool_result blocks must come first in the user message's content")
