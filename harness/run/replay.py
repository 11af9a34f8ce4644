"""Replays one conversation: one chronology under one policy, model and repetition.

Turns within a conversation are sequential; conversations share nothing but the results
writer and the token counter (both thread-safe), so a batch can run them concurrently.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from harness.base.errors import ModelError
from harness.base.messages import Message
from harness.chronology import Chronology, Forget, UserTurn
from harness.chronology.ledger import Ledger
from harness.models import Model
from harness.models.cache import ResponseCache
from harness.models.catalog import capabilities_named
from harness.models.options import Models
from harness.policy import Outcome, Policy, PolicyRegistry
from harness.policy.contract import AnswerUsage
from harness.policy.delegated import ProviderPolicy
from harness.policy.tokens import TokenCounter
from harness.results.rows import EXPECT, NOT_ASKED, CallRecord, ProbeCells, ProbeRow, ResidueRow, TurnRow
from harness.results.views import kept
from harness.results.writer import ResultsWriter
from harness.run.calls import Caller, aux_columns, usage_of
from harness.run.checks import check_probe, unmeasured_rows
from harness.run.conversation import Conversation
from harness.run.events import CallEvents, Finished
from harness.run.groups import GroupCheck, violations_text
from harness.run.judge import prohibition_text
from harness.run.judge_prompts import prompt_for
from harness.run.presence import Presence
from harness.run.residue import Residue
from harness.run.trace import Trace
from harness.run.turnstate import Changes, Sent, TurnState

AUX_FAILED = "aux_call_failed: "  # the stop reason when a policy's own call failed


class Replay:
    """The state of one conversation's replay; what one turn changed is its `TurnState`."""

    def __init__(
        self,
        conversation: Conversation,
        policy: Policy,
        caller: Caller,
        sink: ResultsWriter,
        ledger: Ledger,
        live: bool,
        shared: bool = False,
        history: str = "history",
    ) -> None:
        self.conversation, self.policy, self.caller, self.sink = conversation, policy, caller, sink
        self.ledger, self.live = ledger, live
        # Which subjects each session's view and the retained state hold, turn by turn; `shared`:
        # the policy keeps one state for every session (its drops explain any session's losses);
        # `history`: what the policy calls its retained history (residue.csv's place).
        self.trace = Trace(Presence(conversation.chronology, ledger.values()), shared, history)
        self.residue = Residue(ledger, self.trace)  # what it keeps of corrected and forgotten values
        # The invariant every policy keeps (split tool groups, the system message, user messages)
        self.groups = GroupCheck(conversation.chronology, policy_system(conversation.chronology))
        self.changes = Changes(caller.running_count)  # the views and retained state, turn to turn
        # Once the replay has stopped: the probes' status (stopped or error), why, and the
        # conversation's (error too when a failed call of the policy's own stopped it).
        self.ended: tuple[str, str, str] | None = None

    def run(self) -> str:
        """Replay every turn; return the conversation's final status."""
        for turn in self.conversation.chronology.turns:
            if self.ended is not None:
                self._unmeasured(turn)
            elif isinstance(turn, Forget):
                self._forget(turn)
            else:
                self._exchange(turn)
        return self.ended[2] if self.ended else "complete"

    def _forget(self, event: Forget) -> None:
        # A forget's outcome is what it dropped, its note and its facts: it neither stops the
        # replay nor counts a trigger, and a provider reports nothing of it.
        found = self.policy.forget(event)
        outcome = Outcome(note=found.note, dropped=found.dropped, facts=found.facts)
        session = self.conversation.chronology.sessions[0]
        self._took(self.changes.turn(event, session, "forget", self.policy.retained(), outcome=outcome))

    def _exchange(self, turn: UserTurn) -> None:
        # The view as sent: a policy may change a list it returned once the call is made, and
        # every record of the turn (its sizes, views.jsonl, the probe's checks) is of what was sent.
        sent = self.changes.sent(turn.session, kept(self.policy.view(turn)))
        view, tokens = sent.view, sent.tokens
        scripted = turn.assistant is not None and not self.live
        record: CallRecord | None = None
        reply = None  # what the provider reported of the policy's extras
        if scripted:
            answer = turn.assistant or ""
        else:
            policy = self.policy  # a provider policy's answer call may ask more of its provider's API
            try:
                provided = policy.provider_request(turn, view) if isinstance(policy, ProviderPolicy) else None
                completion, record = self.caller.answer(turn, view, tokens, provided)
            except ModelError as exc:
                return self._failed(turn, sent, str(exc))
            answer, reply = completion.text, completion.provider_reply
        self.caller.start_turn()
        outcome = self._after_answer(turn, answer, usage_of(turn, record, tokens, answer, reply))
        status = "stopped" if outcome.stop else ("scripted" if scripted else "answered")
        retained = self.policy.retained()
        self._took(self.changes.turn(turn, turn.session, status, retained, sent=sent, outcome=outcome, call=record))
        if turn.probe:
            rows = check_probe(self.ledger, self.trace, turn, answer)
            self._probe_rows(turn, self._judged(turn, view, answer, rows))
        if outcome.stop:
            why = f"policy stopped at turn {turn.number} ({outcome.stop})"
            self.ended = ("stopped", why, "error" if outcome.stop.startswith(AUX_FAILED) else "stopped")

    def _took(self, state: TurnState) -> None:
        """The records of a turn the policy took in: its rows; then its change traced, and what
        that changed of old values (residue.csv) and of the fact store."""
        self._rows(state)
        self.trace.take(state)
        for found in self.residue.after(state):
            self.sink.residue(
                ResidueRow(**self.caller.identity, turn=state.number, session=state.session, **vars(found))
            )
        if state.outcome.facts is not None:
            self.sink.facts({**self.caller.identity, "turn": state.number, **state.outcome.facts})

    def _judged(self, turn: UserTurn, view: Sequence[Message], answer: str, rows: list[ProbeCells]) -> list[ProbeCells]:
        """Add the judge's verdicts, when the run has a judge: to each prohibition row, and to
        each rubric's, whose verdict decides whether it passed (an offline expectation needs none)."""
        if not self.caller.judging:
            return rows
        chronology, in_force = self.conversation.chronology, self.ledger.prohibitions_in_force(turn.number)
        by_id = {p.id: p for p in chronology.prohibitions}
        judged = []
        for row in rows:
            expectation = next((e for e in turn.expect if e.subject == row.subject), None)
            if row.check == EXPECT and expectation and expectation.judged:
                prompt = prompt_for(chronology.source)  # the item's benchmark's, else the harness's
                verdict = self.caller.judge_rubric(turn, expectation.text, expectation.passes, answer, prompt)
                row = replace(row, **verdict, passed=verdict["judged_in_answer"], note=None)
            elif row.check == "prohibition":
                text = prohibition_text(chronology, by_id[row.subject], in_force[row.subject])
                row = replace(row, **self.caller.judge(turn, text, view, answer))
                if row.note == NOT_ASKED:  # the question did not ask: no answer verdict counts
                    row = replace(row, judged_in_answer=None)
            judged.append(row)
        return judged

    def _after_answer(self, turn: UserTurn, answer: str, usage: AnswerUsage | None) -> Outcome:
        try:
            return self.policy.after_answer(turn, answer, self.caller.for_turn(turn, usage))
        except ModelError as exc:
            return Outcome(stop=f"{AUX_FAILED}{exc}")

    def _failed(self, turn: UserTurn, sent: Sent, error: str) -> None:
        self.ended = ("error", f"conversation ended by a model error at turn {turn.number}", "error")
        self._rows(self.changes.turn(turn, turn.session, "error", self.policy.retained(), sent=sent, error=error))
        self._unmeasured(turn)

    def _unmeasured(self, turn: UserTurn | Forget) -> None:
        if isinstance(turn, UserTurn) and turn.probe and self.ended:
            status, why, _ = self.ended
            self._probe_rows(turn, unmeasured_rows(self.ledger, turn, status, why))

    def _probe_rows(self, turn: UserTurn, rows: list[ProbeCells]) -> None:
        identity = self.caller.identity
        for cells in rows:
            self.sink.probe(ProbeRow(**identity, turn=turn.number, probe=turn.probe, session=turn.session, cells=cells))

    def _rows(self, state: TurnState) -> None:
        """A row of turns.csv, with the violations of the group check, and one of views.jsonl:
        the view and retained state as references, their new messages first, so none dangles."""
        identity, sent, call, outcome = self.caller.identity, state.sent, state.call, state.outcome
        tokens = sent.tokens if sent else None
        violations = self.groups.check(state)
        self.sink.turn(
            TurnRow(
                **identity,
                turn=state.number,
                session=state.session,
                status=state.status,
                stop_reason=outcome.stop,
                error=state.error,
                view_messages=len(sent.view) if sent else None,
                view_chars=tokens.chars if tokens else None,
                estimate_tokens=tokens.estimate if tokens else None,
                tiktoken_tokens=tokens.tiktoken if tokens else None,
                reported_prompt_tokens=call.reported_prompt_tokens if call else None,
                reported_completion_tokens=call.reported_completion_tokens if call else None,
                latency_ms=call.latency_ms if call else None,
                retained_messages=len(state.retained),
                retained_chars=state.retained_chars,
                **(self.caller.aux_cells() if state.status not in ("forget", "error") else aux_columns([])),
                policy_note=outcome.note,
                group_violations=violations_text(violations),
                # What counted the policy's token trigger, and what it saw (all None: no trigger).
                **{f"trigger_{k}": getattr(outcome.trigger, k, None) for k in ("counter", "tokens", "status")},
            )
        )
        new, view, retained = state.records
        for message in new:
            self.sink.message({**identity, **message})
        where = {"turn": state.number, "session": state.session, "status": state.status}
        self.sink.view({**identity, **where, "view": view, "retained": retained})


def policy_system(chronology: Chronology) -> Message | None:
    """The chronology's system message, as a policy is created with it."""
    return Message("system", chronology.system, origin="system") if chronology.system else None


def run_conversation(
    conversation: Conversation,
    registry: PolicyRegistry,
    models: Model | Models,
    counter: TokenCounter,
    sink: ResultsWriter,
    ledger: Ledger | None = None,
    live: bool = False,
    cache: ResponseCache | None = None,
    events: CallEvents | None = None,
) -> Finished:
    """Replay one conversation, streaming its records to `sink` (and each call's start and end to `events`)."""
    chronology = conversation.chronology
    system = policy_system(chronology)
    policy = registry.create(conversation.policy, system)
    if isinstance(policy, ProviderPolicy):  # its calls: the provider's real API, or the emulator
        policy.reach(not capabilities_named(conversation.model).offline)
    roles = models if isinstance(models, Models) else Models.single(models)
    caller = Caller(conversation, roles, counter, sink, cache, events=events)
    shared = registry.shares_sessions(conversation.policy.name)
    history = registry.history_place(conversation.policy.name)
    status = Replay(conversation, policy, caller, sink, ledger or Ledger(chronology), live, shared, history).run()
    return Finished(status, caller.stats)
