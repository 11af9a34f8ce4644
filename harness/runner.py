"""Replays one conversation: one chronology under one policy, model and repetition.

Turns within a conversation are sequential; conversations share nothing but the results
writer and the token counter (both thread-safe), so a batch can run them concurrently.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from harness.checks import Ledger, Observation, Trace, check_probe, unmeasured_rows
from harness.chronology import Chronology, Forget, UserTurn
from harness.errors import ModelError
from harness.messages import Message
from harness.models import CallRequest, Completion, Model
from harness.policy import Outcome, Policy, PolicyRegistry, PolicySpec
from harness.prompts import summarizer_messages, writer_messages
from harness.records import ResultsWriter
from harness.tokens import TokenCounter


@dataclass(frozen=True)
class Conversation:
    """The unit of work: independent of every other, so it can run anywhere, in any order."""

    chronology: Chronology
    policy: PolicySpec
    model: str
    repetition: int

    def identity(self) -> dict[str, Any]:
        return {"chronology": self.chronology.name, "policy": self.policy.label,
                "model": self.model, "repetition": self.repetition}  # fmt: skip


class Caller:
    """Makes and records every model call of a conversation; the policies' `AuxCalls`."""

    def __init__(self, conversation: Conversation, model: Model, counter: TokenCounter, sink: ResultsWriter):
        self.conversation, self.model, self.counter, self.sink = conversation, model, counter, sink
        self.aux: list[dict[str, Any]] = []  # records of the auxiliary calls of the current turn

    def answer(self, turn: UserTurn, view: list[Message]) -> tuple[Completion, dict[str, Any]]:
        record = self._call(CallRequest("answer", tuple(view), turn))
        if record["error"]:
            raise ModelError(record["error"])
        return record.pop("_completion"), record

    def summarize(self, turn: UserTurn, previous: str | None, answer: str, max_chars: int) -> str:
        messages = summarizer_messages(previous, turn.user, answer, max_chars)
        request = CallRequest("summarizer", messages, turn, previous_summary=previous,
                              exchange=(turn.user, answer), max_summary_chars=max_chars)  # fmt: skip
        return self._aux_call(request)

    def write_facts(self, turn: UserTurn, user_text: str) -> str:
        return self._aux_call(CallRequest("writer", writer_messages(user_text), turn, user_text=user_text))

    def _aux_call(self, request: CallRequest) -> str:
        record = self._call(request)
        self.aux.append(record)
        if record["error"]:
            raise ModelError(record["error"])
        return record.pop("_completion").text

    def _call(self, request: CallRequest) -> dict[str, Any]:
        started = time.perf_counter()
        completion, error, attempts = None, None, 1
        try:
            completion = self.model.complete(request)
            attempts = completion.attempts
        except ModelError as exc:
            error, attempts = str(exc), exc.attempts
        latency_ms = round((time.perf_counter() - started) * 1000, 3)
        record = {**self._record(request, completion, error, latency_ms), "attempts": attempts}
        self.sink.call(record)
        return {**record, "_completion": completion}

    def _record(self, request: CallRequest, completion: Completion | None, error: str | None,
                latency_ms: float) -> dict[str, Any]:  # fmt: skip
        tokens = self.counter.count(request.messages)
        usage = completion.usage if completion else None
        return {
            **self.conversation.identity(), "session": request.turn.session,
            "turn": request.turn.number, "kind": request.kind,
            "messages": [m.as_record() for m in request.messages],
            "response": completion.text if completion else None,
            "chars": tokens.chars, "estimate_tokens": tokens.estimate,
            "tiktoken_tokens": tokens.tiktoken, "tiktoken_encoding": self.counter.encoding_name,
            "reported_prompt_tokens": usage.prompt_tokens if usage else None,
            "reported_completion_tokens": usage.completion_tokens if usage else None,
            "latency_ms": latency_ms, "error": error,
        }  # fmt: skip


def aux_columns(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The `aux_*` cells of a turn: sums over its writer and summarizer calls.

    A reported total is blank (unknown) unless every auxiliary call reported it.
    """
    reported = [r for r in records if r["reported_prompt_tokens"] is not None]
    complete = len(reported) == len(records)
    local = [r["tiktoken_tokens"] for r in records]
    return {
        "aux_calls": len(records),
        "aux_chars": sum(r["chars"] for r in records),
        "aux_estimate_tokens": sum(r["estimate_tokens"] for r in records),
        "aux_tiktoken_tokens": None if None in local else sum(local),
        "aux_reported_calls": len(reported),
        "aux_reported_prompt_tokens": sum(r["reported_prompt_tokens"] for r in reported) if complete else None,
        "aux_reported_completion_tokens": (
            sum(r["reported_completion_tokens"] or 0 for r in reported)
            if complete and all(r["reported_completion_tokens"] is not None for r in reported) else None
        ),
    }  # fmt: skip


class Replay:
    """The state of one conversation's replay."""

    def __init__(self, conversation: Conversation, policy: Policy, caller: Caller, sink: ResultsWriter,
                 ledger: Ledger, live: bool) -> None:  # fmt: skip
        self.conversation, self.policy, self.caller, self.sink = conversation, policy, caller, sink
        self.ledger, self.live = ledger, live
        self.trace = Trace()
        self.ended: tuple[str, str] | None = None  # (status, why) once the replay has stopped

    def run(self) -> str:
        """Replay every turn; return the conversation's final status."""
        for turn in self.conversation.chronology.turns:
            if self.ended is not None:
                self._unmeasured(turn)
            elif isinstance(turn, Forget):
                self._forget(turn)
            else:
                self._exchange(turn)
        return self.ended[0] if self.ended else "complete"

    def _forget(self, event: Forget) -> None:
        outcome = self.policy.forget(event)
        retained = self.policy.retained()
        self.trace.add(event.number, None, None, [m.content for m in retained], outcome.dropped)
        session = self.conversation.chronology.sessions[0]
        self._turn_row(event.number, session, "forget", retained)
        self._facts(event.number, outcome)

    def _exchange(self, turn: UserTurn) -> None:
        view = self.policy.view(turn)
        scripted = turn.assistant is not None and not self.live
        record: dict[str, Any] = {}
        if scripted:
            answer = turn.assistant or ""
        else:
            try:
                completion, record = self.caller.answer(turn, view)
            except ModelError as exc:
                return self._failed(turn, view, str(exc))
            answer = completion.text
        self.caller.aux = []
        outcome = self._after_answer(turn, answer)
        retained = self.policy.retained()
        self.trace.add(turn.number, turn.session, [m.content for m in view], [m.content for m in retained],
                       outcome.dropped)  # fmt: skip
        status = "stopped" if outcome.stop else ("scripted" if scripted else "answered")
        self._turn_row(turn.number, turn.session, status, retained, view, record, outcome.stop)
        self._facts(turn.number, outcome)
        if turn.probe:
            seen = Observation([m.content for m in view], answer, [m.content for m in retained])
            self._probe_rows(turn, check_probe(self.ledger, self.trace, turn, seen))
        if outcome.stop:
            self.ended = ("stopped", f"policy stopped at turn {turn.number} ({outcome.stop})")

    def _after_answer(self, turn: UserTurn, answer: str) -> Outcome:
        try:
            return self.policy.after_answer(turn, answer, self.caller)
        except ModelError as exc:
            return Outcome(stop=f"aux_call_failed: {exc}")

    def _failed(self, turn: UserTurn, view: list[Message], error: str) -> None:
        self.ended = ("error", f"conversation ended by a model error at turn {turn.number}")
        self._turn_row(turn.number, turn.session, "error", self.policy.retained(), view, {}, error=error)
        self._unmeasured(turn)

    def _unmeasured(self, turn: UserTurn | Forget) -> None:
        if isinstance(turn, UserTurn) and turn.probe and self.ended:
            status, why = self.ended
            self._probe_rows(turn, unmeasured_rows(self.ledger, turn, status, why))

    def _probe_rows(self, turn: UserTurn, rows: list[dict[str, Any]]) -> None:
        for cells in rows:
            self.sink.probe({**self.conversation.identity(), "turn": turn.number, "probe": turn.probe,
                             "session": turn.session, **cells})  # fmt: skip

    def _facts(self, number: int, outcome: Outcome) -> None:
        if outcome.facts is not None:
            self.sink.facts({**self.conversation.identity(), "turn": number, **outcome.facts})

    def _turn_row(self, number: int, session: str, status: str, retained: list[Message],
                  view: list[Message] | None = None, call: dict[str, Any] | None = None,
                  stop: str | None = None, error: str | None = None) -> None:  # fmt: skip
        tokens = self.caller.counter.count(view) if view is not None else None
        call = call or {}
        self.sink.turn({
            **self.conversation.identity(), "turn": number, "session": session, "status": status,
            "stop_reason": stop, "error": error,
            "view_messages": len(view) if view is not None else None,
            "view_chars": tokens.chars if tokens else None,
            "estimate_tokens": tokens.estimate if tokens else None,
            "tiktoken_tokens": tokens.tiktoken if tokens else None,
            "reported_prompt_tokens": call.get("reported_prompt_tokens"),
            "reported_completion_tokens": call.get("reported_completion_tokens"),
            "latency_ms": call.get("latency_ms"),
            "retained_messages": len(retained), "retained_chars": sum(len(m.content) for m in retained),
            **aux_columns(self.caller.aux if status not in ("forget", "error") else []),
        })  # fmt: skip
        self.sink.view({**self.conversation.identity(), "turn": number, "session": session, "status": status,
                        "view": [m.as_record() for m in view] if view is not None else None,
                        "retained": [m.as_record() for m in retained]})  # fmt: skip


def run_conversation(conversation: Conversation, registry: PolicyRegistry, model: Model,
                     counter: TokenCounter, sink: ResultsWriter, ledger: Ledger | None = None,
                     live: bool = False) -> str:  # fmt: skip
    """Replay one conversation, streaming its records to `sink`; return its final status."""
    chronology = conversation.chronology
    system = Message("system", chronology.system, origin="system") if chronology.system else None
    policy = registry.create(conversation.policy, system)
    caller = Caller(conversation, model, counter, sink)
    return Replay(conversation, policy, caller, sink, ledger or Ledger(chronology), live).run()
