"""`token-budget`: the most recent whole turns that fit a token budget, system kept.

This is how most applications bound a request: LangChain's `trim_messages(strategy="last",
include_system=True, allow_partial=False, start_on="human")`. Turns are taken newest first and
whole (a user message with its replies); the first turn that does not fit ends the selection,
so the view is always a contiguous tail of the history. The system message and the current
user message are always sent, even when they alone exceed the budget (the note says so).

Tokens are counted by the harness's local tokenizer (`TokenCounter.budget_count`, the count
`turns.csv` records as `tiktoken_tokens` for the same view); when its encoding is unavailable
the characters/4 estimate is used instead and the note says so. The budget is `budget` tokens,
or, when `budget` is 0, `fraction` of a declared context `window`. The history is kept whole:
the budget shrinks the view only, so what it leaves out is lost to the `window`.
"""

from __future__ import annotations

import math

from harness.chronology import UserTurn
from harness.compaction import split_turns
from harness.history import HistoryPolicy, current_message, system_messages
from harness.messages import Message
from harness.policy import AuxCalls, Outcome, Param
from harness.tokens import TokenCounter


class TokenBudget(HistoryPolicy):
    """System, the most recent whole turns that fit the budget, and the current user message."""

    name = "token-budget"
    description = (
        "Sends the most recent whole turns that fit a token budget (trim_messages, strategy last); history kept."
    )
    params = (
        Param("budget", 0, "tokens per request, counted locally; 0: fraction x window", minimum=0),
        Param("window", 8192, "declared context window in tokens (used when budget is 0)", minimum=1),
        Param(
            "fraction",
            0.25,
            "share of the window given to the request (used when budget is 0)",
            minimum=0.0,
            maximum=1.0,
        ),
    )
    sets = ("deployed",)

    def __init__(self, system: Message | None, budget: int = 0, window: int = 8192, fraction: float = 0.25) -> None:
        super().__init__(system)
        self.budget = budget or math.floor(window * fraction)
        self.source = "" if budget else f" ({fraction:g} of a declared {window}-token window)"
        self.counter = TokenCounter()
        self.note: str | None = None

    def view(self, turn: UserTurn) -> list[Message]:
        fixed = system_messages(self.system)
        head, turns = split_turns(self.histories.of(turn.session))
        current = [current_message(turn)]
        kept = turns[len(turns) - self._fitting(fixed + head, turns, current) :]
        view = fixed + head + [m for t in kept for m in t] + current
        used = self.counter.budget_count(view)
        over = " (over budget: the system and current messages are always sent)" if used.tokens > self.budget else ""
        self.note = (
            f"budget {self.budget} tokens{self.source}, counted by {used.method}; view {used.tokens} "
            f"tokens{over}; {len(kept)} of {len(turns)} earlier turns fit"
        )
        return view

    def _fitting(self, before: list[Message], turns: list[list[Message]], current: list[Message]) -> int:
        """How many of the most recent turns fit. The count grows with every turn added, so a
        binary search finds the first that does not fit in a few counts, not one per turn."""
        low, high = 0, len(turns)  # the last `low` turns fit; more than `high` do not
        while low < high:
            middle = (low + high + 1) // 2
            recent = [m for t in turns[len(turns) - middle :] for m in t]
            if self.counter.budget_count(before + recent + current).tokens <= self.budget:
                low = middle
            else:
                high = middle - 1
        return low

    def after_answer(self, turn: UserTurn, answer: str, aux: AuxCalls) -> Outcome:
        outcome = super().after_answer(turn, answer, aux)
        outcome.note = self.note
        return outcome
