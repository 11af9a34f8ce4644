"""`last-turns`: a view of the most recent completed turns; the history itself is kept whole."""

from __future__ import annotations

from harness.compaction import split_turns
from harness.history import HistoryPolicy
from harness.messages import Message
from harness.policy import Param


class LastTurns(HistoryPolicy):
    """System, the N most recent completed turns, and the current user message."""

    name = "last-turns"
    description = (
        "Sends only the last N completed turns plus the current message; the window is a view, history is kept."
    )
    params = (Param("turns", 3, "completed turns shown besides the current message", minimum=0),)

    def __init__(self, system: Message | None, turns: int = 3) -> None:
        super().__init__(system)
        self.turns = turns

    def window(self, history: list[Message], current: Message) -> list[Message]:
        head, turns = split_turns(history)
        recent = turns[max(len(turns) - self.turns, 0) :] if self.turns else []
        return head + [m for turn in recent for m in turn] + [current]
