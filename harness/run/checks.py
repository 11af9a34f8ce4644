"""Checks at probes (docs/chronologies.md, "Probes and checks"): prohibitions, current, stale and forgotten values.

What should be true is derived from the chronology alone (the `Ledger`): the turn where each
prohibition was stated, the latest declared value per key, the values a correction replaced,
the values a `forget` removed. What each policy did is in its `Trace`: the request view sent
at each turn, the retained state after it, and what it dropped. A check compares the two.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from harness.base.messages import Message
from harness.chronology.ledger import Ledger
from harness.chronology.types import Prohibition, UserTurn
from harness.policy import Drop
from harness.results.rows import NOT_ASKED

if TYPE_CHECKING:  # the row types are imported where rows are made: validation needs only the ledger
    from harness.results.rows import ProbeCells

Matcher = Callable[[str], bool]


# What a trace holds of a view or retained state: its messages (a replay keeps the sequences
# the policy gave, which share a long history's storage) or their texts.
Texts = Sequence[Message] | Sequence[str]


@dataclass
class TurnTrace:
    """What one policy did at one turn."""

    view: Texts | None  # None for a forget event
    retained: Texts
    dropped: list[Drop]
    session: str | None  # None for a forget event, which applies to every session


@dataclass
class Trace:
    """One conversation's turns, as the checks need them."""

    turns: dict[int, TurnTrace] = field(default_factory=dict)

    def add(self, number: int, session: str | None, view: Texts | None, retained: Texts, dropped: list[Drop]) -> None:
        self.turns[number] = TurnTrace(view, retained, dropped, session)


def any_match(texts: Iterable[str] | Iterable[Message], matcher: Matcher) -> bool:
    return any(matcher(text if isinstance(text, str) else text.content) for text in texts)


@dataclass(frozen=True)
class Loss:
    """Where something left the probe session's request view, in words, and its cause category."""

    cause: str  # window, reduction, summary, eviction, not-stored, forget, other-session, untraced
    where: str


def lost_at(trace: Trace, matcher: Matcher, since: int, probe: int) -> Loss:
    """Where something present since turn `since` left the probe session's request view.

    Only turns of the probe's own session count (and forgets, which touch every session):
    sessions never share history, so another session's view says nothing about this one.
    """
    session = trace.turns[probe].session
    numbers = [n for n in sorted(trace.turns) if since <= n <= probe]
    here = [n for n in numbers if trace.turns[n].session in (session, None)]
    views = {n: view for n in here if (view := trace.turns[n].view) is not None}
    origin = trace.turns[since].session
    if origin not in (session, None) and not any(any_match(v, matcher) for v in views.values()):
        return Loss(
            "other-session",
            f"never in the view of session {session}: stated at turn {since} in "
            f"session {origin}, whose history this session does not share",
        )
    left_view = next((n for n in views if n > since and not any_match(views[n], matcher)), probe)
    # Only a retained loss before the view lost it can explain the loss: stop scanning there
    # (a full history retains everything, and rescanning it to the probe made replay quadratic).
    before = (n for n in numbers if n < left_view)
    left_retained = next((n for n in before if not any_match(trace.turns[n].retained, matcher)), None)
    if left_retained is None:
        return Loss("window", f"left the request window at turn {left_view}")
    drops = [d for d in trace.turns[left_retained].dropped if matcher(d.text)]
    if drops:
        return Loss(drops[0].cause, drops[0].why)
    return Loss("untraced", f"not in the retained state after turn {left_retained} (the policy reported no reason)")


def value_matcher(value: str, mask: Iterable[str] = ()) -> Matcher:
    """Does a text mention `value`? Occurrences inside the `mask` values do not count, so a
    stale `SQL Server` is not found inside the current `SQL Server 2022`."""
    pattern = re.compile(rf"(?<!\w){re.escape(value)}(?!\w)", re.IGNORECASE)
    masks = [re.compile(re.escape(m), re.IGNORECASE) for m in mask if value.lower() in m.lower() and m != value]

    def matches(text: str) -> bool:
        for m in masks:
            text = m.sub(" ", text)
        return bool(pattern.search(text))

    return matches


def prohibition_matcher(prohibition: Prohibition) -> Matcher:
    """Does a text state the prohibition (its `present` pattern)?"""
    return lambda text: bool(prohibition.present.search(text))


def honoured(prohibition: Prohibition, answer: str) -> bool:
    """The answer does not match `violated_by`, and matches `required` when one is given."""
    if prohibition.violated_by.search(answer):
        return False
    return prohibition.required is None or bool(prohibition.required.search(answer))


@dataclass(frozen=True)
class Observation:
    """What a policy showed at a probe: the view sent, the answer, the state kept after it."""

    view: list[str]
    answer: str
    retained: list[str]


def check_probe(ledger: Ledger, trace: Trace, turn: UserTurn, seen: Observation) -> list[ProbeCells]:
    """Every check at one probe, as `probes.csv` cells (identity columns left to the caller)."""
    return (
        prohibition_rows(ledger, trace, turn, seen)
        + current_rows(ledger, trace, turn, seen)
        + drift_rows(ledger, turn, seen)
    )


def asked(turn: UserTurn, pid: str) -> bool:
    """Does the probe's question ask about this prohibition? Without `asks:`, every one in force is asked."""
    return turn.asks is None or pid in turn.asks


def prohibition_rows(ledger: Ledger, trace: Trace, turn: UserTurn, seen: Observation) -> list[ProbeCells]:
    """The view check for every prohibition in force; the answer check only where the probe asks."""
    rows = []
    in_force = ledger.prohibitions_in_force(turn.number)
    for prohibition in ledger.chronology.prohibitions:
        if prohibition.id not in in_force:
            continue  # not stated yet, or withdrawn by a forget: nothing to survive
        since = in_force[prohibition.id]
        matcher = prohibition_matcher(prohibition)
        in_view = any_match(seen.view, matcher)
        loss = None if in_view else lost_at(trace, matcher, since, turn.number)
        if asked(turn, prohibition.id):
            in_answer = honoured(prohibition, seen.answer)
            passed, note = in_view and in_answer, None
        else:
            in_answer, passed, note = None, None, NOT_ASKED
        rows.append(
            row(
                "prohibition",
                prohibition.id,
                in_view,
                in_answer,
                any_match(seen.retained, matcher),
                turn.number - since,
                loss,
                passed,
                note,
            )
        )
    return rows


def current_rows(ledger: Ledger, trace: Trace, turn: UserTurn, seen: Observation) -> list[ProbeCells]:
    rows = []
    for value in ledger.after(turn.number).current.values():
        matcher = value_matcher(value.value)
        in_view = any_match(seen.view, matcher)
        loss = None if in_view else lost_at(trace, matcher, value.since, turn.number)
        rows.append(
            row(
                "current",
                value.subject,
                in_view,
                matcher(seen.answer),
                any_match(seen.retained, matcher),
                turn.number - value.since,
                loss,
                in_view,
            )
        )
    return rows


def drift_rows(ledger: Ledger, turn: UserTurn, seen: Observation) -> list[ProbeCells]:
    """Stale and forgotten values: they pass only where they appear nowhere."""
    state = ledger.after(turn.number)
    currents = [v.value for v in state.current.values()]
    rows = []
    for check, values in (("stale", state.stale.values()), ("forgotten", state.forgotten.values())):
        for value in values:
            matcher = value_matcher(value.value, mask=currents)
            in_view, in_answer = any_match(seen.view, matcher), matcher(seen.answer)
            in_retained = any_match(seen.retained, matcher)
            passed = not (in_view or in_answer or (check == "forgotten" and in_retained))
            rows.append(
                row(check, value.subject, in_view, in_answer, in_retained, turn.number - value.since, None, passed)
            )
    return rows


def unmeasured_rows(ledger: Ledger, turn: UserTurn, status: str, why: str) -> list[ProbeCells]:
    """Rows for a probe the policy never reached (it stopped, or the conversation failed)."""
    state = ledger.after(turn.number)
    subjects = [("prohibition", pid, since) for pid, since in ledger.prohibitions_in_force(turn.number).items()]
    subjects += [("current", v.subject, v.since) for v in state.current.values()]
    subjects += [("stale", v.subject, v.since) for v in state.stale.values()]
    subjects += [("forgotten", v.subject, v.since) for v in state.forgotten.values()]
    cause = "stopped" if status == "stopped" else "error"
    return [
        replace(
            row(
                check,
                subject,
                None,
                None,
                None,
                turn.number - since,
                Loss(cause, why),
                None,
                NOT_ASKED if check == "prohibition" and not asked(turn, subject) else None,
            ),
            status=status,
        )
        for check, subject, since in subjects
    ]


def row(
    check: str,
    subject: str,
    in_view: bool | None,
    in_answer: bool | None,
    in_retained: bool | None,
    age: int,
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
