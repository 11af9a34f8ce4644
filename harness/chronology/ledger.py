"""The chronology's ground truth, turn by turn: the turn where each prohibition was stated, the
latest declared value per key, the values a correction replaced and the values a `forget`
removed. Derived from the chronology alone; the checks (`harness.run.checks`) compare each
policy's trace with it, and validation reads it to know what a probe may ask about.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.chronology.declarations import parse_declarations
from harness.chronology.types import Chronology, Forget, UserTurn


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
        state: LedgerState = LedgerState()
        active: dict[str, int] = {}
        for turn in chronology.turns:
            state, active = advance(state, turn), self._in_force(active, turn)
            self._after[turn.number], self._active[turn.number] = state, active

    def after(self, number: int) -> LedgerState:
        """The values as they stand once turn `number` has happened."""
        return self._after[number]

    def prohibitions_in_force(self, number: int) -> dict[str, int]:
        """Prohibition ids in force once turn `number` has happened, with the turn that stated them."""
        return self._active[number]

    def _in_force(self, active: dict[str, int], turn: UserTurn | Forget) -> dict[str, int]:
        """A prohibition is stated by the first user message matching `present`; `forget all`,
        or `forget KEY` when it was stated as a `KEY=...` declaration, withdraws it (the
        forgotten-value check then watches that it stays gone)."""
        if isinstance(turn, Forget):
            if turn.key is None:
                return {}
            return {pid: since for pid, since in active.items() if not self._declared_as(pid, since, turn.key)}
        active = dict(active)
        for prohibition in self.chronology.prohibitions:
            if prohibition.id not in active and prohibition.present.search(turn.user):
                active[prohibition.id] = turn.number
        return active

    def _declared_as(self, pid: str, since: int, key: str) -> bool:
        stating = next(t for t in self.chronology.user_turns if t.number == since)
        prohibition = next(p for p in self.chronology.prohibitions if p.id == pid)
        declaration = parse_declarations(stating.user, self.chronology.keys).get(key)
        return declaration is not None and bool(prohibition.present.search(declaration.evidence))


def declared(turn: UserTurn) -> dict[str, str]:
    """What a user turn declares for the checks: the one reader's declarations of the user's
    words (for the chronology's key set, which the turn carries), then the turn's `sets:` (a
    value the chronology states in prose on purpose)."""
    values = {key: d.value for key, d in parse_declarations(turn.user, turn.keys).items()}
    values.update(turn.sets)
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
        if previous is not None and previous.value != value:
            new.stale[(key, previous.value)] = Value(key, previous.value, turn.number)
        new.current[key] = Value(key, value, turn.number)
        new.stale.pop((key, value), None)
        for forgotten in [k for k in new.forgotten if k[0] == key]:
            del new.forgotten[forgotten]  # declared again: a new value, no longer forgotten
    return new
