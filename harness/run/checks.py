"""Checks at probes (docs/chronologies.md, "Probes and checks"): prohibitions, current, stale and
forgotten values, and what a probe expects of its answer (`expect:`).

What should be true is derived from the chronology alone (the `Ledger`): the turn where each
prohibition was stated last, the latest declared value per key, the values a correction
replaced, the values a `forget` removed. What each policy did is in its `Trace`, built as the
replay went: which subjects each session's view and the retained state hold, and the last
departure of each with its cause. Whether a message or an answer states a subject is decided
by one definition (`harness.run.presence`).

Where the view holds opaque content (an encrypted compaction item, `harness.run.trace`) and no
readable message states a subject, its `in_view` is unknown (None): the check is decided by the
answer alone where the answer can decide it (a prohibition asked: honoured or not; a stale or
forgotten value stated in the answer fails), and is otherwise unknown (`passed` None), noted
`OPAQUE_VIEW`; never a pass or a loss the harness guessed.

An expectation is met or not by its answer alone (a `rubric` by the judge, `harness.run.judge`,
added by the replay); its view cells describe its evidence: whether every evidence message
was in the probe's view, and if not, where and why the first missing one left.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from harness.chronology.ledger import Ledger
from harness.chronology.types import Expectation, Prohibition, UserTurn
from harness.results.rows import EXPECT, NEEDS_JUDGE, NOT_ASKED, REFUSED_NOT_IN_VIEW
from harness.run.abstention import abstains, abstains_from
from harness.run.presence import Presence, Subject, evidence_of, holds_value, prohibition, value
from harness.run.trace import Loss, Trace

if TYPE_CHECKING:  # the row types are imported where rows are made: validation needs only the ledger
    from harness.results.rows import ProbeCells


def honoured(prohibition: Prohibition, answer: str) -> bool:
    """The answer does not match `violated_by`, and matches `required` when one is given."""
    if prohibition.violated_by.search(answer):
        return False
    return prohibition.required is None or bool(prohibition.required.search(answer))


def check_probe(ledger: Ledger, trace: Trace, turn: UserTurn, answer: str) -> list[ProbeCells]:
    """Every check at one probe, as `probes.csv` cells (identity columns left to the caller).

    `trace` holds the policy's turns up to and including this one (its view and retained state)."""
    stated = trace.presence.of_answer(answer, turn.user)
    return (
        prohibition_rows(ledger, trace, turn, answer)
        + current_rows(ledger, trace, turn, stated)
        + drift_rows(ledger, trace, turn, stated)
        + expect_rows(ledger, trace, turn, answer)
    )


def asked(turn: UserTurn, pid: str) -> bool:
    """Does the probe's question ask about this prohibition? Without `asks:`, every one in force is asked."""
    return turn.asks is None or pid in turn.asks


def prohibition_rows(ledger: Ledger, trace: Trace, turn: UserTurn, answer: str) -> list[ProbeCells]:
    """The view check for every prohibition in force; the answer check only where the probe asks.

    An answer that refuses a prohibition the view did not hold keeps its verdict but is noted
    `refused, not in view`: something else refused (another prohibition, or chance)."""
    rows = []
    in_force = ledger.prohibitions_in_force(turn.number)
    for stated in ledger.chronology.prohibitions:
        if stated.id not in in_force:
            continue  # not stated yet, or withdrawn by a forget: nothing to survive
        since, subject = in_force[stated.id], prohibition(stated.id)
        in_view = trace.seen_in_view(turn.session, subject)
        loss = None if in_view is not False else _loss(ledger, trace, turn, subject, since)
        if asked(turn, stated.id):
            in_answer = honoured(stated, answer)
            if in_view is None:  # only the answer can be checked
                passed, note = in_answer, trace.unknown_note(turn.session)
            else:
                passed = in_view and in_answer
                note = REFUSED_NOT_IN_VIEW if in_answer and not in_view else None
        else:
            in_answer, passed, note = None, None, NOT_ASKED
        in_retained, age = trace.seen_in_retained(subject), turn.number - since
        rows.append(row("prohibition", stated.id, in_view, in_answer, in_retained, age, loss, passed, note))
    return rows


def current_rows(ledger: Ledger, trace: Trace, turn: UserTurn, answered: frozenset[Subject]) -> list[ProbeCells]:
    rows = []
    for current in ledger.after(turn.number).current.values():
        subject = value(current.key, current.value)
        in_view = trace.seen_in_view(turn.session, subject)
        loss = None if in_view is not False else _loss(ledger, trace, turn, subject, current.since)
        in_retained, age = trace.seen_in_retained(subject), turn.number - current.since
        note = trace.unknown_note(turn.session) if in_view is None else None
        # Unknown behind an opaque item: a value in view is a view check.
        rows.append(
            row("current", current.subject, in_view, subject in answered, in_retained, age, loss, in_view, note)
        )
    return rows


def drift_rows(ledger: Ledger, trace: Trace, turn: UserTurn, answered: frozenset[Subject]) -> list[ProbeCells]:
    """Stale and forgotten values: they pass only where they appear nowhere (a forgotten one
    not in the retained state either). One in view only through outside text written since it
    became old (a tool's result) is noted as re-entered from that text: it is in view, but no
    memory kept it."""
    state = ledger.after(turn.number)
    rows = []
    for check, values in (("stale", state.stale.values()), ("forgotten", state.forgotten.values())):
        for old in values:
            subject = value(old.key, old.value)
            in_view, in_answer = trace.seen_in_view(turn.session, subject), subject in answered
            in_retained = trace.seen_in_retained(subject)
            seen = (in_view, in_answer, in_retained if check == "forgotten" else False)
            # Stated anywhere: failed; stated nowhere readable beside opaque content: unknown.
            passed = False if True in seen else (None if None in seen else True)
            reentry = trace.reentry(turn.session, subject, old.since) if in_view else None
            note = reentry.where if reentry is not None else None
            if passed is None:
                note = trace.unknown_note(turn.session)
            rows.append(
                row(check, old.subject, in_view, in_answer, in_retained, turn.number - old.since, None, passed, note)
            )
    return rows


def met(expectation: Expectation, answer: str, presence: Presence | None = None, question: str = "") -> bool | None:
    """Whether the answer meets an offline expectation; None for a judged one (a rubric).

    A value is met where the answer states it whole (`harness.chronology.values`). An abstention,
    given the probe's `presence` and `question`, is an answer that states no value for the asked
    key (`abstains_from`); without them, any abstaining phrase."""
    if expectation.kind == "value":
        return holds_value(answer, expectation.text)
    if expectation.kind == "abstain":
        return abstains(answer) if presence is None else abstains_from(presence, answer, question)
    if expectation.pattern is None:
        return None  # a rubric: only the judge can tell
    found = expectation.pattern.search(answer)
    return found if expectation.kind == "pattern" else not found


def evidence_turns(ledger: Ledger, probe: str) -> list[int]:
    """The turns holding evidence for `probe` (their user message or a tool result marked), in order."""
    return [t.number for t in ledger.chronology.user_turns if evidence_of(t, probe)]


def expect_rows(ledger: Ledger, trace: Trace, turn: UserTurn, answer: str) -> list[ProbeCells]:
    """One row per expectation: met or not (a rubric waits for the judge), and its evidence."""
    assert turn.probe is not None
    in_view, in_retained, age, loss = _evidence(ledger, trace, turn, evidence_turns(ledger, turn.probe))
    rows = []
    for expectation in turn.expect:
        now = met(expectation, answer, trace.presence, turn.user)
        note = NEEDS_JUDGE if expectation.judged else None
        rows.append(row(EXPECT, expectation.subject, in_view, now, in_retained, age, loss, now, note))
    return rows


def _evidence(
    ledger: Ledger, trace: Trace, turn: UserTurn, turns: list[int]
) -> tuple[bool | None, bool | None, int | None, Loss | None]:
    """in_view, in_retained, age and loss of a probe's evidence: every evidence message in the
    view (and retained); the last departure of the first one missing. All None without evidence."""
    if not turns:
        return None, None, None, None
    by_number = {t.number: t for t in ledger.chronology.user_turns}
    subjects = [(number, s) for number in turns for s in evidence_of(by_number[number], turn.probe or "")]
    seen = [(number, s, trace.seen_in_view(turn.session, s)) for number, s in subjects]
    missing = [(number, s) for number, s, found in seen if found is False]
    loss = _loss(ledger, trace, turn, missing[0][1], missing[0][0]) if missing else None
    in_retained = all(trace.in_retained(s) for _, s in subjects)
    if not missing and any(found is None for *_, found in seen):  # behind an opaque item: unknown
        return None, in_retained, turn.number - turns[0], None
    return not missing, in_retained, turn.number - turns[0], loss


def _loss(ledger: Ledger, trace: Trace, turn: UserTurn, subject: Subject, since: int) -> Loss:
    return trace.loss(turn.session, subject, since, ledger.session_of(since))


def unmeasured_rows(ledger: Ledger, turn: UserTurn, status: str, why: str) -> list[ProbeCells]:
    """Rows for a probe the policy never reached (it stopped, or the conversation failed)."""
    state, at = ledger.after(turn.number), turn.number
    subjects = [("prohibition", pid, at - since) for pid, since in ledger.prohibitions_in_force(at).items()]
    subjects += [("current", v.subject, at - v.since) for v in state.current.values()]
    subjects += [("stale", v.subject, at - v.since) for v in state.stale.values()]
    subjects += [("forgotten", v.subject, at - v.since) for v in state.forgotten.values()]
    found = evidence_turns(ledger, turn.probe or "")
    subjects += [(EXPECT, e.subject, at - found[0] if found else None) for e in turn.expect]  # no evidence: no age
    loss = Loss("stopped" if status == "stopped" else "error", why)
    rows = []
    for check, subject, age in subjects:
        note = NOT_ASKED if check == "prohibition" and not asked(turn, subject) else None
        rows.append(replace(row(check, subject, None, None, None, age, loss, None, note), status=status))
    return rows


def row(
    check: str,
    subject: str,
    in_view: bool | None,
    in_answer: bool | None,
    in_retained: bool | None,
    age: int | None,
    loss: Loss | None,
    passed: bool | None,
    note: str | None = None,
) -> ProbeCells:
    from harness.results.rows import ProbeCells

    return ProbeCells(
        status="measured",
        check=check,
        subject=subject,
        in_view=in_view,
        in_answer=in_answer,
        in_retained=in_retained,
        age=age,
        lost_at=loss.where if loss else None,
        cause=loss.cause if loss else None,
        passed=passed,
        note=note,
    )
