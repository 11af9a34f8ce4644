"""The sliding-window strategy applied two ways: to the request view, or to the retained history.

Both mirror Microsoft Agent Framework: `CompactionProvider` shrinks what is sent and keeps the
source history whole; `AsChatReducer` reduces the stored history after each exchange, so the
snapshot holds only the reduced list and the view can hold one more turn (the current one).
"""

from __future__ import annotations

from harness.base.messages import Message
from harness.policy import Param
from harness.policy.compaction import sliding_window
from harness.policy.contract import MAX_TURNS
from harness.policy.history import HistoryPolicy
from harness.policy.pinning import PIN_PARAM, Pins


class SlidingWindow(HistoryPolicy):
    """What both ways share: the window's parameters, and no model call of their own."""

    params = (
        Param("trigger", 3, "compact when the turns exceed this number", minimum=1, maximum=MAX_TURNS),
        Param(
            "preserve",
            3,
            "minimum turns preserved when compacting; max(trigger, preserve) turns are kept",
            minimum=1,
            maximum=MAX_TURNS,
        ),
        PIN_PARAM,
    )
    roles = ()

    def __init__(self, system: Message | None, trigger: int = 3, preserve: int = 3, pin: str = "false") -> None:
        super().__init__(system)
        self.trigger, self.preserve = trigger, preserve
        self.pins = Pins(pin)


class RequestCompaction(SlidingWindow):
    """At most `max(trigger, preserve)` turns in the view, counting the current one; history kept whole."""

    name = "request-compaction"
    description = "Sliding-window compaction of the request view (current turn counts); retained history unchanged."

    def window(self, history: list[Message], current: Message) -> list[Message]:
        return sliding_window(history + [current], self.trigger, self.preserve)


class RetainedReduction(SlidingWindow):
    """After each exchange the stored history keeps `max(trigger, preserve)` turns; the view adds the current one."""

    name = "retained-reduction"
    description = (
        "Sliding-window reduction of the retained history after each exchange; the view can hold one turn more."
    )

    def reduce(self, history: list[Message]) -> list[Message]:
        return sliding_window(history, self.trigger, self.preserve)
