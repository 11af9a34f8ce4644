"""`last-turns`: a view of the most recent completed turns; the history itself is kept whole."""

from __future__ import annotations

from collections.abc import Sequence

from harness.base.messages import Message
from harness.policy import Param
from harness.policy.compaction import first_turn, last_turn_starts
from harness.policy.contract import MAX_TURNS
from harness.policy.history import HistoryPolicy
from harness.policy.pinning import PIN_PARAM, Pins


class LastTurns(HistoryPolicy):
    """System, the N most recent completed turns, and the current user message."""

    name = "last-turns"
    description = (
        "Sends only the last N completed turns plus the current message; the window is a view, history is kept."
    )
    params = (
        Param("turns", 3, "completed turns shown besides the current message", minimum=0, maximum=MAX_TURNS),
        PIN_PARAM,
    )
    roles = ()

    def __init__(self, system: Message | None, turns: int = 3, pin: str = "false") -> None:
        super().__init__(system)
        self.turns = turns
        self.pins = Pins(pin)

    def window(self, history: Sequence[Message], current: Message) -> list[Message]:
        # The turns are found from the end: a long history costs what the window shows.
        first = first_turn(history)
        starts = last_turn_starts(history, self.turns)
        start = starts[-1] if len(starts) == self.turns and starts else first
        recent = list(history[start:]) if self.turns else []
        return list(history[:first]) + recent + [current]
