"""OpenAI's Responses API emulated offline: `POST /v1/responses` and `POST /v1/responses/compact`,
answered by an offline model (`reference`, `reference:lossy`) and compacted with the reference
summarizer. Nothing here imports `openai`: the emulator speaks JSON, and the tests check that the
official SDK parses every reply.

In process (what a provider policy calls; no socket, no thread):

    emulator = OpenAIEmulator("reference", context_window=8_000)
    response = emulator.create({"model": "gpt-5.4", "input": [...],
                                "context_management": [{"type": "compaction", "compact_threshold": 2_000}]},
                               turn=turn)           # a dict shaped as the API's Response
    compacted = emulator.compact({"model": "gpt-5.4", "input": [...]})   # a CompactedResponse dict
    events = stream_events(response)               # harness.emulate.openai_stream: the SSE events

Both raise `WireError` (harness.emulate.openai_wire) for a refusal: `.status`, `.body()` (the
API's error object), `.headers` (Retry-After). `turn`, optional, is the chronology turn being
replayed: the offline model reads its key set and scripted outputs (over HTTP, a turn is made
from the request). Served (`harness emulate openai`), `handle` answers the same over HTTP.

What it does, per request:

- **context**: the stored chain of `previous_response_id` (responses are kept in memory when
  `store` is true, the default), then `input`; `instructions` are not carried over. It is
  validated as the provider validates it: tool calls and outputs paired (`openai_wire`), compaction
  items unsealed (altered content is refused), items sent back by id with their reasoning item.
- **tokens**: the rendered input is `instructions` plus each item's text (a message's text, a tool
  call as `name(arguments)`, a tool output, a compaction's summary), counted with the
  characters/4 estimate (`harness.base.messages.estimate_tokens`); every reply says so in the
  `x-harness-token-counter: estimate` header. Framing tokens are not counted.
- **compaction** (`context_management: [{"type": "compaction", "compact_threshold": N}]`): when the
  rendered input exceeds N (default, when N is not given: 90% of the context window, since the API
  documents none), the whole context is summarised (`reference_summary` over its user, system and
  developer messages, an earlier compaction's summary first, within 2,000 characters: the answers
  are generated text and are not summarised) into one `compaction` item, sealed (`harness.emulate.sealing`) so the client
  cannot read it. The item comes first in the output, before the message; the model answers from
  the compaction plus the current turn (the last user message and what follows it). A stored
  chain keeps the compaction item and the output after it, which is what a client chaining by
  input keeps when it drops every item before the latest compaction item (as it may); a client
  that does not drop them is read as it sends them.
- **truncation**: over the context window (`context_window`, in estimated tokens), `"disabled"`
  (the default) answers 400 `context_length_exceeded`; `"auto"` drops items from the start
  (a tool output whose call was dropped goes with it) until the rest fits.
- **answer**: the offline model's reply to the context as messages (instructions as the system
  message, a compaction as a summary message, user messages numbered as turns); `max_output_tokens`
  cuts it (`status: incomplete`, `incomplete_details.reason: max_output_tokens`).
- **usage**: `input_tokens` is what was read (the compaction pass's input plus the answer's, when
  one ran), `output_tokens` what was written (the summary and the answer), both estimates;
  `cached_tokens` and `reasoning_tokens` are 0 because the emulator has no cache and no reasoning.
- **`/responses/compact`**: the context's user messages followed by one compaction item, with its
  own usage (the context read, the summary written).
- **faults** (`harness.emulate.openai_faults`): switches reproducing documented failures.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from harness.base.messages import Message, ToolCall, estimate_tokens
from harness.chronology import UserTurn
from harness.chronology.declarations import ALLOWED_KEYS
from harness.emulate.openai_faults import STATUS_FAULTS, Fault, error_for, parse_faults
from harness.emulate.openai_stream import sse, stream_events
from harness.emulate.openai_wire import (
    COMPACTION,
    CreateRequest,
    Item,
    WireError,
    check_reasoning_pairs,
    check_tool_pairs,
    invalid,
    message_item,
    parse_compact,
    parse_create,
    parse_item,
    read_body,
)
from harness.emulate.sealing import seal
from harness.emulate.server import JSON, Reply
from harness.models import CallRequest, Model
from harness.models.catalog import offline_model
from harness.models.reference_summary import reference_summary

ESTIMATE = "estimate"  # the token counter, as the `x-harness-token-counter` header names it

DEFAULT_CONTEXT_WINDOW = 128_000  # estimated tokens; `--context-window` declares another
DEFAULT_THRESHOLD_SHARE = 0.9  # of the window, when context_management names no threshold
SUMMARY_CHARS = 2_000  # a compaction's summary is written within this (the reference summarizer's cap)
SESSION = "emulated"
SUMMARISED_ROLES = ("user", "system", "developer")


class OpenAIEmulator:
    """The Responses API answered in process; `handle` serves it (harness.emulate.server)."""

    provider = "openai"
    base_path = "/v1"  # an SDK's base_url: the served root plus this

    def __init__(
        self,
        model: str | Model = "reference",
        *,
        context_window: int = DEFAULT_CONTEXT_WINDOW,
        faults: Sequence[str | Fault] = (),
        seed: int = 0,
    ) -> None:
        self.model = offline_model(model, seed) if isinstance(model, str) else model
        self.context_window = context_window
        self.faults = parse_faults(faults)
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._chains: dict[str, tuple[Item, ...]] = {}  # stored response id -> the context it leaves
        self._reasoning_of: dict[str, str] = {}  # item id -> the reasoning item it was produced with
        self._acted: dict[str, int] = {}  # fault name -> requests it acted on

    # --- the API ----------------------------------------------------------------------------

    def create(self, body: Mapping[str, Any], *, turn: UserTurn | None = None) -> dict[str, Any]:
        """`POST /v1/responses`: the Response as a dict, or WireError."""
        self._status_faults()
        request = parse_create(body)
        sent = self._chain(request.previous_response_id) + request.items
        self._check(sent)
        read, compaction = sent, None
        threshold = self._threshold(request)
        compaction_input = rendered_tokens(request.instructions, sent)
        if threshold is not None and compaction_input > threshold:
            compaction = self._compaction_item(sent)
            read = (compaction, *current_turn(sent))  # the answer reads the summary and the turn it answers
        read = self._fit(request, read)
        output, answer_item = self._answer(request, read, turn)
        cut = answer_item is not None and request.max_output_tokens is not None
        cut = cut and estimate_tokens(len(answer_item.text)) > request.max_output_tokens
        if cut:
            # The message cut to the cap in estimated tokens (the cap * 4 characters), marked incomplete.
            wire, part = output[-1], output[-1]["content"][0]
            text = part["text"][: request.max_output_tokens * 4]
            output[-1] = {**wire, "status": "incomplete", "content": [{**part, "text": text}]}
        response_id = self._id("resp")
        if request.store:  # after a compaction, the chain keeps what a client keeps: the item and what follows
            chain = (compaction,) if compaction is not None else sent
            with self._lock:
                self._chains[response_id] = (*chain, *(parse_item(wire, "output") for wire in output))
        written = sum(estimate_tokens(len(_text(item))) for item in output)
        input_tokens = rendered_tokens(request.instructions, read)
        if compaction is not None:  # the compaction pass read the whole context and wrote the summary
            output = [compaction.wire, *output]
            input_tokens += compaction_input
            written += estimate_tokens(len(compaction.text))
        return self._response(request, response_id, output, input_tokens, written, incomplete=cut)

    def compact(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """`POST /v1/responses/compact`: the context's user messages and one compaction item."""
        self._status_faults()
        request = parse_compact(body)
        sent = self._chain(request.previous_response_id) + request.items
        self._check(sent)
        compaction = self._compaction_item(sent)
        with self._lock:
            reasoned = set(self._reasoning_of) if self._acts_locked("orphaned-message-ids") else set()
        # gpt-5.4's compact (#2727) kept assistant messages with their ids and stripped their reasoning
        kept = [  # a user message as `/responses/compact` returns it: with an id, completed, as input text
            item.wire
            if item.role == "assistant"
            else dict(message_item("user", item.text, item.id or self._id("msg"), part="input_text").wire)
            for item in sent
            if item.type == "message" and (item.role == "user" or (item.role == "assistant" and item.id in reasoned))
        ]
        output = [*kept, compaction.wire]
        usage = usage_of(rendered_tokens(request.instructions, sent), estimate_tokens(len(compaction.text)))
        return {
            "id": self._id("resp"),
            "object": "response.compaction",
            "created_at": int(time.time()),
            "output": output,
            "usage": usage,
        }

    # --- HTTP -------------------------------------------------------------------------------

    def handle(self, method: str, path: str, headers: Mapping[str, str], body: bytes) -> Reply:
        """The API over HTTP: `POST /v1/responses` (streamed when `stream` is true) and
        `POST /v1/responses/compact`; anything else 404, as the API answers an unknown route."""
        route = path.split("?", 1)[0].rstrip("/")
        own = {"x-harness-token-counter": ESTIMATE, "x-harness-emulated-model": self.model.name}
        try:
            if method != "POST" or route not in ("/v1/responses", "/v1/responses/compact"):
                raise WireError(404, f"Invalid URL ({method} {route})", param=None)
            parsed = read_body(body)
            if route == "/v1/responses/compact":
                return _json_reply(200, self.compact(parsed), own)
            response = self.create(parsed)
            if parsed.get("stream") is True:
                return Reply(200, sse(stream_events(response)), {"Content-Type": "text/event-stream", **own})
            return _json_reply(200, response, own)
        except WireError as refusal:
            return _json_reply(refusal.status, refusal.body(), {**own, **refusal.headers})

    # --- its parts --------------------------------------------------------------------------

    def _id(self, prefix: str) -> str:
        with self._lock:
            return f"{prefix}_{next(self._ids):024x}"

    def _acts(self, name: str) -> bool:
        """Whether fault `name` acts on this request (counted against its N)."""
        with self._lock:
            return self._acts_locked(name)

    def _acts_locked(self, name: str) -> bool:
        """`_acts`, with the lock held."""
        for fault in self.faults:
            if fault.name == name:
                done = self._acted.get(name, 0)
                if fault.count is not None and done >= fault.count:
                    return False
                self._acted[name] = done + 1
                return True
        return False

    def _status_faults(self) -> None:
        for name in STATUS_FAULTS:
            if self._acts(name):
                status, message, kind, code, headers = error_for(name)
                raise WireError(status, message, type=kind, code=code, headers=headers)

    def _chain(self, previous_id: str | None) -> tuple[Item, ...]:
        if previous_id is None:
            return ()
        with self._lock:
            chain = self._chains.get(previous_id)
        if chain is None:
            raise invalid(
                f"Previous response with id '{previous_id}' not found.",
                "previous_response_id",
                "previous_response_not_found",
            )
        return chain

    def _check(self, items: Sequence[Item]) -> None:
        check_tool_pairs(items)
        with self._lock:
            reasoning_of = dict(self._reasoning_of)
        check_reasoning_pairs(items, reasoning_of)

    def _threshold(self, request: CreateRequest) -> int | None:
        if not request.compaction_asked:
            return None
        if request.compact_threshold is not None:
            return request.compact_threshold
        return int(self.context_window * DEFAULT_THRESHOLD_SHARE)

    def _compaction_item(self, items: Sequence[Item]) -> Item:
        summary = compaction_summary(items)
        wire = {"id": self._id("cmp"), "type": "compaction", "encrypted_content": seal(summary, COMPACTION)}
        return Item("compaction", wire, summary, id=wire["id"])

    def _fit(self, request: CreateRequest, items: tuple[Item, ...]) -> tuple[Item, ...]:
        """`items` within the context window: as they are, truncated from the start (`auto`), or 400."""
        if rendered_tokens(request.instructions, items) <= self.context_window:
            return items
        kept = truncated(request.instructions, items, self.context_window) if request.truncation == "auto" else None
        if kept is not None:
            return kept
        raise invalid(
            f"Your input exceeds the context window of this model ({self.context_window} estimated tokens). "
            "Please adjust your input and try again.",
            "input",
            "context_length_exceeded",
        )

    def _answer(
        self, request: CreateRequest, items: tuple[Item, ...], turn: UserTurn | None
    ) -> tuple[list[dict[str, Any]], Item | None]:
        """The output items (a reasoning item under #2727's fault; the message, or a tool call
        under #2317's) and the message, when there is one."""
        if request.tools and items and _is_user(items[-1]) and self._acts("unanswered-tool-call"):
            wire = {
                "id": self._id("fc"),
                "type": "function_call",
                "call_id": self._id("call"),
                "name": request.tools[0],
                "arguments": "{}",
                "status": "completed",
            }
            return [wire], None
        messages = as_messages(request.instructions, items)
        completion = self.model.complete(CallRequest("answer", messages, turn or made_turn(messages)))
        if not self._acts("orphaned-message-ids"):
            message = message_item("assistant", completion.text, self._id("msg"))
            return [dict(message.wire)], message
        reasoning = {"id": self._id("rs"), "type": "reasoning", "summary": [], "status": "completed"}
        message = message_item("assistant", completion.text, self._id("msg"))
        with self._lock:
            self._reasoning_of[message.id or ""] = reasoning["id"]
        return [reasoning, dict(message.wire)], message

    def _response(
        self,
        request: CreateRequest,
        response_id: str,
        output: list[dict[str, Any]],
        read: int,
        written: int,
        incomplete: bool,
    ) -> dict[str, Any]:
        now = int(time.time())
        return {
            "id": response_id,
            "object": "response",
            "created_at": now,
            "completed_at": None if incomplete else now,
            "status": "incomplete" if incomplete else "completed",
            "error": None,
            "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
            "instructions": request.instructions,
            "max_output_tokens": request.max_output_tokens,
            "model": request.model,
            "output": output,
            "parallel_tool_calls": True,
            "previous_response_id": request.previous_response_id,
            "store": request.store,
            "temperature": request.echoed.get("temperature", 1.0),
            "top_p": request.echoed.get("top_p", 1.0),
            "metadata": request.echoed.get("metadata") or {},
            "tool_choice": request.echoed.get("tool_choice", "auto"),
            "tools": [{"type": "function", "name": n, "parameters": {}, "strict": False} for n in request.tools],
            "truncation": request.truncation,
            "text": {"format": {"type": "text"}},
            "usage": None if self._acts("no-usage") else usage_of(read, written),
        }


# --- pure helpers -------------------------------------------------------------------------


def rendered_tokens(instructions: str | None, items: Sequence[Item]) -> int:
    """The characters/4 estimate of what the model reads: the instructions and each item's text."""
    return estimate_tokens(len(instructions or "") + sum(len(item.text) for item in items))


def truncated(instructions: str | None, items: Sequence[Item], window: int) -> tuple[Item, ...] | None:
    """`truncation: "auto"`: `items` less the fewest from the start (a tool output whose call was
    dropped goes with it) that fit `window` estimated tokens with the instructions; None when
    nothing fits (the API then answers 400 `context_length_exceeded`). The `openai-truncation`
    policy truncates by this rule too."""
    if rendered_tokens(instructions, items) <= window:
        return tuple(items)
    for start in range(1, len(items)):
        kept = _without_orphans(items[start:])
        if kept and rendered_tokens(instructions, kept) <= window:
            return kept
    return None


def compaction_summary(items: Sequence[Item], keys: Sequence[str] = ALLOWED_KEYS, cap: int = SUMMARY_CHARS) -> str:
    """The reference summary of `items` within `cap` characters: an earlier compaction's summary,
    merged with each user, system and developer message's text in order (generated text is never
    summarised)."""
    summary: str | None = None
    for item in items:
        if item.type == "compaction":  # an earlier summary: merged with what is summarised so far
            summary = reference_summary("\n".join(part for part in (summary, item.text) if part), "", keys, cap)
        elif item.type == "message" and item.role in SUMMARISED_ROLES:
            summary = reference_summary(summary, item.text, keys, cap)
    return summary or ""


def current_turn(items: Sequence[Item]) -> tuple[Item, ...]:
    """The last user message and every item after it (all of `items` when none is a user's)."""
    starts = [i for i, item in enumerate(items) if _is_user(item)]
    return tuple(items[starts[-1] :]) if starts else tuple(items)


def as_messages(instructions: str | None, items: Sequence[Item]) -> tuple[Message, ...]:
    """The context as the offline model reads it: instructions as the system message, each user
    message starting a turn (numbered from 1), a compaction as a summary, tool calls and outputs
    as the harness's tool messages; reasoning items are not read."""
    current = len(items) - len(current_turn(items))
    messages = [Message("system", instructions, origin="system")] if instructions else []
    turn = 0
    for index, item in enumerate(items):
        origin = "current" if index >= current else "history"
        if _is_user(item):
            turn += 1
        number = turn or None
        if item.type == "message":
            role = "system" if item.role in ("system", "developer") else item.role
            messages.append(Message(role, item.text, origin="system" if role == "system" else origin, turn=number))
        elif item.type == "compaction":
            messages.append(Message("system", item.text, origin="summary", turn=number))
        elif item.type == "function_call":
            call = ToolCall(item.call_id or "", item.name or "", item.arguments or "")
            messages.append(Message("assistant", "", origin=origin, turn=number, tool_calls=(call,)))
        elif item.type == "function_call_output":
            messages.append(Message("tool", item.text, origin=origin, turn=number, tool_call_id=item.call_id))
    return tuple(replace(m, session=SESSION) for m in messages)


def made_turn(messages: Sequence[Message]) -> UserTurn:
    """The turn an HTTP request stands for: its last user message, numbered as `as_messages` numbers it."""
    users = [m for m in messages if m.role == "user"]
    last = users[-1] if users else None
    return UserTurn(number=(last.turn or 1) if last else 1, line=0, user=last.content if last else "", session=SESSION)


def _is_user(item: Item) -> bool:
    return item.type == "message" and item.role == "user"


def _without_orphans(items: Sequence[Item]) -> tuple[Item, ...]:
    """`items` without the tool outputs whose call is not among them (truncation dropped it)."""
    called = {item.call_id for item in items if item.type == "function_call"}
    return tuple(item for item in items if item.type != "function_call_output" or item.call_id in called)


def _text(wire: Mapping[str, Any]) -> str:
    if wire["type"] == "message":
        return "".join(part.get("text", "") for part in wire["content"])
    if wire["type"] == "function_call":
        return f"{wire['name']}({wire['arguments']})"
    return ""  # a compaction's summary is counted by whoever made it; a reasoning item holds no text


def usage_of(read: int, written: int) -> dict[str, Any]:
    """`usage` as the API reports it: estimates read and written; no cache, no reasoning (0)."""
    return {
        "input_tokens": read,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": written,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": read + written,
    }


def _json_reply(status: int, payload: Mapping[str, Any], headers: Mapping[str, str]) -> Reply:
    return Reply(status, json.dumps(payload, ensure_ascii=False).encode(), {**JSON, **headers})
