"""Replays one conversation: one chronology under one policy, model and repetition.

Turns within a conversation are sequential; conversations share nothing but the results
writer and the token counter (both thread-safe), so a batch can run them concurrently.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from harness.base.errors import ModelError
from harness.base.messages import Message
from harness.chronology import Chronology, Forget, Prohibition, UserTurn
from harness.chronology.ledger import Ledger
from harness.models import Model
from harness.models.cache import ResponseCache
from harness.models.catalog import is_offline
from harness.models.options import Models
from harness.policy import Drop, Outcome, Policy, PolicyRegistry
from harness.policy.contract import AnswerUsage, TriggerCount, answer_api, reach
from harness.policy.tokens import RequestTokens, RunningCount, TokenCounter
from harness.results.rows import EXPECT, NOT_ASKED, CallRecord, ProbeCells, ProbeRow, ResidueRow, TurnRow
from harness.results.views import Change, KnownChange, Record, ViewEncoder, change, kept
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

AUX_FAILED = "aux_call_failed: "  # the stop reason when a policy's own call failed


class Replay:
    """The state of one conversation's replay."""

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
        # The conversation's columns of every record, worked out once, by the caller (a policy's
        # label is built anew at each `identity()`); each record unpacks it into a dict of its own.
        self.identity = caller.identity
        # Which subjects each session's view and the retained state hold, turn by turn; `shared`:
        # the policy keeps one state for every session (its drops explain any session's losses);
        # `history`: what the policy calls its retained history (residue.csv's place).
        self.trace = Trace(Presence(conversation.chronology, ledger.values()), shared, history)
        self.residue = Residue(ledger, self.trace)  # what it keeps of corrected and forgotten values
        self.views = ViewEncoder()
        # The sizes of the latest view of each session and of the retained state, kept as
        # running sums over what changed: recounting a long history every turn is quadratic.
        # A view is sized before its call, whose record takes the same figures.
        self.view_counts: dict[str, tuple[Sequence[Message], RunningCount]] = {}
        self.retained_count = caller.running_count()
        # The latest view's change from its session's previous one (`_view_tokens`), for `ViewEncoder`
        self.view_change: KnownChange | None = None
        self.ended: tuple[str, str] | None = None  # (status, why) once the replay has stopped
        self.failed = False  # a summarizer or writer call failed and stopped the policy
        # The invariant every policy keeps (split tool groups, the system message, user messages)
        self.groups = GroupCheck(conversation.chronology, policy_system(conversation.chronology))

    def run(self) -> str:
        """Replay every turn; return the conversation's final status."""
        for turn in self.conversation.chronology.turns:
            if self.ended is not None:
                self._unmeasured(turn)
            elif isinstance(turn, Forget):
                self._forget(turn)
            else:
                self._exchange(turn)
        if self.failed:  # stopped by a failed call, not by the policy: the conversation ended in an error
            return "error"
        return self.ended[0] if self.ended else "complete"

    def _forget(self, event: Forget) -> None:
        outcome = self.policy.forget(event)
        retained = self.policy.retained()
        session = self.conversation.chronology.sessions[0]
        changed = self._turn_row(event.number, session, "forget", retained, note=outcome.note, drops=outcome.dropped)
        self.trace.after(event.number, None, kept(retained), outcome.dropped, changed)
        self._residue(event.number, session)
        self._facts(event.number, outcome)

    def _exchange(self, turn: UserTurn) -> None:
        # The view as sent: a policy may change a list it returned once the call is made, and
        # every record of the turn (its sizes, views.jsonl, the probe's checks) is of what was sent.
        view = kept(self.policy.view(turn))
        tokens, difference = self._view_tokens(turn.session, view)
        self.trace.view(turn.number, turn.session, view, difference)
        # Checked before the call is made: the row records what a real endpoint would refuse.
        split = self.groups.view(view, difference.added)
        scripted = turn.assistant is not None and not self.live
        record: CallRecord | None = None
        reply = None  # what the provider reported of the policy's extras
        if scripted:
            answer = turn.assistant or ""
        else:
            # A provider policy's extras for its provider's API (optional: `provider_request`).
            extras = getattr(self.policy, "provider_request", None)
            try:
                api, provided = answer_api(self.policy, view), extras(turn) if extras else None
                completion, record = self.caller.answer(turn, view, tokens, api, provided)
            except ModelError as exc:
                return self._failed(turn, view, tokens, str(exc), split)
            answer, reply = completion.text, completion.provider_reply
        self.caller.start_turn()
        outcome = self._after_answer(turn, answer, usage_of(turn, record, tokens, answer, reply))
        retained = self.policy.retained()
        status = "stopped" if outcome.stop else ("scripted" if scripted else "answered")
        changed = self._turn_row(
            turn.number,
            turn.session,
            status,
            retained,
            view,
            tokens,
            record,
            outcome.stop,
            note=outcome.note,
            split=split,
            drops=outcome.dropped,
            trigger=outcome.trigger,
        )
        self.trace.after(turn.number, turn.session, kept(retained), outcome.dropped, changed)
        if outcome.disputed:
            self.trace.dispute(turn.session, outcome.disputed)
        self._residue(turn.number, turn.session)
        self._facts(turn.number, outcome)
        if turn.probe:
            rows = check_probe(self.ledger, self.trace, turn, answer)
            self._probe_rows(turn, self._judged(turn, view, answer, rows))
        if outcome.stop:
            self.ended = ("stopped", f"policy stopped at turn {turn.number} ({outcome.stop})")
            self.failed = outcome.stop.startswith(AUX_FAILED)

    def _judged(self, turn: UserTurn, view: Sequence[Message], answer: str, rows: list[ProbeCells]) -> list[ProbeCells]:
        """Add the judge's verdicts to the prohibition rows, when the run has a judge."""
        if not self.caller.judging:
            return rows
        chronology, in_force = self.conversation.chronology, self.ledger.prohibitions_in_force(turn.number)
        by_id = {p.id: p for p in chronology.prohibitions}
        return [self._judge(turn, view, answer, by_id, in_force, row) for row in rows]

    def _judge(
        self,
        turn: UserTurn,
        view: Sequence[Message],
        answer: str,
        by_id: dict[str, Prohibition],
        in_force: dict[str, int],
        row: ProbeCells,
    ) -> ProbeCells:
        if row.check == EXPECT:
            return self._judge_expectation(turn, answer, row)
        if row.check != "prohibition":
            return row
        text = prohibition_text(self.conversation.chronology, by_id[row.subject], in_force[row.subject])
        row = replace(row, **self.caller.judge(turn, text, view, answer))
        if row.note == NOT_ASKED:
            row = replace(row, judged_in_answer=None)  # the question did not ask: no answer verdict counts
        return row

    def _judge_expectation(self, turn: UserTurn, answer: str, row: ProbeCells) -> ProbeCells:
        """A rubric's verdict decides whether it passed; an offline expectation needs no judge."""
        expectation = next(e for e in turn.expect if e.subject == row.subject)
        if not expectation.judged:
            return row
        prompt = prompt_for(self.conversation.chronology.source)  # the item's benchmark's, else the harness's
        judged = self.caller.judge_rubric(turn, expectation.text, expectation.passes, answer, prompt)
        return replace(row, **judged, passed=judged["judged_in_answer"], note=None)

    def _after_answer(self, turn: UserTurn, answer: str, usage: AnswerUsage | None) -> Outcome:
        try:
            return self.policy.after_answer(turn, answer, self.caller.for_turn(turn, usage))
        except ModelError as exc:
            return Outcome(stop=f"{AUX_FAILED}{exc}")

    def _failed(
        self, turn: UserTurn, view: Sequence[Message], tokens: RequestTokens, error: str, split: list[str]
    ) -> None:
        self.ended = ("error", f"conversation ended by a model error at turn {turn.number}")
        self._turn_row(
            turn.number, turn.session, "error", self.policy.retained(), view, tokens, error=error, split=split
        )
        self._unmeasured(turn)

    def _unmeasured(self, turn: UserTurn | Forget) -> None:
        if isinstance(turn, UserTurn) and turn.probe and self.ended:
            status, why = self.ended
            self._probe_rows(turn, unmeasured_rows(self.ledger, turn, status, why))

    def _probe_rows(self, turn: UserTurn, rows: list[ProbeCells]) -> None:
        identity = self.identity
        for cells in rows:
            self.sink.probe(ProbeRow(**identity, turn=turn.number, probe=turn.probe, session=turn.session, cells=cells))

    def _residue(self, number: int, session: str) -> None:
        identity = self.identity
        for found in self.residue.after(number):
            self.sink.residue(ResidueRow(**identity, turn=number, session=session, **vars(found)))

    def _facts(self, number: int, outcome: Outcome) -> None:
        if outcome.facts is not None:
            self.sink.facts({**self.identity, "turn": number, **outcome.facts})

    def _turn_row(
        self,
        number: int,
        session: str,
        status: str,
        retained: Sequence[Message],
        view: Sequence[Message] | None = None,
        tokens: RequestTokens | None = None,
        call: CallRecord | None = None,
        stop: str | None = None,
        error: str | None = None,
        note: str | None = None,
        split: Sequence[str] = (),
        drops: Sequence[Drop] = (),
        trigger: TriggerCount | None = None,
    ) -> Change:
        """A row of turns.csv and one of views.jsonl; `tokens` are the figures of `view` (`_view_tokens`),
        `split` the view's violations (`GroupCheck.view`), `drops` the policy's of this turn,
        `trigger` the count its token trigger saw.
        Returns how the retained state changed since the previous turn's."""
        known = self.view_change if self.view_change and view is not None and self.view_change.current is view else None
        new, view_ref, retained_ref, _, retained_change = self.views.encode_changes(
            number, session, view, retained, known
        )
        self.retained_count.update(retained_change.removed, retained_change.added)
        self.groups.record(drops)
        asked = number if status in ("answered", "scripted") else None  # the turn taken in
        retained_split = self.groups.retained(retained, retained_change.added, retained_change.removed, asked)
        violations = [*split, *retained_split]
        self.sink.turn(
            TurnRow(
                **self.identity,
                turn=number,
                session=session,
                status=status,
                stop_reason=stop,
                error=error,
                view_messages=len(view) if view is not None else None,
                view_chars=tokens.chars if tokens else None,
                estimate_tokens=tokens.estimate if tokens else None,
                tiktoken_tokens=tokens.tiktoken if tokens else None,
                reported_prompt_tokens=call.reported_prompt_tokens if call else None,
                reported_completion_tokens=call.reported_completion_tokens if call else None,
                latency_ms=call.latency_ms if call else None,
                retained_messages=len(retained),
                retained_chars=self.retained_count.chars,
                **(self.caller.aux_cells() if status not in ("forget", "error") else aux_columns([])),
                policy_note=note,
                group_violations=violations_text(violations),
                **trigger_cells(trigger),
            )
        )
        self._view_row(number, session, status, new, view_ref, retained_ref)
        return retained_change

    def _view_tokens(self, session: str, view: Sequence[Message]) -> tuple[RequestTokens, Change]:
        """The figures of `view` (kept: `views.kept`), the session's request view this turn: its
        latest view's, changed by what left and what arrived (only what differs is read, as
        `views.change` does); and that change, which the trace and the group check read too."""
        previous, running = self.view_counts.get(session) or ((), self.caller.running_count())
        difference = change(previous, view)
        running.update(difference.removed, difference.added)
        self.view_counts[session] = (view, running)
        self.view_change = KnownChange(previous, difference, view)  # what `ViewEncoder` records next
        return running.figures(), difference

    def _view_row(
        self, number: int, session: str, status: str, new: list[Record], view: Record | None, retained: Record
    ) -> None:
        """The view and retained state as references; their new messages first, so none dangles."""
        identity = self.identity
        for message in new:
            self.sink.message({**identity, **message})
        self.sink.view(
            {**identity, "turn": number, "session": session, "status": status, "view": view, "retained": retained}
        )


def trigger_cells(trigger: TriggerCount | None) -> dict[str, Any]:
    """turns.csv's `trigger_*` cells: what counted the policy's token trigger, and what it saw."""
    if trigger is None:
        return {"trigger_counter": None, "trigger_tokens": None, "trigger_status": None}
    return {"trigger_counter": trigger.counter, "trigger_tokens": trigger.tokens, "trigger_status": trigger.status}


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
    reach(policy, not is_offline(conversation.model))  # a provider policy's calls: the real API or the emulator
    roles = models if isinstance(models, Models) else Models.single(models)
    caller = Caller(conversation, roles, counter, sink, cache, events=events)
    shared = registry.shares_sessions(conversation.policy.name)
    history = registry.history_place(conversation.policy.name)
    status = Replay(conversation, policy, caller, sink, ledger or Ledger(chronology), live, shared, history).run()
    return Finished(status, caller.stats)
