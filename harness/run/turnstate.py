"""One turn's change, worked out once and handed to everything that reads it.

`Changes` keeps what spans turns: each session's latest request view and the retained state,
with their sizes as running sums over what changed (recounting a long history every turn is
quadratic). The `TurnState` it builds holds a turn's change of both (`harness.results.views.change`)
with its outcome and call; the trace, the group check, the residue and the turn's rows read it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.base.messages import Message
from harness.chronology import Turn
from harness.policy import Outcome
from harness.policy.tokens import RequestTokens, RunningCount
from harness.results.rows import CallRecord
from harness.results.views import Change, KnownChange, Record, ViewEncoder, change, kept


@dataclass(frozen=True)
class Sent:
    """A request view as sent (`known.current`), its change from the session's previous view,
    and its figures, which the call's record takes too."""

    known: KnownChange
    tokens: RequestTokens

    @property
    def view(self) -> Sequence[Message]:
        return self.known.current


@dataclass(frozen=True)
class TurnState:
    """What one turn or forget changed, and what came of it."""

    turn: Turn
    session: str  # the turn's; a forget's rows take the chronology's first session
    status: str  # turns.csv's: answered, scripted, stopped, error or forget
    retained: Sequence[Message]  # the policy's retained state after the turn (`kept`)
    retained_change: Change  # from the previous turn's retained state
    retained_chars: int
    records: tuple[list[Record], Record | None, Record]  # views.jsonl's: new messages, view, retained
    sent: Sent | None = None  # None: a forget
    outcome: Outcome = field(default_factory=Outcome)
    call: CallRecord | None = None
    error: str | None = None  # why the answer call failed (status `error`)

    @property
    def number(self) -> int:
        return self.turn.number

    @property
    def asked(self) -> int | None:
        """The user turn whose message the retained state took in (None: none was)."""
        return self.number if self.status in ("answered", "scripted") else None


class Changes:
    """One conversation's views and retained state from turn to turn."""

    def __init__(self, running_count: Callable[[], RunningCount]) -> None:
        self.encoder = ViewEncoder()  # the references views.jsonl records
        self._count = running_count
        self._views: dict[str, tuple[Sequence[Message], RunningCount]] = {}  # each session's latest
        self._retained = running_count()

    def sent(self, session: str, view: Sequence[Message]) -> Sent:
        """`view` (kept) as `session`'s request view this turn: its latest view's figures changed
        by what left and what arrived (only what differs is read)."""
        previous, running = self._views.get(session) or ((), self._count())
        difference = change(previous, view)
        running.update(difference.removed, difference.added)
        self._views[session] = (view, running)
        return Sent(KnownChange(previous, difference, view), running.figures())

    def turn(self, turn: Turn, session: str, status: str, retained: Sequence[Message], **rest: Any) -> TurnState:
        """The turn's state once the policy retained `retained`; `rest`: `TurnState`'s other fields."""
        retained, sent = kept(retained), rest.get("sent")
        view, known = (sent.view, sent.known) if sent else (None, None)
        new, view_ref, retained_ref, _, difference = self.encoder.encode_changes(
            turn.number, session, view, retained, known
        )
        self._retained.update(difference.removed, difference.added)
        records = (new, view_ref, retained_ref)
        return TurnState(turn, session, status, retained, difference, self._retained.chars, records, **rest)
