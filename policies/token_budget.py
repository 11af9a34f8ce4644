"""`token-budget`: the most recent whole turns that fit a token budget, system kept.

This is how most applications bound a request: LangChain's `trim_messages(strategy="last",
include_system=True, allow_partial=False, start_on="human")`. Turns are taken newest first and
whole (a user message with its replies); the first turn that does not fit ends the selection,
so the view is always a contiguous tail of the history. The system message and the current
user message (with the turn's tool steps) are always sent, even when they alone exceed the
budget (the note says so).

Tokens are counted as `counter` says (`harness.policy.counters`): by default (`local`) by the
harness's local tokenizer (the count `turns.csv` records as `tiktoken_tokens` for the same view),
or the characters/4 estimate when its encoding is unavailable, and the note says which. When the
count is `unknown` (`provider` without reported usage) or `unavailable` (`tiktoken` without its
encoding), nothing is trimmed: the whole history is sent and the note says why. The budget is `budget` tokens,
or, when `budget` is 0, `fraction` of a declared context `window`. The history is kept whole:
the budget shrinks the view only, so what it leaves out is lost to the `window`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from harness.base.messages import Message
from harness.chronology import UserTurn
from harness.policy import AuxCalls, Outcome, Param
from harness.policy.compaction import count_turns, first_turn, turn_starts_from_end
from harness.policy.contract import MAX_TOKENS, TriggerCount
from harness.policy.counters import COUNTER_PARAM, DEFAULT_COUNTER, TriggerCounter
from harness.policy.history import HistoryPolicy, current_messages
from harness.policy.pinning import PIN_PARAM, Pins, opening
from harness.policy.tokens import Tally


class TokenBudget(HistoryPolicy):
    """System, the most recent whole turns that fit the budget, and the current user message."""

    name = "token-budget"
    description = (
        "Sends the most recent whole turns that fit a token budget (trim_messages, strategy last); history kept."
    )
    params = (
        Param(
            "budget", 0, "tokens per request, counted by `counter`; 0: fraction x window", minimum=0, maximum=MAX_TOKENS
        ),
        Param(
            "window", 8192, "declared context window in tokens (used when budget is 0)", minimum=1, maximum=MAX_TOKENS
        ),
        Param(
            "fraction",
            0.25,
            "share of the window given to the request (used when budget is 0)",
            minimum=0.0,
            maximum=1.0,
        ),
        COUNTER_PARAM,
        PIN_PARAM,
    )
    sets = ("deployed",)
    roles = ()

    def __init__(
        self,
        system: Message | None,
        budget: int = 0,
        window: int = 8192,
        fraction: float = 0.25,
        counter: str = DEFAULT_COUNTER,
        pin: str = "false",
    ) -> None:
        super().__init__(system)
        self.pins = Pins(pin)
        self.budget = budget or math.floor(window * fraction)
        self.source = "" if budget else f" ({fraction:g} of a declared {window}-token window)"
        self.counter = TriggerCounter(counter)
        self.note: str | None = None
        self.count: TriggerCount | None = None  # the view's count, as the budget saw it

    def view(self, turn: UserTurn) -> list[Message]:
        fixed = opening(self.system, self.pins, turn.session)  # pinned copies are sent whatever the budget
        history = self.histories.of(turn.session)
        first = first_turn(history)
        head, current = list(history[:first]), current_messages(turn)
        start, kept, tally = self._fitting(turn.session, fixed + head, history, current)
        view = fixed + head + list(history[start:]) + current
        used = self.count = self._count(turn.session, tally)  # the view's: `_fitting` summed exactly its messages
        earlier = count_turns(history)
        if used.tokens is None:
            self.note = (
                f"budget {self.budget} tokens{self.source}; view {used.describe()}: all {earlier} earlier turns sent"
            )
            return view
        over = " (over budget: the system and current messages are always sent)" if used.exceeds(self.budget) else ""
        self.note = (
            f"budget {self.budget} tokens{self.source}, counted by {used.how}; view {used.tokens} "
            f"tokens{over}; {kept} of {earlier} earlier turns fit"
        )
        return view

    def _count(self, session: str, tally: Tally) -> TriggerCount:
        return self.counter.of(session, tally.chars, tally.tokens)

    def _fitting(
        self, session: str, before: list[Message], history: Sequence[Message], current: list[Message]
    ) -> tuple[int, int, Tally]:
        """Where the most recent turns that fit start (the history's length when none fits),
        how many turns that is, and the count of `before`, those turns and `current` (the view's).
        Turns are added newest first until one does not fit: the count only grows with every
        turn added, so the first that does not fit ends the selection, and the work is what
        the view holds, not the whole history."""
        tally = self.counter.local.tally(before + current)
        start, kept = len(history), 0
        for begins in turn_starts_from_end(history):
            with_turn = tally.plus(history[begins:start])
            if self._count(session, with_turn).exceeds(self.budget):
                break
            tally, start, kept = with_turn, begins, kept + 1
        return start, kept, tally

    def after_answer(self, turn: UserTurn, answer: str, aux: AuxCalls) -> Outcome:
        outcome = super().after_answer(turn, answer, aux)
        outcome.note, outcome.trigger = self.note, self.count
        self.counter.learn(turn, aux)
        return outcome
