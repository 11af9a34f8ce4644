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

This is apart from what an answer said: a history that keeps a corrected value beside its
correction does what a history does; a fact store that keeps a forgotten value does not do what
a forget asks.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.chronology.ledger import Ledger, Value
from harness.results.rows import RESIDUE_CLEARED, RESIDUE_CURRENT, RESIDUE_GONE, RESIDUE_KEPT
from harness.run.presence import Subject, value
from harness.run.trace import Trace


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
        self._watched: dict[Subject, tuple[str, Value]] = {}  # old values now: (check, the ledger's value)
        self._open: dict[Subject, dict[str, tuple[str, int]]] = {}  # subject -> place holding it -> (check, since)

    def after(self, number: int) -> list[Change]:
        """What changed once turn `number` happened and its retained state was traced; only the
        values whose retained counts changed, or that became or stopped being old, are read."""
        before = self._watched
        self._watched = watched(self.ledger, number)
        subjects = self.trace.touched | (before.keys() ^ self._watched.keys())
        subjects |= {s for s in self._watched.keys() & before.keys() if self._watched[s] != before[s]}
        gone = RESIDUE_CLEARED if self.ledger.session_of(number) is None else RESIDUE_GONE
        changes: list[Change] = []
        for subject in sorted(subjects, key=lambda s: (s.name, s.value)):
            changes += self._changes(subject, gone)
        return changes

    def _changes(self, subject: Subject, gone: str) -> list[Change]:
        old = self._watched.get(subject)
        now = {place: (old[0], old[1].since) for place in self.trace.places(subject)} if old else {}
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


def watched(ledger: Ledger, number: int) -> dict[Subject, tuple[str, Value]]:
    """The old values once turn `number` has happened: each stale and forgotten value, a value
    both stale and forgotten counted as forgotten (a forget asked for it to go)."""
    state = ledger.after(number)
    found: dict[Subject, tuple[str, Value]] = {}
    for check, values in (("stale", state.stale.values()), ("forgotten", state.forgotten.values())):
        for old in values:
            found[value(old.key, old.value)] = (check, old)
    return found


def _text(subject: Subject) -> str:
    return f"{subject.name}={subject.value}"
