"""What a policy still keeps of a value after a correction replaced it or a `forget` removed it.

After every turn and every forget, each stale and each forgotten value (the ledger's) is looked
for in the policy's retained state, by the one definition of presence the checks use
(`harness.run.presence`), place by place (`harness.run.trace.place_of`: history, summary, fact
store, or the name a policy gives its history). What changed is written to residue.csv: a
`kept` row when a place starts holding the value (at the correction or forget itself when the
place simply keeps it), a `gone` row when it no longer does (`cleared by a forget` when a forget
removed it), `current again` when the key is
declared with that value anew (so what is kept is no longer an old value). A value kept to the
end has a `kept` row and no later one.

Outside text written at or after the correction or forget (a tool's result, a tool call, a
recorded reply: `Presence.outside`) that repeats the old value is not memory the policy kept:
the forget did clear what it held, and the value came back from that text. Its `where` says so
(`re-entered from the tool result at turn 5`), never `history`.

This is apart from what an answer said: a history that keeps a corrected value beside its
correction does what a history does; a fact store that keeps a forgotten value does not do what
a forget asks.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.chronology.ledger import Ledger, LedgerState, Value, declared
from harness.chronology.types import Forget, Turn
from harness.results.rows import RESIDUE_CLEARED, RESIDUE_CURRENT, RESIDUE_GONE, RESIDUE_KEPT
from harness.run.presence import Outside, Subject, value
from harness.run.trace import Trace
from harness.run.turnstate import TurnState


@dataclass(frozen=True)
class Change:
    """One residue.csv row's cells, without the conversation's columns."""

    subject: str  # key=value
    check: str  # stale | forgotten
    since: int  # the correction's or the forget's turn
    where: str
    change: str  # kept | gone | cleared by a forget | current again


class Residue:
    """One conversation's residue, turn by turn: which old values each place still holds."""

    def __init__(self, ledger: Ledger, trace: Trace) -> None:
        self.ledger, self.trace = ledger, trace
        self._open: dict[Subject, dict[str, tuple[str, int]]] = {}  # subject -> place holding it -> (check, since)

    def after(self, turn: TurnState) -> list[Change]:
        """What changed once `turn` happened and its retained state was traced. Only the values
        whose retained counts changed, and those the turn made old or current again, are read: a
        turn costs what it touched, not the number of old values so far."""
        gone = RESIDUE_CLEARED if isinstance(turn.turn, Forget) else RESIDUE_GONE
        state = self.ledger.after(turn.number)
        subjects = self.trace.touched | self._made_old_or_current(turn.turn)
        changes: list[Change] = []
        for subject in sorted(subjects, key=lambda s: (s.name, s.value)):
            if subject.kind == "value":
                changes += self._changes(subject, old_value(state, subject), gone)
        return changes

    def _made_old_or_current(self, turn: Turn) -> set[Subject]:
        """The values `turn` declared, and those it made stale or forgotten: each key it declared
        or forgot, with the value that key had before."""
        before = self.ledger.after(turn.number - 1).current if turn.number > 1 else {}
        if isinstance(turn, Forget):
            keys = [turn.key] if turn.key else list(before)
            found = set()
        else:
            stated = declared(turn)
            keys, found = list(stated), {value(k, v) for k, v in stated.items()}
        return found | {value(k, before[k].value) for k in keys if k in before}

    def _changes(self, subject: Subject, old: tuple[str, Value] | None, gone: str) -> list[Change]:
        now = (
            {
                _where(place, outside, old[1].since): (old[0], old[1].since)
                for place, outside in self.trace.holders(subject)
            }
            if old
            else {}
        )
        held = self._open.pop(subject, {})
        changes = [
            Change(_text(subject), check, since, place, RESIDUE_CURRENT if old is None else gone)
            for place, (check, since) in sorted(held.items())
            if now.get(place) != (check, since)
        ]
        changes += [
            Change(_text(subject), check, since, place, RESIDUE_KEPT)
            for place, (check, since) in sorted(now.items())
            if held.get(place) != (check, since)
        ]
        if now:
            self._open[subject] = now
        return changes


def old_value(state: LedgerState, subject: Subject) -> tuple[str, Value] | None:
    """Whether a value is old once a turn has happened: (forgotten or stale, the ledger's value),
    forgotten first (a forget asked for it to go); None while it is current or never was."""
    key = (subject.name, subject.value)
    forgotten = state.forgotten.get(key)
    if forgotten is not None:
        return ("forgotten", forgotten)
    stale = state.stale.get(key)
    return ("stale", stale) if stale is not None else None


def _where(place: str, outside: Outside | None, since: int) -> str:
    """The residue's place: outside text from the old value's turn on is a re-entry from it."""
    return outside.where if outside is not None and outside.turn >= since else place


def _text(subject: Subject) -> str:
    return f"{subject.name}={subject.value}"
