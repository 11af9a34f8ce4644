"""The chronology's ground truth, turn by turn: the turn where each prohibition was stated, the
latest declared value per key, the values a correction replaced and the values a `forget`
removed. Derived from the chronology alone; the checks (`harness.run.checks`) compare each
policy's trace with it, and validation reads it to know what a probe may ask about.

What counts as a correction is what the checks can tell apart: a declaration is another value
only when it is not the same value by `harness.chronology.values.same` (NFC, case folded), the
rule every match uses. `ACME Corp` then `Acme Corp` is the value restated, not a correction
that would make `ACME Corp` "stale" in every answer naming the customer.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.chronology.declarations import parse_declarations
from harness.chronology.types import Chronology, Forget, UserTurn
from harness.chronology.values import identity, nfc, same


@dataclass(frozen=True)
class Value:
    """A declared value, and the turn that made it current, stale or forgotten."""

    key: str
    value: str
    since: int

    @property
    def subject(self) -> str:
        return f"{self.key}={self.value}"


@dataclass
class LedgerState:
    current: dict[str, Value] = field(default_factory=dict)
    stale: dict[tuple[str, str], Value] = field(default_factory=dict)
    forgotten: dict[tuple[str, str], Value] = field(default_factory=dict)


class Ledger:
    """The chronology's ground truth, turn by turn."""

    def __init__(self, chronology: Chronology) -> None:
        self.chronology = chronology
        self._after: dict[int, LedgerState] = {}
        self._active: dict[int, dict[str, int]] = {}
        self._statements: dict[str, list[int]] = {}  # every turn that stated each prohibition
        self._sessions = {t.number: t.session if isinstance(t, UserTurn) else None for t in chronology.turns}
        state: LedgerState = LedgerState()
        active: dict[str, int] = {}
        for turn in chronology.turns:
            state, active = advance(state, turn), self._in_force(active, turn)
            self._after[turn.number], self._active[turn.number] = state, active

    def session_of(self, number: int) -> str | None:
        """The session of turn `number`; None for a forget, which touches every session."""
        return self._sessions[number]

    def values(self) -> list[tuple[str, str]]:
        """Every (key, value) the chronology ever makes current, in order of first declaration."""
        seen: dict[tuple[str, str], None] = {}
        for state in self._after.values():
            seen.update((k, None) for k in ((v.key, v.value) for v in state.current.values()))
        return list(seen)

    def after(self, number: int) -> LedgerState:
        """The values as they stand once turn `number` has happened."""
        return self._after[number]

    def prohibitions_in_force(self, number: int) -> dict[str, int]:
        """Prohibition ids in force once turn `number` has happened, with the turn that stated
        them last (a restatement renews a prohibition: its age counts from there)."""
        return self._active[number]

    def _in_force(self, active: dict[str, int], turn: UserTurn | Forget) -> dict[str, int]:
        """A prohibition is stated by every user message matching `present`, and by every
        system message a turn adds (`system:`) that matches it; `forget all`, or
        `forget KEY` when one of its statements since it came into force was a `KEY=...`
        declaration, withdraws it (the forgotten-value check then watches that it stays gone)."""
        if isinstance(turn, Forget):
            if turn.key is None:
                return {}
            return {pid: since for pid, since in active.items() if not self._declared_as(pid, turn.key)}
        active = dict(active)
        for prohibition in self.chronology.prohibitions:
            if any(prohibition.present.search(text) for text in turn.statements):
                if prohibition.id not in active:
                    self._statements[prohibition.id] = []
                self._statements[prohibition.id].append(turn.number)
                active[prohibition.id] = turn.number
        return active

    def _declared_as(self, pid: str, key: str) -> bool:
        prohibition = next(p for p in self.chronology.prohibitions if p.id == pid)
        turns = {t.number: t for t in self.chronology.user_turns}
        for number in self._statements[pid]:
            for text in turns[number].statements:
                declaration = parse_declarations(text, self.chronology.keys).get(key)
                if declaration is not None and prohibition.present.search(declaration.evidence):
                    return True
        return False


def declared(turn: UserTurn) -> dict[str, str]:
    """What a user turn declares for the checks: the one reader's declarations of the user's
    words, then of the turn's system message (for the chronology's key set, which the turn
    carries; the later message wins a key both declare), then the turn's `sets:` (a value the
    chronology states in prose on purpose); each value NFC-normalised, as matching reads it
    (`harness.chronology.values`)."""
    values = {key: nfc(d.value) for text in turn.statements for key, d in parse_declarations(text, turn.keys).items()}
    values.update((key, nfc(text)) for key, text in turn.sets)
    return values


def advance(state: LedgerState, turn: UserTurn | Forget) -> LedgerState:
    """The ledger after one more turn (a new state; earlier states are kept unchanged)."""
    new = LedgerState(dict(state.current), dict(state.stale), dict(state.forgotten))
    if isinstance(turn, Forget):
        keys = [turn.key] if turn.key else list(new.current)
        for key in keys:
            if key in new.current:
                old = new.current.pop(key)
                new.forgotten[(key, old.value)] = Value(key, old.value, turn.number)
        return new
    for key, value in declared(turn).items():
        previous = new.current.get(key)
        if previous is not None and not same(previous.value, value):
            new.stale[(key, previous.value)] = Value(key, previous.value, turn.number)
        new.current[key] = Value(key, value, turn.number)
        # Declared again (in any spelling of the same value): that value is current, neither
        # stale nor forgotten; another value of the key that a forget removed stays forgotten
        # (a summary may still bring it back).
        for old in (new.stale, new.forgotten):
            for spelling in [k for k in old if k[0] == key and identity(k[1]) == identity(value)]:
                del old[spelling]
    return new
