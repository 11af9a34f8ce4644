"""`anthropic:<model>`: Anthropic's Messages API (`POST {base_url}/v1/messages`). The only module
that imports `anthropic` (the optional extra `anthropic`).

One non-streaming request per attempt, sent through the official client's `post` (the body as
built here, the answer as the endpoint sent it), under the machinery every endpoint model shares
with `openai:NAME` (`harness.models.openai`): attempts retried by `harness.models.retry` (408, 429,
529 `overloaded_error` and other 5xx, timeouts, connection failures; the client's own retries
off), each request paced (`harness.models.ratelimit`), one deadline per attempt and a bound on the
bytes read (`harness.models.deadline`), the key redacted from every body before it is read
(`harness.models.redaction`), a reply's reason and short fields read as `harness.models.replies`
reads them.

- **The request**: the view's leading system message as `system`, the rest as alternating user
  and assistant messages (`harness.models.anthropic_params.api_messages`: a tool call a `tool_use`
  block, a tool result a `tool_result` block, a readable compaction summary a `compaction` block),
  `max_tokens` (required by the API: the call kind's cap, else `DEFAULT_MAX_TOKENS`),
  `temperature`, `top_p`. The API takes no seed: none is sent. A provider policy's extras
  (`CallRequest.provider` with `api` "anthropic": `context_management`, `compaction`, their
  `anthropic-beta` features) are added to the body, and its `messages`, when given, are sent
  instead of the view.
- **The reply**: the text blocks joined; for a paused compaction (`stop_reason: "compaction"`) the
  compaction block's readable `content` (`""` when it is null: the API's failed compaction).
  `stop_reason` is the finish reason; `id` and `model` are kept; the response's
  `context_management` (its `applied_edits`) is `Completion.provider_reply`.
- **Usage**, as reported, never 0 for a missing figure: `input_tokens` plus the cache's figures as
  the prompt tokens (Anthropic counts `cache_read_input_tokens` and `cache_creation_input_tokens`
  apart from `input_tokens`; the harness's prompt tokens are every input token, as in a
  chat-completions body), `output_tokens`, and the two cache figures in `Usage.cached_input` and
  `Usage.cache_write`. A compaction's usage is its iterations' (`usage.iterations` of type
  `compaction`) where the reply lists them. No usage in the body: `usage=None`.
- **The key** comes from the variable `--api-key-env` names, or `ANTHROPIC_API_KEY` when the run
  kept the default (`harness.models.catalog.anthropic_key_env`); it is required without
  `--base-url` (the Anthropic API), and any `--base-url` (the emulator, a gateway) is sent a
  placeholder when it is not set (a 401 then names the variable to set). The SDK sends it as a
  bearer token.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import anthropic

from harness.base.errors import InputError
from harness.base.text import valid_unicode
from harness.models import CallRequest, Completion
from harness.models.anthropic_params import API, api_messages
from harness.models.clients import EndpointModel
from harness.models.deadline import CrossOriginRedirect, ResponseTooLarge, bounded, deadline, http_client
from harness.models.endpoint import check_base_url, check_key, is_loopback, public_url
from harness.models.options import MAX_RESPONSE_BYTES
from harness.models.ratelimit import Pacer
from harness.models.redaction import Redactor
from harness.models.replies import describe, error_body, loaded, reason, replaced_note, said, valid_usage
from harness.models.retry import AttemptFailed, CallFailed, Retries, retry_after_seconds, retryable
from harness.models.usage import Usage, parse_usage

PREFIX = "anthropic:"
DEFAULT_BASE_URL = "https://api.anthropic.com"
DEFAULT_KEY_ENV = "ANTHROPIC_API_KEY"
PLACEHOLDER_KEY = "unused"  # sent to a --base-url endpoint (the emulator) when no key is set
DEFAULT_MAX_TOKENS = 4_096  # the API requires `max_tokens`; sent when the run sets no cap
MESSAGES_PATH = "/v1/messages"
NOT_COMPACTED = (
    "the reply holds no compaction block: the provider did not compact (its own count decides); nothing replaced"
)
ITERATIONS_NOTE = "usage: the compaction iterations the provider listed in usage.iterations"


@dataclass(frozen=True)
class _Reply:
    text: str
    usage: Usage | None
    model: str | None
    finish_reason: str | None
    id: str | None
    provider_reply: Mapping[str, Any] | None
    notes: tuple[str, ...]


class AnthropicModel(EndpointModel[anthropic.Anthropic]):
    """The `anthropic:<model>` model: the Messages API reached through the `anthropic` package."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key_env: str = DEFAULT_KEY_ENV,
        timeout: float = 60.0,
        max_retries: int = 4,
        temperature: float = 0.0,
        max_tokens: int | Mapping[str, int] | None = None,
        top_p: float | None = None,
        backoff_base: float = 0.5,
        backoff_cap: float = 8.0,
        sleep: Callable[[float], None] = time.sleep,
        max_response_bytes: int = MAX_RESPONSE_BYTES,
        pacer: Pacer | None = None,
    ) -> None:
        if not model.strip():
            raise InputError("--model anthropic:NAME: the model name is empty (e.g. anthropic:claude-sonnet-4-5)")
        check_base_url(base_url)
        if not math.isfinite(timeout) or timeout <= 0:
            raise InputError(f"timeout must be a positive, finite number of seconds (got {timeout})")
        if max_retries < 0 or max_response_bytes < 1:
            raise InputError("max retries must be 0 or more and max response bytes 1 or more")
        self.model, self.name = model, PREFIX + model
        self.base_url, self.api_key_env = base_url, api_key_env
        self.timeout, self.max_retries, self.max_response_bytes = timeout, max_retries, max_response_bytes
        self.temperature, self.top_p, self.pacer = temperature, top_p, pacer
        self.max_tokens = dict(max_tokens) if isinstance(max_tokens, Mapping) else max_tokens
        self._retries = Retries(max_retries, backoff_base, backoff_cap, timeout, "the timeout", sleep)
        check_key(self.name, api_key_env, base_url, provider="the Anthropic API", url_variable=None)
        self._secret = os.environ.get(api_key_env) or None
        self._redactor = Redactor(self._secret, api_key_env)
        trust_env = not is_loopback(base_url)  # a proxy cannot reach the user's own loopback
        super().__init__(  # each thread's client (harness.models.clients)
            lambda: anthropic.Anthropic(
                api_key=self._secret or PLACEHOLDER_KEY,
                base_url=self.base_url or DEFAULT_BASE_URL,
                timeout=self.timeout,
                max_retries=0,
                http_client=http_client(anthropic.DefaultHttpxClient, trust_env, anthropic.DEFAULT_CONNECTION_LIMITS),
            )
        )

    # --- the Model protocol ----------------------------------------------------------

    def complete(self, request: CallRequest) -> Completion:
        """One call, retried as needed; raise ModelError (safe to record) when it fails."""
        params, betas = self._params(request)
        notes: list[str] = []
        compaction = asks_compaction(params)
        with self._paced(request, params) as tally:
            try:
                reply, attempts = self._sent(lambda: self._attempt(params, betas, compaction), notes)
            except CallFailed as failure:
                raise self._error(describe(failure), failure.attempts, notes, paced=tally.paced) from None
        return Completion(
            text=reply.text,
            usage=reply.usage,
            attempts=attempts,
            notes=(*notes, *reply.notes),
            response_model=reply.model,
            finish_reason=reply.finish_reason,
            response_id=reply.id,
            paced=tally.paced,
            provider_reply=reply.provider_reply,
        )

    def describe(self) -> dict[str, Any]:
        """The model's settings for the manifest; no secret, only the variable's name."""
        return {
            "name": self.name,
            "model": self.model,
            "base_url": public_url(self.base_url) or DEFAULT_BASE_URL,
            "api_key_env": self.api_key_env,
            "timeout": self.timeout,
            "max_retries": self.max_retries,
            "max_response_bytes": self.max_response_bytes,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_tokens": self.max_tokens,
            "key_set": self._secret is not None,
        }

    @property
    def cache_identity(self) -> dict[str, Any]:
        """What determines a response besides the messages: the response cache's key material."""
        return {
            "endpoint": public_url(self.base_url) or DEFAULT_BASE_URL,
            "api": API,
            "model": self.model,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_tokens": self.max_tokens,
        }

    # --- internals -------------------------------------------------------------------

    def cap(self, kind: str) -> int:
        """The `max_tokens` sent with a call of `kind` (the API requires one)."""
        if isinstance(self.max_tokens, dict):
            return self.max_tokens.get(kind, self.max_tokens.get("answer", DEFAULT_MAX_TOKENS))
        return self.max_tokens or DEFAULT_MAX_TOKENS

    def _params(self, request: CallRequest) -> tuple[dict[str, Any], tuple[str, ...]]:
        extras = request.for_api(API)
        sent = extras.messages if extras is not None and extras.messages is not None else request.messages
        system, messages = api_messages(sent)
        params: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.cap(request.kind),
            "messages": messages,
            "temperature": self.temperature,
        }
        if system is not None:
            params["system"] = system
        if self.top_p is not None:
            params["top_p"] = self.top_p
        if extras is None:
            return params, ()
        return {**params, **extras.body}, extras.betas

    def _attempt(self, params: dict[str, Any], betas: tuple[str, ...], compaction: bool) -> _Reply:
        """One request within one deadline, failures classified as in `harness.models.openai`."""
        headers = {"anthropic-beta": ",".join(betas)} if betas else {}
        try:
            with deadline(self.timeout), bounded(self.max_response_bytes):
                content = self._thread_client().post(
                    MESSAGES_PATH, body=params, cast_to=bytes, options={"headers": headers}
                )
        except ResponseTooLarge as error:
            raise AttemptFailed(
                f"response too large: the body ran past {error.limit:,} bytes (decoded); raise --max-response-bytes "
                "if the endpoint means to send that much"
            ) from None
        except anthropic.APITimeoutError:
            raise AttemptFailed(f"timed out: no complete response within {self.timeout:g}s", retryable=True) from None
        except anthropic.APIConnectionError as error:
            raise AttemptFailed(f"connection failed ({type(error.__cause__).__name__})", retryable=True) from None
        except anthropic.APIStatusError as error:
            status = error.response.status_code
            said_ = reason(self._redactor.json(error_body(error.response.text)))
            if status == 401 and self._secret is None:
                said_ += f"; the endpoint wants an API key: set the environment variable {self.api_key_env}"
            raise AttemptFailed(
                said_,
                status=status,
                retryable=retryable(status),
                retry_after=retry_after_seconds(error.response.headers),
            ) from None
        except CrossOriginRedirect as error:
            raise AttemptFailed(str(error)) from None
        return parse_message(content, self._redactor, compaction, "context_management" in params)


def asks_compaction(params: Mapping[str, Any]) -> bool:
    """Whether a request asks for a compaction: on demand (`compaction`) or at a threshold (a
    `compact_*` edit in `context_management`)."""
    management = params.get("context_management")
    edits = management.get("edits", []) if isinstance(management, dict) else []
    return "compaction" in params or any(str(e.get("type", "")).startswith("compact_") for e in edits)


def parse_message(content: bytes, redactor: Redactor, compaction: bool = False, edited: bool = False) -> _Reply:
    """A Messages API body -> its text, usage and what the endpoint said, the key redacted from
    every string first; raise AttemptFailed (final) when it is malformed. For a request that asked
    for a compaction (`compaction`), the text is the latest compaction block's `content`: `""`
    when it is null (the API's failed compaction) or when the reply holds no block (the server's
    own count stayed under the trigger), which a note says. For a request that carried
    `context_management` (`edited`), a reply without it gives `{}`: asked, and nothing said."""
    data = loaded(content, redactor)
    blocks = data.get("content") if isinstance(data, dict) else None
    if not isinstance(blocks, list):
        raise AttemptFailed("malformed response: no content blocks")
    stop = said(data.get("stop_reason"))
    compactions = [b for b in blocks if isinstance(b, dict) and b.get("type") == "compaction"]
    notes: tuple[str, ...] = ()
    if compaction:
        text = (compactions[-1].get("content") if compactions else None) or ""  # null: a no-op
        notes = () if compactions else (NOT_COMPACTED,)
    else:
        text = "".join(b.get("text") for b in blocks if isinstance(b, dict) and b.get("type") == "text")
    if not isinstance(text, str):
        raise AttemptFailed("malformed response: a compaction block's content is not text")
    text, replaced = valid_unicode(text)
    usage, counted = usage_of(data.get("usage"), compacted=bool(compactions) and compaction)
    notes += counted
    usage, also = valid_usage(usage)
    management = data.get("context_management")
    return _Reply(
        text,
        usage,
        said(data.get("model")),
        stop,
        said(data.get("id")),
        management if isinstance(management, dict) else ({} if edited else None),
        (*notes, *([replaced_note(replaced + also)] if replaced + also else [])),
    )


def usage_of(usage: object, compacted: bool) -> tuple[Usage | None, tuple[str, ...]]:
    """A Messages API `usage` as `Usage` (the module docstring says how), and its notes; None when
    the body reported none. A paused compaction's usage is its compaction iterations' where listed."""
    if not isinstance(usage, dict):
        return parse_usage(usage), ()
    notes: tuple[str, ...] = ()
    iterations = usage.get("iterations")
    if compacted and isinstance(iterations, list):
        mine = [i for i in iterations if isinstance(i, dict) and i.get("type") == "compaction"]
        if mine:
            usage = {key: _sum([i.get(key) for i in mine]) for key in mine[0] if key != "type"}
            notes = (ITERATIONS_NOTE,)
    read, written = usage.get("cache_read_input_tokens"), usage.get("cache_creation_input_tokens")
    prompt = usage.get("input_tokens")
    if isinstance(prompt, int) and all(isinstance(v, int) for v in (read, written) if v is not None):
        prompt = prompt + (read or 0) + (written or 0)  # every input token; a cache figure not reported adds none
    body = {"prompt_tokens": prompt, "completion_tokens": usage.get("output_tokens")}
    body |= {key: usage[key] for key in ("cache_read_input_tokens", "cache_creation_input_tokens") if key in usage}
    return parse_usage(body), notes


def _sum(values: list[object]) -> object:
    """The sum of reported counts; the first value that is not an integer as it is (invalid, kept raw)."""
    for value in values:
        if not isinstance(value, int):
            return value
    return sum(values)  # type: ignore[arg-type]
