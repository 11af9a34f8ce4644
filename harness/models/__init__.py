"""The model seam: what the runner asks of any model, and what comes back.

A call has a role: `answer` (the reply to a user turn), `judge` (the optional judged checks),
or any role a policy names for an extra call (`summarizer`, `writer`, a plug-in's own). Every
call carries the exact messages sent (recorded in `calls.jsonl` with `kind` = role), and
optionally the JSON Schema its reply must follow (the adapter asks the endpoint for structured
output) and the policy's deterministic stand-in for the offline `reference` model.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from harness.base.capabilities import Capabilities
from harness.base.messages import Message
from harness.chronology import UserTurn
from harness.models.usage import Usage  # with the rule for a valid count; part of this seam

if TYPE_CHECKING:
    from harness.models.ratelimit import Paced

__all__ = ["CallKind", "CallRequest", "Completion", "Model", "ProviderRequest", "Usage", "capabilities_of"]

# A call's role: "answer", "judge", or the role a policy names for an extra call.
CallKind = str
RESERVED_ROLES = frozenset({"answer", "judge"})  # the harness's own calls; a policy names another role


RESPONSES_ROUTES = ("responses", "responses/compact")  # the OpenAI Responses API's routes (`ProviderRequest.api`)


@dataclass(frozen=True)
class ProviderRequest:
    """What a policy that delegates to a provider (`harness.policy.delegated`) asks of that
    provider's own API on a call: the Messages API's extras, which ride on the call, or a route of
    the Responses API, which replaces chat completions (a compaction item cannot be sent to chat
    completions, `truncation` exists only there). A model speaking `api` sends it
    (`harness.models.anthropic`, `harness.models.openai`); every other model ignores it (the
    offline ones answer with the policy's `reference`; `PolicyRegistry.check_offline` refuses a
    run pairing such a policy with a model of another API)."""

    # "anthropic" (the Messages API), or a Responses API route below the base URL (POST {base_url}/{api}).
    api: Literal["anthropic", "responses", "responses/compact"]
    # Top-level fields of the request body: added to the Messages API's (`context_management`,
    # `compaction`); the Responses API's own (`instructions`, `input` items, `truncation`), to which
    # the client adds `model` and, on `responses`, the run's sampling and answer cap.
    body: Mapping[str, Any]
    betas: tuple[str, ...] = ()  # the beta features it needs (`anthropic-beta`)
    # What the provider is sent instead of the call's messages: the client-side conversation that
    # the server edits itself (context editing); None: the call's messages.
    messages: tuple[Message, ...] | None = None


@dataclass(frozen=True)
class CallRequest:
    """One model call: its role, the messages sent, and what its reply must look like."""

    kind: CallKind  # the role; recorded as `kind` in calls.jsonl
    messages: tuple[Message, ...]
    turn: UserTurn  # the chronology turn being replayed (carries its scripted outputs)
    schema: Mapping[str, Any] | None = None  # JSON Schema of the reply: structured output is asked for
    # The offline `reference` model's reply, given by the policy that makes the call; the
    # reference model fails a call of a role with neither this nor a scripted output. It may give a
    # `Completion` instead of text, to carry usage an emulated provider reported (a provider
    # policy's compaction, harness.policy.delegated); text is the usual form.
    reference: Callable[[CallRequest], str | Completion] | None = field(default=None, compare=False)
    # Which draw of identical requests this call is (`harness.run.calls.draw_of`): a model that
    # takes a seed sends the run's seed plus this, so repetitions, and policies drawing their own
    # samples, are separate draws even at an endpoint that honours the seed.
    draw: int = 0
    provider: ProviderRequest | None = None  # a provider policy's request of its provider's API

    def for_api(self, *apis: str) -> ProviderRequest | None:
        """The call's provider request when it is written for one of `apis` (a model of another API ignores it)."""
        return self.provider if self.provider is not None and self.provider.api in apis else None


@dataclass(frozen=True)
class Completion:
    """A model's reply; `usage` is None when the provider reported none (never 0)."""

    text: str
    usage: Usage | None = None
    attempts: int = 1  # requests made for this call, retries included
    scripted: bool = False  # the chronology's scripted output (summary:, writer:), not a model's
    notes: tuple[str, ...] = ()  # what the figures do not show, e.g. a Retry-After wait that was capped
    # What the endpoint said about the reply (None: it did not say, or no endpoint made it).
    response_model: str | None = None  # the response's `model`: the name the server answered as
    fingerprint: str | None = None  # the response's `system_fingerprint`
    finish_reason: str | None = None  # `stop`, `length` (cut by the token cap), ...
    response_id: str | None = None  # the response's `id`
    structured_form: str | None = None  # `json_schema` or `json_object` when structured output was asked for
    format_refusals: int = 0  # requests refused for their structured-output form: counted in attempts, not retries
    # What a model that degrades on purpose (`reference:lossy`, harness.models.lossy) dropped,
    # ignored or replaced in this reply, one mapping each; None for every other model.
    degraded: tuple[Mapping[str, Any], ...] | None = None
    # What rate limits and 429s did to the call (harness.models.ratelimit); None: not paced (no endpoint).
    paced: Paced | None = None
    # What the provider reported of the request's `ProviderRequest` (Anthropic: the response's
    # `context_management`, its `applied_edits`); None: no extras were sent, or it said nothing.
    provider_reply: Mapping[str, Any] | None = field(default=None, hash=False)


class Model(Protocol):
    """Anything that can answer a `CallRequest`; raise `ModelError` when a call fails. A model
    may state its `capabilities` (`capabilities_of`)."""

    name: str

    def complete(self, request: CallRequest) -> Completion: ...


PROVIDER = Capabilities()  # a model that states nothing (a provider's, a plug-in's): it samples, it may judge


def capabilities_of(model: Model) -> Capabilities:
    """What `model` states it can do (its `capabilities`), else what a provider's model can."""
    return getattr(model, "capabilities", PROVIDER)
