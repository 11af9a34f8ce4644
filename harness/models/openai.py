"""`openai:<model>`: any OpenAI-compatible chat-completions endpoint (and OpenAI's Responses API for
the provider policies). The only module that imports `openai`.

OpenAI, Azure OpenAI, vLLM, Ollama, llama.cpp's server, LM Studio: one non-streaming chat
completion per attempt, the request's messages as role and content (a tool step as the wire
format has it: an assistant message's `tool_calls`, `role: tool` with `tool_call_id`;
`Message.as_openai`), sent through the openai client (its `post`: the body as built here, the
answer as the endpoint sent it). The request offers no tools: the replay never executes one, so
the model answers in text. An endpoint refuses a request whose tool messages are not paired (HTTP
400, not retried); the replay has recorded the split before the call (`harness.run.groups`).

- **Usage** is recorded as the endpoint reported it: `Usage(prompt, completion)`, and the
  prompt cache's counts under either provider's names (`harness.models.usage.CACHE_NAMES`), with a field
  the endpoint left out as None, and `usage=None` when it reported nothing. Never 0, never an
  estimate. A value that is not a sane token count (`harness.models.usage`: negative, huge, not an
  integer) is None too, and kept raw in `Usage.invalid`.
- **The timeout is a deadline**: connecting, sending and receiving the whole response of one
  attempt must fit in `timeout` seconds (`harness.models.deadline`), however slowly the bytes come.
- **A response is bounded in bytes**: at most `max_response_bytes` (`--max-response-bytes`)
  are read of any one response, counted decoded (a gzip body as it inflates). A longer answer or
  error body fails the call, final, never retried (the same endpoint would send it again); a
  longer `/v1/models` listing is taken as no listing.
- **Retries are ours**, not the SDK's (its client is built with `max_retries=0`), so every
  request is counted in `attempts`: 408, 429, 5xx, timeouts and connection failures are retried
  with capped exponential backoff and jitter, or after the endpoint's `Retry-After`, capped by
  the timeout (a capped wait is noted in `Completion.notes`, or in the error); other 4xx and
  malformed bodies are final. The last failure becomes a `ModelError` whose message holds the
  status and the endpoint's short reason, never a request header.
- **What the endpoint said** is kept with each completion: the response's `model`,
  `system_fingerprint`, `finish_reason` (`length`: cut by the token cap) and `id`, and which
  structured-output form was used. A refused form is counted in `attempts` and apart, in
  `format_refusals`: it is a negotiation, not a retry.
- **Sampling is per call kind**: `temperature`, `top_p` and `seed` as given, `max_tokens` from a
  mapping of call kind to cap (`harness.models.sampling`; a kind not listed takes the answer's).
- **A key only where one is needed**: without `--base-url` (the OpenAI API) the key's variable
  must be set; a self-hosted endpoint is sent a placeholder when it is not, and if the endpoint
  answers 401 the error says which variable to set.
- **No secret is kept**: a base URL with credentials, and a key an HTTP header cannot carry, are
  refused (`harness.models.endpoint`), and the key is redacted from every string of every body
  the endpoint sends back, answers included, in every form an echo gives it, before it is
  parsed, shortened or returned (`harness.models.redaction`).
- **Redirects stay within the endpoint's origin**: one to another scheme, host or port fails the
  call, naming both origins, and is not retried (`harness.models.deadline`): a 307 would post the
  conversation there, and the answer would be recorded as the endpoint's.
- **A request that carries a schema** (`CallRequest.schema`: the writer's, the judge's, any
  role's) asks for structured output, whatever its role. The first such call tries OpenAI's
  `json_schema` response format, then, if the endpoint refuses it (HTTP 400 or 422, or 500 as
  llama.cpp's server answers), the `json_object`-with-schema form llama.cpp accepts. The form
  that worked is remembered per instance; when both are refused the call fails with the
  endpoint's reasons (the bounded-facts host then records the extraction as rejected).
  Nothing is guessed.
- **Text as valid Unicode, quoted as escapes**: JSON may carry half of a UTF-16 pair alone
  (`"\\ud800"`), which no results file can hold; each such lone surrogate in the answer (or a
  raw usage value) becomes U+FFFD, and `Completion.notes` says how many
  (`harness.base.text.valid_unicode`). What is quoted of the endpoint in an error, and the short
  fields kept (`model`, `id`, ...), show their control characters as escapes (`\\x1b`,
  `harness.base.text.visible`): an error is printed on a terminal.
- **The Responses API, for a provider policy's calls** (`CallRequest.provider` with a Responses API
  route as its `api`, `harness.policy.delegated`):
  `POST /responses` (the route's body with `model`, `temperature`, `top_p` and the kind's cap as
  `max_output_tokens`; no seed, which the API does not take) read as the Responses API shapes
  its reply (its `message` items' `output_text`, `input_tokens`/`output_tokens`/
  `input_tokens_details.cached_tokens`, `status` and `incomplete_details` as the finish reason:
  `completed` is `stop`, cut by `max_output_tokens` is `length`), and `POST /responses/compact`
  (the route's body with `model`), whose reply's text is its compaction item's
  `encrypted_content`, as sent. The same retries, pacing, deadline, size cap and redaction as
  chat completions; the response cache keys the route and its body (`harness.models.cache`).
- **Thread-safe**: conversations may share one instance (each thread sends on an HTTP client of
  its own; the remembered structured-output form and the jitter source sit behind a lock).
"""

from __future__ import annotations

import math
import os
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

import openai

from harness.base import json_bounded
from harness.base.errors import InputError, ModelError
from harness.base.text import valid_unicode
from harness.models import RESPONSES_ROUTES, CallRequest, Completion, ProviderRequest
from harness.models.clients import EndpointModel
from harness.models.deadline import CrossOriginRedirect, ResponseTooLarge, bounded, deadline, http_client
from harness.models.endpoint import check_base_url, check_key, is_loopback, public_url
from harness.models.options import MAX_RESPONSE_BYTES
from harness.models.ratelimit import Pacer
from harness.models.redaction import Redactor
from harness.models.replies import describe, error_body, loaded, reason, replaced_note, said, short, valid_usage
from harness.models.retry import AttemptFailed, CallFailed, Retries, retry_after_seconds, retryable
from harness.models.served import listing_digest
from harness.models.usage import Usage, parse_usage

DEFAULT_KEY_ENV = "OPENAI_API_KEY"
PLACEHOLDER_KEY = "unused"  # sent to a loopback server when no key is set: local servers ignore it
CHAT_PATH = "/chat/completions"  # every call's route but a provider policy's (`CallRequest.provider`)

# What an endpoint answers to a response format it does not support: 400 (OpenAI, vLLM), 422
# (a validating server), 500 (llama.cpp's servers, whose validation errors surface as 500).
REFUSED_FORMAT_STATUSES = frozenset({400, 422, 500})

# The structured-output forms, in the order they are tried.
STRUCTURED_FORMS = ("json_schema", "json_object")


def response_format(form: str, role: str, schema: Mapping[str, Any]) -> dict[str, Any]:
    """The `response_format` of one structured-output form, named after the call's role."""
    if form == "json_schema":
        name = re.sub(r"[^A-Za-z0-9_-]", "_", role)[:64]  # the API's rule for schema names
        return {"type": "json_schema", "json_schema": {"name": name, "schema": dict(schema), "strict": True}}
    return {"type": "json_object", "schema": dict(schema)}


@dataclass(frozen=True)
class _Reply:
    """A completion's text, its reported usage, and what the endpoint said about it."""

    text: str
    usage: Usage | None
    model: str | None = None
    fingerprint: str | None = None
    finish_reason: str | None = None
    id: str | None = None
    replaced: int = 0  # lone surrogates replaced by U+FFFD in the text and the usage


class OpenAIModel(EndpointModel[openai.OpenAI]):
    """The `openai:<model>` model: a chat-completions endpoint reached through the `openai` package."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key_env: str = DEFAULT_KEY_ENV,
        timeout: float = 60.0,
        max_retries: int = 4,
        seed: int | None = None,
        temperature: float = 0.0,
        max_tokens: int | Mapping[str, int] | None = None,
        top_p: float | None = None,
        backoff_base: float = 0.5,
        backoff_cap: float = 8.0,
        max_retry_after: float | None = None,
        sleep: Callable[[float], None] = time.sleep,
        endpoint: str | None = None,
        server: Mapping[str, Any] | None = None,
        max_response_bytes: int = MAX_RESPONSE_BYTES,
        pacer: Pacer | None = None,
    ) -> None:
        _check_options(model, base_url, timeout, max_retries, max_response_bytes)
        self.endpoint = endpoint  # the endpoint's stable name for cache keys (default: the base URL)
        self.server = dict(server) if server else None  # what serves it, when the harness started it (`local`)
        self.model, self.name = model, f"openai:{model}"
        self.base_url, self.api_key_env = base_url, api_key_env
        self.timeout, self.max_retries = timeout, max_retries
        self.max_response_bytes = max_response_bytes  # decoded bytes read from one response, at most
        self.pacer = pacer  # rate limits and AIMD shared by every client of this model (None: unpaced)
        self.seed, self.temperature, self.top_p = seed, temperature, top_p
        # A cap per call kind (a kind not listed: the answer's); one number caps every kind.
        self.max_tokens = dict(max_tokens) if isinstance(max_tokens, Mapping) else max_tokens
        # A Retry-After wait is capped like an attempt: by the timeout unless told otherwise.
        capped_by = "the timeout" if max_retry_after is None else "the Retry-After cap"
        self._retries = Retries(
            max_retries,
            backoff_base,
            backoff_cap,
            timeout if max_retry_after is None else max_retry_after,
            capped_by,
            sleep,
        )
        self._secret = _api_key(self.name, api_key_env, base_url)  # None: the placeholder is sent
        self._redactor = Redactor(self._secret, api_key_env)  # applied to all the endpoint sends back
        self._structured_format: str | None = None  # the structured-output form this endpoint accepted
        # A proxy cannot reach the user's own loopback, so environment proxies are ignored there.
        trust_env = not is_loopback(base_url)
        self._client = openai.OpenAI(
            api_key=self._secret or PLACEHOLDER_KEY,
            base_url=base_url,
            timeout=timeout,
            max_retries=0,
            http_client=_http_client(trust_env),
        )
        # Each thread's: the model's client, on an HTTP client of the thread's own (harness.models.clients).
        super().__init__(lambda: self._client.with_options(http_client=_http_client(trust_env)))

    # --- the Model protocol ----------------------------------------------------------

    def complete(self, request: CallRequest) -> Completion:
        """One call, retried as needed; raise ModelError (safe to record) when it fails."""
        params, notes = self._params(request), list[str]()  # what the figures do not show (a capped wait)
        route = request.for_api(*RESPONSES_ROUTES)  # the path the call is posted to, below the base URL:
        form, refusals, path = None, 0, CHAT_PATH if route is None else f"/{route.api}"
        with self._paced(request, params) as tally:
            try:
                if request.schema is not None and path == CHAT_PATH:
                    reply, attempts, form, refusals = self._complete_structured(
                        params, request.kind, request.schema, notes
                    )
                else:
                    reply, attempts = self._sent(lambda: self._attempt(params, path), notes)
            except CallFailed as failure:
                raise self._error(describe(failure), failure.attempts, notes, paced=tally.paced) from None
            except ModelError as error:  # structured output refused: what pacing did is the call's too
                error.paced = tally.paced
                raise
        if reply.replaced:
            notes.append(replaced_note(reply.replaced))
        return Completion(
            text=reply.text,
            usage=reply.usage,
            attempts=attempts,
            notes=tuple(notes),
            response_model=reply.model,
            fingerprint=reply.fingerprint,
            finish_reason=reply.finish_reason,
            response_id=reply.id,
            structured_form=form,
            format_refusals=refusals,
            paced=tally.paced,
        )

    @property
    def structured_format(self) -> str | None:
        """The structured-output form the endpoint accepted (`json_schema`, `json_object`), if known yet."""
        with self._lock:
            return self._structured_format

    def describe(self) -> dict[str, Any]:
        """The model's settings for the manifest and cache keys; no secret, only the variable's name."""
        return {
            "name": self.name,
            "model": self.model,
            "base_url": public_url(self.base_url),
            "api_key_env": self.api_key_env,
            "timeout": self.timeout,
            "max_retries": self.max_retries,
            "max_response_bytes": self.max_response_bytes,
            "seed": self.seed,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_tokens": self.max_tokens,
            "structured_output_forms": list(STRUCTURED_FORMS),
            "key_set": self._secret is not None,
            "server": self.server,
        }

    @property
    def cache_identity(self) -> dict[str, Any]:
        """What determines a response besides the messages: the response cache's key material."""
        return {
            "endpoint": self.endpoint or public_url(self.base_url),
            "model": self.model,
            "seed": self.seed,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_tokens": self.max_tokens,
        }

    def listing(self) -> str | None:
        """A digest of what the endpoint's `/v1/models` lists (`harness.models.served`); None when it lists
        nothing usable or does not answer. One request, never retried."""
        return listing_digest(self.listed(), self.model)

    def listed(self) -> object | None:
        """The endpoint's `/v1/models` body, redacted; None when it does not answer with JSON
        within `max_response_bytes`. One request, never retried."""
        try:
            with deadline(self.timeout), bounded(self.max_response_bytes):
                content = self._client.models.with_raw_response.list().content
            return self._redactor.json(json_bounded.loads(content, what="the model listing"))
        except (openai.OpenAIError, CrossOriginRedirect, ResponseTooLarge, ValueError):
            return None

    def close(self) -> None:
        """Close the HTTP clients (idempotent)."""
        super().close()
        self._client.close()

    # --- internals -------------------------------------------------------------------

    def _params(self, request: CallRequest) -> dict[str, Any]:
        if (route := request.for_api(*RESPONSES_ROUTES)) is not None:
            return self._responses_params(request.kind, route)
        params: dict[str, Any] = {
            "model": self.model,
            "messages": [m.as_openai() for m in request.messages],
            "temperature": self.temperature,
        }
        if self.seed is not None:
            params["seed"] = self.seed + request.draw
        if self.top_p is not None:
            params["top_p"] = self.top_p
        cap = self.cap(request.kind)
        if cap is not None:
            params["max_tokens"] = cap
        return params

    def _responses_params(self, kind: str, route: ProviderRequest) -> dict[str, Any]:
        """A Responses API body: the route's own fields, the model, and on `responses` the run's
        temperature, `top_p` and answer cap (`max_output_tokens`); the API takes no seed, and
        `responses/compact` no sampling at all."""
        params: dict[str, Any] = {"model": self.model, **route.body}
        if route.api == "responses":
            params["temperature"] = self.temperature
            if self.top_p is not None:
                params["top_p"] = self.top_p
            cap = self.cap(kind)
            if cap is not None:
                params["max_output_tokens"] = cap
        return params

    def cap(self, kind: str) -> int | None:
        """The `max_tokens` sent with a call of `kind` (None: not sent)."""
        if isinstance(self.max_tokens, dict):
            return self.max_tokens.get(kind, self.max_tokens.get("answer"))
        return self.max_tokens

    def _complete_structured(
        self, params: dict[str, Any], role: str, schema: Mapping[str, Any], notes: list[str]
    ) -> tuple[_Reply, int, str, int]:
        """Negotiate structured output on the first call with a schema; later calls use what worked.
        Return the reply, the requests made, the form used and how many requests a form was refused."""
        known = self.structured_format
        forms = [known] if known else list(STRUCTURED_FORMS)
        attempts, refusals = 0, []
        for form in forms:
            # While negotiating, a 400, 422 or 500 refuses the form: it is not retried as transient.
            final = REFUSED_FORMAT_STATUSES if known is None else frozenset()
            try:
                asked = {**params, "response_format": response_format(form, role, schema)}
                result, used = self._sent(partial(self._attempt, asked), notes, final)
            except CallFailed as failure:
                attempts += failure.attempts
                if known is None and failure.status in REFUSED_FORMAT_STATUSES:
                    refusals.append(f"{form}: {describe(failure)}")
                    continue
                raise self._error(describe(failure), attempts, notes, len(refusals)) from None
            with self._lock:
                self._structured_format = form
            return result, attempts + used, form, len(refusals)
        raise self._error(
            f"the endpoint refused structured output ({'; '.join(refusals)}); the reply is not guessed",
            attempts,
            notes,
            len(refusals),
        )

    def _attempt(self, params: dict[str, Any], path: str = CHAT_PATH) -> _Reply:
        """One request, within one deadline; its failure is classified as the openai client
        classifies it (a timeout: timed out; any other request error: connection failed, named
        after its cause; a status outside 2xx: the body's `error` object; a redirect to another
        origin: refused, `harness.models.deadline`), and its reason never carries a header. The body comes back as the endpoint sent it (`cast_to=bytes`): it is
        redacted before it is parsed."""
        try:
            with deadline(self.timeout), bounded(self.max_response_bytes):
                content = self._thread_client().post(path, body=params, cast_to=bytes)
        except ResponseTooLarge as error:
            raise AttemptFailed(
                f"response too large: the body ran past {error.limit:,} bytes (decoded); if the endpoint "
                "means to send that much, raise --max-response-bytes"
            ) from None
        except openai.APITimeoutError:
            raise AttemptFailed(f"timed out: no complete response within {self.timeout:g}s", retryable=True) from None
        except openai.APIConnectionError as error:
            raise AttemptFailed(f"connection failed ({type(error.__cause__).__name__})", retryable=True) from None
        except openai.APIStatusError as error:
            raise self._refused(error.response.status_code, error.response.text, error.response.headers) from None
        except CrossOriginRedirect as error:  # final: the endpoint would redirect again
            raise AttemptFailed(str(error)) from None
        return PARSERS[path](content, self._redactor)

    def _refused(self, status: int, body: str, headers: Mapping[str, str]) -> AttemptFailed:
        """An answer outside 2xx as a failed attempt: the endpoint's short reason, redacted, and its Retry-After."""
        why = reason(self._redactor.json(error_body(body)))
        if status == 401 and self._secret is None:  # a keyless endpoint turned out to need one
            why += (
                f"; the endpoint wants an API key: set the environment variable {self.api_key_env} "
                "(or name another variable with --api-key-env)"
            )
        return AttemptFailed(why, status=status, retryable=retryable(status), retry_after=retry_after_seconds(headers))


# --- helpers -----------------------------------------------------------------------------


def _parse_completion(content: bytes, redactor: Redactor) -> _Reply:
    """A chat-completions body -> (text, usage), the key redacted from every string in it;
    raise AttemptFailed (final) when it is malformed."""
    data = loaded(content, redactor)
    choices = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(choices, list) or not choices:
        raise AttemptFailed("malformed response: no choices")
    message = choices[0].get("message") if isinstance(choices[0], dict) else None
    if not isinstance(message, dict):
        raise AttemptFailed("malformed response: choices[0] has no message")
    text = message.get("content")
    if not isinstance(text, str):
        refusal = message.get("refusal")
        if isinstance(refusal, str) and refusal:
            raise AttemptFailed(f"the model refused: {short(refusal)}")
        raise AttemptFailed("malformed response: choices[0].message has no text content")
    text, replaced = valid_unicode(text)
    usage, also = valid_usage(parse_usage(data.get("usage")))
    return _Reply(
        text,
        usage,
        said(data.get("model")),
        said(data.get("system_fingerprint")),
        said(choices[0].get("finish_reason")),
        said(data.get("id")),
        replaced + also,
    )


def _parse_response(content: bytes, redactor: Redactor) -> _Reply:
    """A Responses API body (`POST /responses`) -> its output text (the `output_text` parts of its
    `message` items, in order), usage, and what it said; raise AttemptFailed (final) when malformed.
    The finish reason takes the chat-completions names the reports read: `completed` is `stop`,
    `incomplete` for `max_output_tokens` is `length` (cut by the cap), another incomplete its reason."""
    data = loaded(content, redactor)
    output = data.get("output") if isinstance(data, dict) else None
    if not isinstance(data, dict) or not isinstance(output, list):
        raise AttemptFailed("malformed response: no output")
    parts = [
        part.get("text")
        for item in output
        if isinstance(item, dict) and item.get("type") == "message"
        for part in (item.get("content") if isinstance(item.get("content"), list) else [])
        if isinstance(part, dict) and part.get("type") == "output_text"
    ]
    if not parts or not all(isinstance(text, str) for text in parts):
        raise AttemptFailed("malformed response: no message with output text")
    text, replaced = valid_unicode("".join(parts))
    usage, also = valid_usage(parse_usage(_chat_usage(data.get("usage"))))
    status, details = data.get("status"), data.get("incomplete_details")
    why = details.get("reason") if isinstance(details, dict) else None
    finish = {"completed": "stop"}.get(status) if status != "incomplete" else INCOMPLETE.get(why, why)
    return _Reply(text, usage, said(data.get("model")), None, said(finish), said(data.get("id")), replaced + also)


def _parse_compaction(content: bytes, redactor: Redactor) -> _Reply:
    """A `POST /responses/compact` body -> its compaction item's `encrypted_content` as the text
    (kept sealed: the harness never reads it), and the usage the compaction reported."""
    data = loaded(content, redactor)
    output = data.get("output") if isinstance(data, dict) else None
    items = (
        [i for i in output if isinstance(i, dict) and i.get("type") == "compaction"] if isinstance(output, list) else []
    )
    sealed = items[-1].get("encrypted_content") if items else None
    if not isinstance(data, dict) or not isinstance(sealed, str) or not sealed:
        raise AttemptFailed("malformed response: no compaction item with encrypted_content")
    usage, also = valid_usage(parse_usage(_chat_usage(data.get("usage"))))
    return _Reply(sealed, usage, said(data.get("model")), None, None, said(data.get("id")), also)


def _chat_usage(usage: object) -> object:
    """A Responses API `usage` under the chat-completions names `parse_usage` reads (one reader of
    counts): `input_tokens` as `prompt_tokens`, `output_tokens` as `completion_tokens`, the cache's
    under `prompt_tokens_details`; anything else (None, not an object) as it came."""
    if not isinstance(usage, dict):
        return usage
    details = usage.get("input_tokens_details")
    return {
        "prompt_tokens": usage.get("input_tokens"),
        "completion_tokens": usage.get("output_tokens"),
        "prompt_tokens_details": details if isinstance(details, dict) else None,
    }


INCOMPLETE = {"max_output_tokens": "length"}  # a Responses cut by the cap, as chat completions name it
# Each route's reader of a 2xx body.
PARSERS: dict[str, Callable[[bytes, Redactor], _Reply]] = {
    CHAT_PATH: _parse_completion,
    "/responses": _parse_response,
    "/responses/compact": _parse_compaction,
}


def _http_client(trust_env: bool) -> openai.DefaultHttpxClient:
    """The openai client's kind of HTTP client, its requests under the calling thread's deadline
    (`timeout` bounds a whole attempt, not each read), environment proxies included with `trust_env`."""
    return http_client(openai.DefaultHttpxClient, trust_env, openai.DEFAULT_CONNECTION_LIMITS)


def _api_key(name: str, variable: str, base_url: str | None) -> str | None:
    """The key from `variable`, checked (`harness.models.endpoint.check_key`: one an HTTP header can
    carry, not in the URL); None (the placeholder is sent) for any self-hosted endpoint (a
    `--base-url` or `OPENAI_BASE_URL`) when it is not set: a 401 from it then names the variable to set."""
    check_key(name, variable, base_url)
    return os.environ.get(variable) or None


def _check_options(model: str, base_url: str | None, timeout: float, max_retries: int, max_bytes: int) -> None:
    if not model.strip():
        raise InputError("--model openai:NAME: the model name is empty (e.g. openai:gpt-4o-mini)")
    if base_url is None:  # the openai package then reads OPENAI_BASE_URL: the same rules apply
        check_base_url(os.environ.get("OPENAI_BASE_URL"), "OPENAI_BASE_URL")
    check_base_url(base_url)
    if not math.isfinite(timeout) or timeout <= 0:
        raise InputError(f"timeout must be a positive, finite number of seconds (got {timeout})")
    if max_retries < 0:
        raise InputError(f"max retries must be 0 or more (got {max_retries})")
    if max_bytes < 1:
        raise InputError(f"max response bytes must be 1 or more (got {max_bytes})")
