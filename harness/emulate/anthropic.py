"""Anthropic's Messages API, emulated offline: `POST /v1/messages` and
`POST /v1/messages/count_tokens`, with context editing, threshold and on-demand compaction,
usage, stop reasons and streaming, answered by the offline models (`reference`,
`reference:lossy[:k=v,...]`, named by the request's `model`).

Served over HTTP by `harness.emulate.server.serve(AnthropicEmulator())` (then
`Anthropic(base_url=url, api_key="unused")`), or called in process, with no socket, by a policy
that delegates to the provider:

    emulator = AnthropicEmulator()
    exchange = emulator.create(params, headers_for(["context-management-2025-06-27"]))
    exchange.message     # the response body, a BetaMessage as JSON (content, usage, stop_reason, ...)
    exchange.view        # what the model answered from, as harness Messages (after edits and compaction)
    exchange.summarised  # what a compaction summarised (None when none ran)
    emulator.count_tokens(params, headers)  # a BetaMessageTokensCount as JSON

`params` are the keyword arguments of the SDK's `client.beta.messages.create` (`model`,
`max_tokens`, `messages`, `system`, `tools`, `context_management`, `compaction`, `thinking`;
`stream` is the HTTP adapter's business; `anthropic_stream.events(exchange.message)` gives the
same reply as the events a stream would carry). Every refusal raises `ApiError` (status, Anthropic's
error type, message), exactly what the HTTP adapter answers; faults are switched on by `Faults`.

Which modules do what: `anthropic_wire` reads and validates a request; `anthropic_edits` reads
the context-management parameters and applies the clearing edits (the rule shared with the
client-side policy is `anthropic_clearing`); `anthropic_view` gives the window the model reads and
its token estimate; `anthropic_compaction` summarises and checks compaction blocks;
`anthropic_stream` writes a reply as server-sent events. What this emulates, and what it does
not, is in docs/models.md, "Emulated providers: Anthropic".
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from harness.base.errors import InputError
from harness.base.messages import Message
from harness.emulate.anthropic_compaction import ON_DEMAND, THRESHOLD, check_blocks, sign, summarize
from harness.emulate.anthropic_edits import Compact, Management, apply_clearing, read_management
from harness.emulate.anthropic_stream import sse
from harness.emulate.anthropic_view import (
    CHARS_PER_TOKEN,
    TOKEN_COUNTER,
    as_messages,
    continued,
    emulated_turn,
    estimate,
    input_tokens,
    window,
)
from harness.emulate.anthropic_wire import API_VERSION, ApiError, ApiMessage, MessagesRequest, read_json, read_request
from harness.emulate.server import JSON, Reply
from harness.models import CallRequest, Model
from harness.models.catalog import offline_model
from harness.models.lossy import LossyModel, is_lossy, parse_lossy
from harness.models.reference import ReferenceModel

MESSAGES = "/v1/messages"
COUNT_TOKENS = "/v1/messages/count_tokens"
COUNTER_HEADER = "x-harness-token-counter"


def headers_for(betas: Sequence[str] = ()) -> dict[str, str]:
    """The headers the SDK sends with `betas`, for an in-process call."""
    headers = {"anthropic-version": API_VERSION}
    if betas:
        headers["anthropic-beta"] = ",".join(betas)
    return headers


@dataclass(frozen=True)
class Faults:
    """The documented failures, switched on: the first `rate_limited` requests answer 429 with
    `retry-after: retry_after`, the next `server_errors` answer 500; with `compaction_unavailable`
    a compaction answers 529 `overloaded_error`; with `failed_compaction` a compaction's block
    has `content: null` (the API's failed compaction) and the context stays whole."""

    rate_limited: int = 0
    retry_after: int = 1
    server_errors: int = 0
    compaction_unavailable: bool = False
    failed_compaction: bool = False


@dataclass(frozen=True)
class Exchange:
    """One answered `POST /v1/messages`: the response body and what the emulator read to write it."""

    message: dict[str, Any]
    view: tuple[Message, ...]  # what the model answered from; () when it answered nothing (a paused compaction)
    summarised: tuple[Message, ...] | None = None  # what a compaction summarised; None: no compaction ran


class AnthropicEmulator:
    """The Messages API answered in process (`create`, `count_tokens`) or over HTTP (`handle`)."""

    base_path = ""  # the SDK's base_url is the served root: it adds `/v1/messages` itself

    def __init__(self, faults: Faults = Faults(), seed: int = 0, model: str | None = None) -> None:
        self.faults = faults
        self.seed = seed  # a `reference:lossy` model's draws, unless its name sets a seed
        # With `model`, every request is answered by that offline model whatever its `model`
        # names (a client sends a real model's name: `harness emulate anthropic --model ...`);
        # without it, the request's `model` must name an offline model.
        self.fixed = None if model is None else offline_model(model, seed)
        self._models: dict[str, Model] = {}
        self._requests = itertools.count(1)
        self._ids = itertools.count(1)  # the responses' ids: msg_emulated_000001, ...
        self._lock = threading.Lock()

    # --- in process ----------------------------------------------------------------------------

    def create(self, params: Mapping[str, Any], headers: Mapping[str, str]) -> Exchange:
        """Answer `POST /v1/messages` (see the module docstring); raise `ApiError` on a refusal."""
        self._fault_gate()
        request = read_request(params, headers)
        check_blocks(request.messages)
        management = read_management(request)
        model = self._model(request.model)
        cleared = apply_clearing(request, window(request.messages), management)
        view = continued(as_messages(request.system, cleared.messages), request.messages)
        tokens = input_tokens(view, request.tools)
        applied = {"applied_edits": list(cleared.applied)} if request.context_management is not None else None
        compact = management.compact
        if compact is None or not (compact.on_demand or tokens > compact.trigger):
            iterations = None if compact is None else []  # with compaction on, usage lists its iterations
            return self._answer(request, model, view, applied, iterations)
        return self._compact(request, model, compact, cleared.messages, applied)

    def _compact(
        self,
        request: MessagesRequest,
        model: Model,
        compact: Compact,
        window_: Sequence[ApiMessage],
        applied: dict[str, Any] | None,
    ) -> Exchange:
        """A compaction of the (edited) window, then the answer unless it pauses or was asked alone."""
        if self.faults.compaction_unavailable:
            raise ApiError(
                529, "overloaded_error", "compaction_unavailable: the server could not compact now; retry later"
            )
        view = as_messages(request.system, window_)
        summarised = tuple(as_messages(None, window_))
        summary = None if self.faults.failed_compaction else summarize(model, summarised, compact.instructions) or None
        kind = ON_DEMAND if compact.on_demand else THRESHOLD
        signature = sign(summary, kind) if summary else None
        block = {"type": "compaction", "content": summary, "signature": signature, "encrypted_content": None}
        spent = iteration("compaction", input_tokens(view, request.tools), estimate(len(summary or "")))
        if compact.on_demand or compact.pause:
            message = response(self._next_id(), request, [block], "compaction", usage_of(spent, [spent]), applied)
            return Exchange(message, (), summarised)
        if summary is not None:
            view = compacted_view(request.system, summary, view)
        exchange = self._answer(request, model, view, applied, [spent])
        exchange.message["content"].insert(0, block)
        return Exchange(exchange.message, exchange.view, summarised)

    def count_tokens(self, params: Mapping[str, Any], headers: Mapping[str, str]) -> dict[str, Any]:
        """Answer `POST /v1/messages/count_tokens`: the input tokens after the clearing edits (a
        compaction does not run; the `compaction` parameter is accepted and ignored, as the SDK
        documents), and with `context_management` the count before them."""
        self._fault_gate()
        request = read_request(params, headers, counting=True)
        check_blocks(request.messages)
        management = Management() if request.compaction is not None else read_management(request)
        shown = window(request.messages)
        before = input_tokens(as_messages(request.system, shown), request.tools)
        cleared = apply_clearing(request, shown, management)
        counted: dict[str, Any] = {
            "input_tokens": input_tokens(as_messages(request.system, cleared.messages), request.tools)
        }
        if request.context_management is not None:
            counted["context_management"] = {"original_input_tokens": before}
        return counted

    def _answer(
        self,
        request: MessagesRequest,
        model: Model,
        view: Sequence[Message],
        applied: dict[str, Any] | None,
        iterations: list[dict[str, Any]] | None,
    ) -> Exchange:
        users = [m.content for m in view if m.role == "user"]
        text = model.complete(CallRequest("answer", tuple(view), emulated_turn(users[-1] if users else ""))).text
        stop = "end_turn"
        if estimate(len(text)) > request.max_tokens:  # cut at the cap, as a model stopped by max_tokens is
            text, stop = text[: request.max_tokens * CHARS_PER_TOKEN], "max_tokens"
        spent = iteration("message", input_tokens(view, request.tools), max(estimate(len(text)), 1))
        usage = usage_of(spent, None if iterations is None else [*iterations, spent])
        content: list[dict[str, Any]] = [{"type": "text", "text": text, "citations": None}]
        return Exchange(response(self._next_id(), request, content, stop, usage, applied), tuple(view))

    def _next_id(self) -> int:
        with self._lock:
            return next(self._ids)

    def _fault_gate(self) -> None:
        with self._lock:
            number = next(self._requests)
        if number <= self.faults.rate_limited:
            headers = {"retry-after": str(self.faults.retry_after)}
            raise ApiError(
                429, "rate_limit_error", "rate limited (an emulated fault); retry after the retry-after header", headers
            )
        if number <= self.faults.rate_limited + self.faults.server_errors:
            raise ApiError(500, "api_error", "internal server error (an emulated fault)")

    def _model(self, name: str) -> Model:
        if self.fixed is not None:
            return self.fixed
        with self._lock:
            if name not in self._models:
                self._models[name] = self._open(name)
            return self._models[name]

    def _open(self, name: str) -> Model:
        if name == "reference":
            return ReferenceModel()
        if is_lossy(name):
            try:
                return LossyModel(name, parse_lossy(name, "model"), self.seed)
            except InputError as exc:
                raise ApiError(400, "invalid_request_error", str(exc)) from None
        raise ApiError(
            404, "not_found_error", f"model: {name} (the emulator answers with reference or reference:lossy[:k=v,...])"
        )

    # --- over HTTP -----------------------------------------------------------------------------

    def handle(self, method: str, path: str, headers: Mapping[str, str], body: bytes) -> Reply:
        """One HTTP request: the `Reply` the API would give (an error in Anthropic's shape)."""
        where = urlsplit(path).path  # the SDK's beta client asks `/v1/messages?beta=true`
        try:
            if method != "POST" or where not in (MESSAGES, COUNT_TOKENS):
                raise ApiError(
                    404,
                    "not_found_error",
                    f"{method} {where}: not found (the emulator answers POST {MESSAGES} and {COUNT_TOKENS})",
                )
            params = read_json(body)
            if where == COUNT_TOKENS:
                return reply(200, self.count_tokens(params, headers))
            exchange = self.create(params, headers)
        except ApiError as error:  # the API's error body also names the request (`ErrorResponse.request_id`)
            return reply(
                error.status, {**error.body(), "request_id": f"req_emulated_{self._next_id():06d}"}, error.headers
            )
        if params.get("stream") is True:
            return Reply(
                200, sse(exchange.message), {"Content-Type": "text/event-stream", COUNTER_HEADER: TOKEN_COUNTER}
            )
        return reply(200, exchange.message)


def reply(status: int, body: Mapping[str, Any], headers: Mapping[str, str] | None = None) -> Reply:
    """A JSON reply, naming the token counter its figures come from."""
    return Reply(
        status,
        json.dumps(body, ensure_ascii=False).encode(),
        {**JSON, COUNTER_HEADER: TOKEN_COUNTER, **(headers or {})},
    )


def compacted_view(system: str | None, summary: str, view: Sequence[Message]) -> list[Message]:
    """What the model answers from once a compaction ran: the top-level system prompt, the summary,
    and the user message it is answering (summarised too, but still the question asked)."""
    users = [m for m in view if m.role == "user"]
    head = [Message("system", system, origin="system")] if system else []
    return [*head, Message("assistant", summary, origin="summary"), *users[-1:]]


def iteration(kind: str, input_tokens_: int, output_tokens: int) -> dict[str, Any]:
    """One entry of `usage.iterations` (`BetaMessageIterationUsage`, `BetaCompactionIterationUsage`).
    The emulator has no prompt cache: its cache figures are 0 because nothing was cached."""
    return {
        "type": kind,
        "input_tokens": input_tokens_,
        "output_tokens": output_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }


def usage_of(spent: Mapping[str, Any], iterations: list[dict[str, Any]] | None) -> dict[str, Any]:
    """The top-level usage: the last iteration's figures (a compaction's are reported apart, in
    `iterations`, unless the request was that compaction alone), and the iterations when compaction is on."""
    usage = {
        key: spent[key]
        for key in ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    }
    if iterations:
        usage["iterations"] = iterations
    return usage


def response(
    number: int,
    request: MessagesRequest,
    content: list[dict[str, Any]],
    stop: str,
    usage: dict[str, Any],
    applied: dict[str, Any] | None,
) -> dict[str, Any]:
    """The response body: a `BetaMessage` as JSON."""
    return {
        "id": f"msg_emulated_{number:06d}",
        "type": "message",
        "role": "assistant",
        "model": request.model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": usage,
        "context_management": applied,
    }


# `harness emulate anthropic --fault NAME[:N]`: the switches of `Faults` by name (N: how many
# requests a counted fault answers; a switch takes no N).
FAULT_NAMES = ("rate-limit", "server-error", "compaction-unavailable", "failed-compaction")


def served(
    model: str, *, faults: Sequence[str] = (), seed: int = 0, context_window: int | None = None
) -> AnthropicEmulator:
    """The emulator `harness emulate anthropic` serves (harness.emulate.providers): every request
    answered by the offline `model`; `faults` as `NAME[:N]` (FAULT_NAMES). The Messages API
    declares no context window to the client, so `context_window` is refused."""
    if context_window is not None:
        raise InputError(
            "--context-window: the Anthropic emulator declares none (the API has no truncation); leave it out"
        )
    counted = {"rate-limit": 0, "server-error": 0}
    switched = {"compaction-unavailable": False, "failed-compaction": False}
    for spec in faults:
        name, _, count = spec.partition(":")
        if name not in FAULT_NAMES:
            raise InputError(f"--fault {spec}: not a fault of the Anthropic emulator; one of {', '.join(FAULT_NAMES)}")
        if name in counted:
            if count and not count.isdigit():
                raise InputError(f"--fault {spec}: N is a number of requests, e.g. {name}:3")
            counted[name] = int(count) if count else 1_000_000_000  # without N: every request
        elif count:
            raise InputError(f"--fault {spec}: {name} is a switch and takes no :N")
        else:
            switched[name] = True
    chosen = Faults(
        rate_limited=counted["rate-limit"],
        server_errors=counted["server-error"],
        compaction_unavailable=switched["compaction-unavailable"],
        failed_compaction=switched["failed-compaction"],
    )
    return AnthropicEmulator(chosen, seed, model)
