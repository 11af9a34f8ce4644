"""The policy contract: what a plug-in implements (`Policy`, `PolicyFactory`), what it reports
(`Outcome`, `Drop`, `TriggerCount`), the extra calls it may make (`AuxCalls`), what it may learn
of the turn's answer call (`AnswerUsage`), its parameters (`Param`) and its spec as named on the
command line and in results (`PolicySpec`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Protocol

from harness.base.messages import Message
from harness.base.params import Param
from harness.chronology.types import Forget, UserTurn
from harness.models import CallRequest, Completion, ProviderRequest

# Maximums the built-in policies declare (a third party may use them): counts of turns beyond any
# chronology's (one holds at most 50,000 values, harness.chronology.safe_yaml), so a larger value
# means the same as this one; token and character counts far beyond any model's context.
MAX_TURNS = 100_000
MAX_TOKENS = 100_000_000
MAX_CHARS = 100_000_000


# Why something left the retained state (docs/chronologies.md, "Where it was lost"): `replaced`
# is a fact a correction of its key replaced in a fact store; the checks
# add `window`, `other-session`, `stopped`, `error` and `untraced` for what no drop explains.
Cause = Literal["reduction", "summary", "eviction", "replaced", "not-stored", "forget", "tool-collapse", "tool-clear"]

# Causes of what a turn's request view left out while the retained state still holds it (a
# view-only edit, such as clear-tool-uses clearing a tool result): a `Drop` with one of them,
# reported at that turn, names the cause of a departure from that same turn's view, which would
# otherwise read `window`.
VIEW_CAUSES = frozenset({"tool-clear"})


# Where a retained message sits, by its origin, for residue.csv: a summary, the fact store, the
# pinned statements (`harness.policy.pinning`); a message of any other origin is in the policy's
# history, which a policy may name otherwise with `history_place` (retrieval's history is the
# index it retrieves from).
PLACES = {"summary": "summary", "facts": "fact store", "pinned": "pinned"}


@dataclass(frozen=True)
class Drop:
    """Something the retained state dropped at a turn, why in words, and the cause category."""

    text: str
    why: str  # e.g. "evicted from the fact store by new key version at turn 6"
    cause: Cause


@dataclass(frozen=True)
class TriggerCount:
    """The token count a policy's trigger compared with its limit at a turn, and what counted it.

    `counter` is what counted: `tiktoken`, `estimate` (characters/4) or `provider` (the
    provider-reported usage of the session's latest answer call, `harness.policy.counters`).
    `tokens` is None when nothing could be counted: `status` then says `unknown` (the provider
    reported nothing to count from) or `unavailable` (the tiktoken encoding cannot be loaded
    offline), and a trigger that sees None does not fire. `how` says it in words for the note.
    """

    counter: str
    tokens: int | None
    status: str  # counted | unknown | unavailable
    how: str

    def exceeds(self, limit: int) -> bool:
        """Whether the count is above `limit`; never when it is unknown or unavailable."""
        return self.tokens is not None and self.tokens > limit

    def describe(self) -> str:
        """`812 tokens (tiktoken cl100k_base)`, or `unknown (...)`: the count in words."""
        return f"{self.tokens} tokens ({self.how})" if self.tokens is not None else f"{self.status} ({self.how})"


@dataclass
class Outcome:
    """What a policy reports after a turn or a forget."""

    stop: str | None = None  # a reason (e.g. `summary_too_long:812`): the replay stops here
    # What the retained state dropped at this turn, so the checks can say where and why a
    # prohibition or value was lost.
    dropped: list[Drop] = field(default_factory=list)
    facts: dict[str, Any] | None = None  # for fact policies: the facts.jsonl payload of this turn
    # What the policy says about this turn that its view and retained state do not show (e.g.
    # the token count it selected turns by), written to turns.csv `policy_note`.
    note: str | None = None
    # The count the policy's (first) token trigger saw at this turn, written to turns.csv
    # `trigger_counter`, `trigger_tokens` and `trigger_status`; None: it has no token trigger.
    trigger: TriggerCount | None = None
    # Messages whose presence in this turn's request view the provider's own report put in doubt
    # (its context edits differ from the policy's prediction, `policies.anthropic_context_editing`):
    # "in view" of what only they state is unknown at this turn (`harness.run.trace.Trace.dispute`).
    disputed: tuple[Message, ...] = ()


@dataclass(frozen=True)
class AnswerUsage:
    """This turn's answer call as its provider reported it, and the size of what it measured.

    `prompt_tokens` / `completion_tokens` are the provider-reported usage, None when it reported
    none (the offline `reference` model never does) or an invalid value. `request_chars` is the
    characters of the request view sent (turns.csv `view_chars`: each message's `Message.text`),
    `answer_chars` those of the answer taken into the conversation.
    """

    turn: int
    prompt_tokens: int | None
    completion_tokens: int | None
    request_chars: int
    answer_chars: int
    # What the provider reported of the call's provider extras (`Completion.provider_reply`: the
    # Messages API's `context_management`); None: none were sent or it said nothing.
    provider_reply: Mapping[str, Any] | None = None


def answer_usage(aux: AuxCalls) -> AnswerUsage | None:
    """The `answer_usage` of `aux`, or None: an `AuxCalls` written before it existed (a test's
    fake, a third party's runner) has none, and the turn then counts as having no answer call."""
    usage = getattr(aux, "answer_usage", None)
    return usage if isinstance(usage, AnswerUsage) else None


class AuxCalls(Protocol):
    """Model calls a policy may make besides the answer, during `after_answer`.

    `call(role, messages, schema=None, reference=None)` sends `messages` to the model the user
    mapped to `role` (`--model-role ROLE=MODEL`; the answering model by default) and returns its
    text; the runner records the call in `calls.jsonl` with `kind` = role. With a `schema` (a
    JSON Schema), the model is asked for structured output. `reference` is the policy's
    deterministic stand-in, `(CallRequest) -> str`, which the offline `reference` model replies
    with (a chronology's scripted output for the role, if any, comes first); it may return a
    `Completion` instead of text, whose `usage` is then recorded as the call's reported usage (an
    emulated provider's, `harness.policy.delegated`). A failed call
    raises `ModelError`; a policy that lets it through stops its replay at that turn. The
    roles `answer` and `judge` are the harness's own calls: a policy names its own.

    Optionally (read it with `answer_usage(aux)`, which gives None where it is absent), the
    attribute `answer_usage`: this turn's answer call as its provider reported it
    (`AnswerUsage`), or None when the turn made no answer call (a scripted reply), so a policy
    can trigger on the provider's count as cline and Pydantic AI do (`harness.policy.counters`).

    `provider` (keyword only in use): a policy that delegates to a provider gives what the call asks
    of its provider's API (`ProviderRequest`: a compaction asked of the Messages API, or the
    Responses API's `responses/compact`); a model of that API sends it, every other model ignores
    it (`harness.policy.delegated`).
    """

    def call(
        self,
        role: str,
        messages: Sequence[Message],
        schema: Mapping[str, Any] | None = None,
        reference: Callable[[CallRequest], str | Completion] | None = None,
        provider: ProviderRequest | None = None,
    ) -> str: ...


class Policy(Protocol):
    """One conversation's context policy. Created per conversation, never shared.

    A policy that delegates to a provider is a `harness.policy.delegated.ProviderPolicy`: what its
    answer call asks of the provider's API (`provider_request`) and what the provider reported of
    it (`answer_usage(aux).provider_reply`) cross there."""

    def view(self, turn: UserTurn) -> Sequence[Message]:
        """The request view for this user turn: exactly the messages sent to the model.

        A list, or a `harness.base.sequences.Joined` that shares a long history's storage (the
        harness then compares it with the previous view without reading the shared part)."""
        ...

    def after_answer(self, turn: UserTurn, answer: str, aux: AuxCalls) -> Outcome:
        """Take in a completed exchange (the answer is the model's, or the scripted reply)."""
        ...

    def forget(self, event: Forget) -> Outcome:
        """Apply a `forget` event of the chronology."""
        ...

    def retained(self) -> Sequence[Message]:
        """The retained state after the last turn, as messages (for sizes and checks)."""
        ...


class PolicyFactory(Protocol):
    """What an entry point names: a class with a name, a description and parameters.

    Optionally `sets`, the named sets it belongs to (`("deployed",)`): `--policy SET` runs the
    seed's comparison and the set's members. A plain `harness run` runs every installed policy
    unless its sets include `opt_in` (then it runs only when it or one of its sets is named);
    `seed` is the seed's comparison, which a plug-in cannot join.
    Optionally `shared_across_sessions = True`, for a policy that keeps one state for every
    business session (a shared fact store): its drops then explain a loss in any session, and
    a subject stated in another session is not reported as `other-session`.
    Optionally `history_place`, what the policy calls its retained history in residue.csv
    (`"history"` when absent; retrieval says `"index"`, the history it retrieves from).
    Optionally `roles`, the roles of its extra calls (`aux.call(role, ...)`), e.g.
    `("summarizer",)`, or `()` for none: `--model-role ROLE=MODEL` for a role that no policy of
    the run declares is then refused (a misspelt role would otherwise map nothing). A policy
    without `roles` may call any role, and a run with one accepts any `--model-role`.
    Optionally `provider`, the provider API a policy delegates to (`"OpenAI Responses API"`),
    which the harness reaches through its offline emulator (`harness.policy.delegated`), and
    optionally `model_prefix` (`"anthropic:"`), the models of that API that reach it for real: a
    run naming it with any other model that is not offline is refused at start.
    """

    name: ClassVar[str]
    description: ClassVar[str]
    params: ClassVar[tuple[Param, ...]]

    def __call__(self, system: Message | None, **params: Any) -> Policy: ...


@dataclass(frozen=True)
class PolicySpec:
    """A policy with its parameters, as named on the command line and in results."""

    name: str
    params: Mapping[str, int | float | str] = field(default_factory=dict)
    defaults: Mapping[str, int | float | str] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """`name`, plus `:k=v,...` for parameters that differ from the defaults."""
        changed = [f"{k}={v}" for k, v in self.params.items() if self.defaults.get(k) != v]
        return f"{self.name}:{','.join(changed)}" if changed else self.name

    def as_record(self) -> dict[str, Any]:
        return {"label": self.label, "name": self.name, "params": dict(self.params)}


POLICY_METHODS = ("view", "after_answer", "forget", "retained")
