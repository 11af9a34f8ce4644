"""Makes and records every model call of one conversation.

Each call has a role: `answer`, `judge`, or the role a policy names for an extra call through
its `AuxCalls` (`TurnCalls.call`). Roles map to models (`--model-role ROLE=MODEL`; a role not
mapped uses the answering model). Each call is counted (characters, estimate, local
tokenizer), timed, recorded in `calls.jsonl` as it happens (`kind` = role), and served from the
response cache when the model is cacheable and the same call was made before by the model
that answers live (`harness.models.served`). With the cache on, identical calls made at the same time
(concurrent conversations) are sent once and shared (`harness.models.inflight`); the sharers' records
say `cached` and `shared`, with no attempt of their own. Identical calls of different policies in
one repetition are identical calls too, unless the cache keeps each policy's apart
(`--independent-samples`: the policy's label joins the key).

An answer call's request is the turn's request view, which the runner records in `views.jsonl`;
its record refers there instead of copying the view (`messages_from`), or results would grow
with the square of the conversation. An answer longer than `MAX_ANSWER_CHARS` is cut to that
length before it enters the conversation, and its record says so (`truncated`, `response_chars`).

Each record also carries the call's cacheable prefix (`harness.run.prefix`: what it shares with
the conversation's previous request of its kind and session to the same model) beside the
provider's own prompt-cache counts, when it reported them.
"""

from __future__ import annotations

import json
import time
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from harness.base.errors import ModelError
from harness.base.messages import Message
from harness.chronology import UserTurn
from harness.models import RESERVED_ROLES, RESPONSES_ROUTES, CallRequest, Completion, Model, ProviderRequest
from harness.models.cache import Damaged, ResponseCache, cache_key
from harness.models.lossy import as_entries
from harness.models.options import Models
from harness.models.ratelimit import Paced
from harness.models.served import ServedBy
from harness.policy.contract import AnswerUsage
from harness.policy.tokens import RequestTokens, RunningCount, TokenCounter
from harness.results.rows import JUDGE_FAILED, CallRecord
from harness.results.writer import ResultsWriter
from harness.run.conversation import Conversation
from harness.run.events import CallEvents, CallStats
from harness.run.judge import VERDICT_SCHEMA, judge_messages, parse_verdict, rubric_messages
from harness.run.judge_prompts import HARNESS, JudgePrompt
from harness.run.prefix import PrefixTracker

# The longest answer kept, in characters (about 25,000 tokens): a longer one, from a broken or
# hostile endpoint, would otherwise be stored and re-sent with every later turn.
MAX_ANSWER_CHARS = 100_000


@dataclass
class Caller:
    """The calls of one conversation."""

    conversation: Conversation
    models: Models
    counter: TokenCounter
    sink: ResultsWriter
    cache: ResponseCache | None = None
    stats: CallStats = field(default_factory=CallStats)
    aux: list[CallRecord] = field(default_factory=list)  # auxiliary call records of the current turn
    events: CallEvents | None = None  # told when each call starts and ends (the progress display)
    # The conversation's columns of every call record, worked out once (a policy's label is
    # built anew at each `key`).
    identity: dict[str, Any] = field(init=False)
    draw: int = field(init=False)  # which draw every call of this conversation asks for (`draw_of`)
    prefixes: PrefixTracker = field(init=False)  # each call's cacheable prefix (harness.run.prefix)

    def __post_init__(self) -> None:
        self.identity = self.conversation.key._asdict()
        self.prefixes = PrefixTracker(self.counter)
        self.draw = draw_of(self.conversation, independent=self.cache is None or self.cache.per_policy)

    def answer(
        self,
        turn: UserTurn,
        view: list[Message],
        tokens: RequestTokens,
        provider: ProviderRequest | None = None,
    ) -> tuple[Completion, CallRecord]:
        """The answer to `view`, which the caller records as this turn's request view;
        `tokens` are its figures, which the replay keeps as running sums (recounting the view
        here would read the whole history at every turn); `provider`: what the policy asks of its
        provider's API (`harness.policy.delegated.ProviderPolicy.provider_request`)."""
        request = CallRequest("answer", tuple(view), turn, provider=provider)
        record, completion = self._call(request, tokens)
        if completion is None:
            raise ModelError(record.error, record.attempts)
        return completion, record

    def start_turn(self) -> None:
        """Forget the previous turn's extra calls: `aux_cells` sums those of the turn under way."""
        self.aux = []

    def aux_cells(self) -> dict[str, Any]:
        """The `aux_*` cells of the turn under way (its policy's extra calls)."""
        return aux_columns(self.aux)

    @property
    def judging(self) -> bool:
        """Whether the run has a judge model."""
        return self.models.judge is not None

    def running_count(self) -> RunningCount:
        """The sizes of a list that changes a little each turn (a replay's view or retained
        state), kept as running sums by this conversation's token counter."""
        return RunningCount(self.counter)

    def for_turn(self, turn: UserTurn, answer_usage: AnswerUsage | None = None) -> TurnCalls:
        """The policy's `AuxCalls` for one turn: its extra calls, made and recorded here, and
        what the provider reported for the turn's answer call (None: none was made)."""
        return TurnCalls(self, turn, answer_usage)

    def judge(self, turn: UserTurn, prohibition: str, view: list[Message], answer: str) -> dict[str, Any]:
        """The judged cells of one prohibition at a probe; blank with a note when the call fails."""
        record, completion = self._call(
            CallRequest("judge", judge_messages(prohibition, view, answer), turn, VERDICT_SCHEMA)
        )
        if completion is None:
            return {
                "judged_in_view": None,
                "judged_in_answer": None,
                "judge_note": f"{JUDGE_FAILED}: {record.error}",
            }
        return parse_verdict(completion.text)

    def judge_rubric(
        self, turn: UserTurn, rubric: str, passes: str, answer: str, prompt: JudgePrompt = HARNESS
    ) -> dict[str, Any]:
        """The judged cells of one rubric expectation, asked through `prompt` (the item's
        benchmark's, harness.run.judge_prompts); blank with a note when the call fails."""
        messages = rubric_messages(turn.user, answer, rubric, prompt.template, prompt.system)
        record, completion = self._call(CallRequest("judge", messages, turn, prompt.schema))
        if completion is None:
            return {"judged_in_answer": None, "judge_note": f"{JUDGE_FAILED}: {record.error}"}
        return prompt.read(completion.text, passes)

    def aux_call(self, request: CallRequest) -> str:
        """Make a policy's extra call, kept in `aux` for the turn's `aux_*` cells; raise
        ModelError when it fails (the failure is recorded first)."""
        record, completion = self._call(request)
        self.aux.append(record)
        if completion is None:
            raise ModelError(record.error, record.attempts)
        return completion.text

    def _call(self, request: CallRequest, tokens: RequestTokens | None = None) -> tuple[CallRecord, Completion | None]:
        """Make and record one call; `tokens`: the request's figures when known (else counted here)."""
        if self.events is None:
            return self._make(request, tokens)
        self.events.call_started(request.kind)
        record: CallRecord | None = None
        try:
            record, completion = self._make(request, tokens)
            return record, completion
        finally:
            self.events.call_ended(request.kind, record)

    def _make(self, request: CallRequest, tokens: RequestTokens | None) -> tuple[CallRecord, Completion | None]:
        model = self.models.for_kind(request.kind)
        request = replace(request, draw=self.draw)
        key = self._cache_key(model, request)
        started = time.perf_counter()
        shared = False
        if key and self.cache:
            outcome, shared = self.cache.inflight.share(key, lambda: self._fetch(model, request, key))
            if shared:  # no request of its own: another call's response (or error), shared
                outcome = replace(
                    outcome, attempts=0, format_refusals=0, cached=outcome.completion is not None, paced=None
                )
        else:
            outcome = _ask(model, request)
        latency_ms = round((time.perf_counter() - started) * 1000, 3)
        completion = outcome.completion
        length = len(completion.text) if completion is not None else None
        if completion is not None and request.kind == "answer" and len(completion.text) > MAX_ANSWER_CHARS:
            completion = replace(completion, text=completion.text[:MAX_ANSWER_CHARS])
        if tokens is None:
            tokens = self.counter.count(request.messages)
        record = self._record(
            request, model, replace(outcome, completion=completion), tokens, length, latency_ms, shared
        )
        self.sink.call(record)
        self.stats.add(record)
        return record, completion

    def _fetch(self, model: Model, request: CallRequest, key: str) -> _Outcome:
        """The stored response if the model that answers live made it; else a live call, stored."""
        assert self.cache is not None
        scope = json.dumps(getattr(model, "cache_identity", None), sort_keys=True, default=str)
        found, notes, verdict = self.cache.get(key), (), None
        if isinstance(found, Damaged):  # edited or damaged on disk: never served
            found, notes = None, (found.note(),)
        listing = self.cache.live.listing(scope, getattr(model, "listing", lambda: None))
        if found is not None:
            asked = (getattr(model, "cache_identity", None) or {}).get("model")
            verdict = self.cache.live.verdict(scope, found[1], listing, asked)
            if verdict is None:
                return _Outcome(found[0], cached=True)
            notes = () if verdict == "unknown" else (verdict,)
        outcome = replace(_ask(model, request), notes=notes)
        if outcome.completion is not None:
            served = ServedBy.of(outcome.completion, listing)
            self.cache.live.learn(scope, served)
            self.cache.put(key, outcome.completion, served)
            moved = self.cache.live.moved(scope, found[1]) if found is not None and verdict == "unknown" else None
            outcome = replace(outcome, notes=(*outcome.notes, moved) if moved else outcome.notes)
        return outcome

    def _cache_key(self, model: Model, request: CallRequest) -> str | None:
        if self.cache is None:  # before `cache_identity`, which builds its mapping anew at every call
            return None
        identity = getattr(model, "cache_identity", None)
        if identity is None:
            return None
        policy = self.identity["policy"] if self.cache.per_policy else None  # --independent-samples
        return cache_key(identity, request, self.conversation.repetition, policy)

    def _record(
        self,
        request: CallRequest,
        model: Model,
        outcome: _Outcome,
        tokens: RequestTokens,
        length: int | None,
        latency_ms: float,
        shared: bool,
    ) -> CallRecord:
        completion, attempts, paced = outcome.completion, outcome.attempts, outcome.paced
        usage = completion.usage if completion else None
        prefix = self.prefixes.measure(model.name, request.kind, request.turn.session, request.messages, tokens)
        # A scripted output comes from the chronology: no model made it, and its time means nothing.
        scripted = completion is not None and completion.scripted
        return CallRecord(
            **self.identity,
            session=request.turn.session,
            turn=request.turn.number,
            kind=request.kind,
            call_model=None if scripted else model.name,
            scripted=scripted,
            # an answer's messages are this turn's request view in views.jsonl
            messages=None if request.kind == "answer" else [m.as_record() for m in request.messages],
            messages_from="views.jsonl" if request.kind == "answer" else None,
            response=completion.text if completion else None,
            response_chars=length,  # as the model returned it, before any cut
            truncated=completion is not None and length is not None and length > len(completion.text),
            chars=tokens.chars,
            estimate_tokens=tokens.estimate,
            tiktoken_tokens=tokens.tiktoken,
            tiktoken_encoding=self.counter.encoding_name,
            reported_prompt_tokens=usage.prompt_tokens if usage else None,
            reported_completion_tokens=usage.completion_tokens if usage else None,
            invalid_reported_usage=dict(usage.invalid) if usage and usage.invalid else None,
            latency_ms=None if scripted else latency_ms,
            attempts=0 if scripted else attempts,
            cached=outcome.cached,
            shared=shared,
            error=outcome.error,
            notes=[*(completion.notes if completion else ()), *outcome.notes],
            format_refusals=outcome.format_refusals,
            structured_output=completion.structured_form if completion else None,
            response_model=completion.response_model if completion else None,
            system_fingerprint=completion.fingerprint if completion else None,
            finish_reason=completion.finish_reason if completion else None,
            response_id=completion.response_id if completion else None,
            degraded=as_entries(completion.degraded) if completion else None,
            waits=paced.waits if paced else None,
            waited_ms=round(paced.waited_s * 1000) if paced else None,
            http_429=paced.throttled if paced else None,
            concurrency_low=paced.concurrency_low if paced else None,
            prefix_messages=prefix.messages,
            prefix_chars=prefix.chars,
            prefix_tiktoken_tokens=prefix.tiktoken,
            reported_cached_tokens=usage.cached_input if usage else None,
            reported_cache_write_tokens=usage.cache_write if usage else None,
            api=route.api if (route := request.for_api(*RESPONSES_ROUTES)) else None,
        )


@dataclass(frozen=True)
class _Outcome:
    """How one call went: its completion or error, and the requests it took."""

    completion: Completion | None
    error: str | None = None
    attempts: int = 0
    format_refusals: int = 0  # of `attempts`: structured-output forms the endpoint refused
    cached: bool = False  # no request of its own: stored, or shared with an identical call in flight
    notes: tuple[str, ...] = ()  # the caller's own notes (a stored response refused)
    paced: Paced | None = None  # what rate limits and 429s did to its requests; None: none sent through them


def _ask(model: Model, request: CallRequest) -> _Outcome:
    """One live call; a ModelError becomes the outcome's error."""
    try:
        completion = model.complete(request)
    except ModelError as exc:
        return _Outcome(None, str(exc), exc.attempts, exc.format_refusals, paced=_paced(exc.paced))
    return _Outcome(
        completion, attempts=completion.attempts, format_refusals=completion.format_refusals, paced=completion.paced
    )


def _paced(found: object) -> Paced | None:
    """A ModelError's `paced`, when it holds one (the base wing's error cannot name the type)."""
    return found if isinstance(found, Paced) else None


@dataclass(frozen=True)
class TurnCalls:
    """A policy's `AuxCalls` during one turn: each call is made and recorded by the conversation's Caller."""

    caller: Caller
    turn: UserTurn
    answer_usage: AnswerUsage | None = None  # the turn's answer call (`AuxCalls`); None: a scripted reply

    def call(
        self,
        role: str,
        messages: Sequence[Message],
        schema: Mapping[str, Any] | None = None,
        reference: Callable[[CallRequest], str | Completion] | None = None,
        provider: ProviderRequest | None = None,
    ) -> str:
        """The reply of the model mapped to `role`; raise ModelError when the call fails."""
        if not role.strip() or role in RESERVED_ROLES:
            raise ValueError(
                f"aux.call: role {role!r}: name the policy's own role (e.g. 'summarizer'); "
                f"{' and '.join(sorted(RESERVED_ROLES))} are the harness's"
            )
        request = CallRequest(role, tuple(messages), self.turn, schema, reference, provider=provider)
        return self.caller.aux_call(request)


# Draws of one policy are apart from another's by this much: more repetitions than any run makes.
POLICY_DRAWS = 1000


def draw_of(conversation: Conversation, independent: bool) -> int:
    """Which draw a conversation's calls ask for (the seed sent is `--seed` plus it): the
    repetition's index, so repetitions are separate draws; with samples independent per policy
    (`--independent-samples`, or no response cache), also a number of the policy's label
    (CRC-32, below 2**20) times `POLICY_DRAWS`, so two policies sending an identical request are
    separate draws too. Sent seeds stay below 2**31 for any `--seed` under about 10**9."""
    draw = conversation.repetition - 1
    if independent:
        draw += POLICY_DRAWS * (zlib.crc32(conversation.policy.label.encode()) % 2**20)
    return draw


def usage_of(
    turn: UserTurn,
    record: CallRecord | None,
    tokens: RequestTokens,
    answer: str,
    provider_reply: Mapping[str, Any] | None = None,
) -> AnswerUsage | None:
    """What a policy learns of a turn's answer call (`AuxCalls.answer_usage`): the usage its
    record holds, the characters of its request and answer, and what the provider reported of
    the policy's extras; None without a call."""
    if record is None:
        return None
    prompt, completion = record.reported_prompt_tokens, record.reported_completion_tokens
    return AnswerUsage(turn.number, prompt, completion, tokens.chars, len(answer), provider_reply)


def aux_columns(records: list[CallRecord]) -> dict[str, Any]:
    """The `aux_*` cells of a turn: sums over its policy's extra calls (summarizer, writer, ...).

    A reported total is blank (unknown) unless every auxiliary call reported it.
    """
    prompt = [r.reported_prompt_tokens for r in records]
    completion = [r.reported_completion_tokens for r in records]
    local = [r.tiktoken_tokens for r in records]
    return {
        "aux_calls": len(records),
        "aux_chars": sum(r.chars for r in records),
        "aux_estimate_tokens": sum(r.estimate_tokens for r in records),
        "aux_tiktoken_tokens": None if None in local else sum(local),
        "aux_reported_calls": sum(p is not None for p in prompt),
        "aux_reported_prompt_tokens": None if None in prompt else sum(prompt),
        "aux_reported_completion_tokens": None if None in completion else sum(completion),
    }
