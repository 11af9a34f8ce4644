"""Makes and records every model call of one conversation.

The answer, the summarizer and the writer may be different models. Each call is counted
(characters, estimate, local tokenizer), timed, recorded in `calls.jsonl` as it happens, and
served from the response cache when the model is cacheable and the same call was made before.

An answer call's request is the turn's request view, which the runner records in `views.jsonl`;
its record refers there instead of copying the view (`messages_from`), or results would grow
with the square of the conversation. An answer longer than `MAX_ANSWER_CHARS` is cut to that
length before it enters the conversation, and its record says so (`truncated`, `response_chars`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from harness.cache import ResponseCache, cache_key
from harness.chronology import UserTurn
from harness.errors import ModelError
from harness.judge import judge_messages, parse_verdict
from harness.messages import Message
from harness.models import CallKind, CallRequest, Completion, Model
from harness.prompts import summarizer_messages, writer_messages
from harness.records import ResultsWriter
from harness.tokens import TokenCounter

if TYPE_CHECKING:
    from harness.runner import Conversation

# The longest answer kept, in characters (about 25,000 tokens): a longer one, from a broken or
# hostile endpoint, would otherwise be stored and re-sent with every later turn.
MAX_ANSWER_CHARS = 100_000


@dataclass(frozen=True)
class Models:
    """Which model makes which kind of call."""

    answer: Model
    summarizer: Model
    writer: Model
    judge: Model | None = None  # None: no judged checks

    @classmethod
    def single(cls, model: Model) -> Models:
        return cls(model, model, model)

    def for_kind(self, kind: CallKind) -> Model:
        roles = {"answer": self.answer, "summarizer": self.summarizer, "writer": self.writer, "judge": self.judge}
        model = roles[kind]
        assert model is not None, f"no model for {kind} calls"
        return model


@dataclass
class CallStats:
    """Counts for progress lines: calls made, retries, errors, calls served from the cache."""

    calls: int = 0
    retries: int = 0
    errors: int = 0
    cached: int = 0

    def add(self, record: dict[str, Any]) -> None:
        self.calls += 1
        self.retries += max(record["attempts"] - 1, 0)
        self.errors += record["error"] is not None
        self.cached += record["cached"]


@dataclass
class Caller:
    """The calls of one conversation; also the policies' `AuxCalls`."""

    conversation: Conversation
    models: Models
    counter: TokenCounter
    sink: ResultsWriter
    cache: ResponseCache | None = None
    stats: CallStats = field(default_factory=CallStats)
    aux: list[dict[str, Any]] = field(default_factory=list)  # auxiliary call records of the current turn

    def answer(self, turn: UserTurn, view: list[Message]) -> tuple[Completion, dict[str, Any]]:
        """The answer to `view`, which the caller records as this turn's request view."""
        record, completion = self._call(CallRequest("answer", tuple(view), turn))
        if completion is None:
            raise ModelError(record["error"], record["attempts"])
        return completion, record

    def summarize(self, turn: UserTurn, previous: str | None, answer: str, max_chars: int) -> str:
        messages = summarizer_messages(previous, turn.user, answer, max_chars)
        request = CallRequest("summarizer", messages, turn, previous_summary=previous,
                              exchange=(turn.user, answer), max_summary_chars=max_chars)  # fmt: skip
        return self._aux_call(request)

    def write_facts(self, turn: UserTurn, user_text: str) -> str:
        return self._aux_call(CallRequest("writer", writer_messages(user_text), turn, user_text=user_text))

    def judge(self, turn: UserTurn, prohibition: str, view: list[Message], answer: str) -> dict[str, Any]:
        """The judged cells of one prohibition at a probe; blank with a note when the call fails."""
        record, completion = self._call(CallRequest("judge", judge_messages(prohibition, view, answer), turn))
        if completion is None:
            return {"judged_in_view": None, "judged_in_answer": None, "judge_note": f"judge call failed: {record['error']}"}
        return parse_verdict(completion.text)

    def _aux_call(self, request: CallRequest) -> str:
        record, completion = self._call(request)
        self.aux.append(record)
        if completion is None:
            raise ModelError(record["error"], record["attempts"])
        return completion.text

    def _call(self, request: CallRequest) -> tuple[dict[str, Any], Completion | None]:
        model = self.models.for_kind(request.kind)
        key = self._cache_key(model, request)
        started = time.perf_counter()
        completion = self.cache.get(key) if key and self.cache else None
        cached, error, attempts = completion is not None, None, 0
        if completion is None:
            try:
                completion = model.complete(request)
                attempts = completion.attempts
            except ModelError as exc:
                error, attempts = str(exc), exc.attempts
            if key and self.cache and completion is not None:
                self.cache.put(key, completion)
        latency_ms = round((time.perf_counter() - started) * 1000, 3)
        length = len(completion.text) if completion is not None else None
        if completion is not None and request.kind == "answer" and len(completion.text) > MAX_ANSWER_CHARS:
            completion = replace(completion, text=completion.text[:MAX_ANSWER_CHARS])
        record = self._record(request, model, completion, length, error, latency_ms, attempts, cached)
        self.sink.call(record)
        self.stats.add(record)
        return record, completion

    def _cache_key(self, model: Model, request: CallRequest) -> str | None:
        identity = getattr(model, "cache_identity", None)
        if self.cache is None or identity is None:
            return None
        return cache_key(identity, request, self.conversation.repetition)

    def _record(self, request: CallRequest, model: Model, completion: Completion | None, length: int | None,
                error: str | None, latency_ms: float, attempts: int, cached: bool) -> dict[str, Any]:  # fmt: skip
        tokens = self.counter.count(request.messages)
        usage = completion.usage if completion else None
        return {
            **self.conversation.identity(), "session": request.turn.session,
            "turn": request.turn.number, "kind": request.kind, "call_model": model.name,
            # an answer's messages are this turn's request view in views.jsonl
            "messages": None if request.kind == "answer" else [m.as_record() for m in request.messages],
            "messages_from": "views.jsonl" if request.kind == "answer" else None,
            "response": completion.text if completion else None,
            "response_chars": length,  # as the model returned it, before any cut
            "truncated": completion is not None and length is not None and length > len(completion.text),
            "chars": tokens.chars, "estimate_tokens": tokens.estimate,
            "tiktoken_tokens": tokens.tiktoken, "tiktoken_encoding": self.counter.encoding_name,
            "reported_prompt_tokens": usage.prompt_tokens if usage else None,
            "reported_completion_tokens": usage.completion_tokens if usage else None,
            "latency_ms": latency_ms, "attempts": attempts, "cached": cached, "error": error,
        }  # fmt: skip


def aux_columns(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The `aux_*` cells of a turn: sums over its writer and summarizer calls.

    A reported total is blank (unknown) unless every auxiliary call reported it.
    """
    prompt = [r["reported_prompt_tokens"] for r in records]
    completion = [r["reported_completion_tokens"] for r in records]
    local = [r["tiktoken_tokens"] for r in records]
    return {
        "aux_calls": len(records),
        "aux_chars": sum(r["chars"] for r in records),
        "aux_estimate_tokens": sum(r["estimate_tokens"] for r in records),
        "aux_tiktoken_tokens": None if None in local else sum(local),
        "aux_reported_calls": sum(p is not None for p in prompt),
        "aux_reported_prompt_tokens": None if None in prompt else sum(prompt),
        "aux_reported_completion_tokens": None if None in completion else sum(completion),
    }
