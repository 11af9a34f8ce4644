"""`facts+window`: the bounded fact store's block plus the last N turns, the combination agent
frameworks recommend (a memory provider beside a windowed chat history).

Both parts are the built-in policies themselves, composed: a `bounded-facts` store in
provider mode (the same writer call, admission, eviction, tickets and `forget`, and the same
`facts.jsonl` records), and a `last-turns` window over the session's history, which is kept
whole. The view is the system, the window's turns, the facts block (a separate context
message, as in provider mode) and the current user message. The sizes of the two parts in
each view are written separately to turns.csv `policy_note` (characters, and tokens by the
local tokenizer or the characters/4 estimate, named).
"""

from __future__ import annotations

from dataclasses import replace

from harness.base.messages import Message, total_chars
from harness.chronology import Forget, UserTurn
from harness.policy import AuxCalls, Outcome, Param
from harness.policy.contract import MAX_TURNS
from harness.policy.history import after_current, system_messages
from harness.policy.tokens import TokenCounter
from policies.bounded_facts import BoundedFacts
from policies.last_turns import LastTurns


class FactsWindow:
    """System, the last N completed turns, the facts block, and the current user message."""

    name = "facts+window"
    description = "Sends the bounded fact store's block plus the last N turns; history and facts both kept."
    params = (
        Param(
            "turns",
            3,
            "completed turns shown besides the facts block and the current message",
            minimum=0,
            maximum=MAX_TURNS,
        ),
        Param("provenance", "on", "quote each fact's evidence and turn in the block", choices=("on", "off")),
    )
    sets = ("deployed",)
    shared_across_sessions = True  # every session reads and writes the one fact store
    roles = BoundedFacts.roles  # its fact store's writer calls

    def __init__(self, system: Message | None, turns: int = 3, provenance: str = "on") -> None:
        self.system = system
        self.facts = BoundedFacts(None, mode="provider", provenance=provenance)
        self.window = LastTurns(None, turns=turns)
        self.counter = TokenCounter()
        self.note: str | None = None

    def view(self, turn: UserTurn) -> list[Message]:
        # The parts are asked without the turn's system message and steps, which follow the
        # current message once.
        bare = replace(turn, steps=(), system=None)
        *block, current = self.facts.view(bare)  # starts the fact store's turn (its ticket)
        recent = self.window.view(bare)[:-1]
        shown = sum(m.role == "user" for m in recent)
        self.note = f"{self._size('facts block', block)}; {self._size(f'window of {shown} turns', recent)}"
        return system_messages(self.system) + recent + block + [current] + after_current(turn)

    def _size(self, label: str, part: list[Message]) -> str:
        count = self.counter.budget_count(part, whole_request=False) if part else None
        tokens = f", {count.tokens} tokens ({count.method})" if count else ""
        return f"{label}: {total_chars(part)} chars{tokens}"

    def after_answer(self, turn: UserTurn, answer: str, aux: AuxCalls) -> Outcome:
        self.window.after_answer(turn, answer, aux)  # the history is kept whole: it drops nothing
        stored = self.facts.after_answer(turn, answer, aux)
        # The store's drops are reported as bounded-facts reports them, `not-stored` included: the
        # history keeps the message for its own session only, and another session (whose window
        # never held it) lost it because the one store every session shares never took it. In the
        # message's own session the window shows it at the next turns, so leaving it reads `window`
        # (with turns=0 it never does, and the store's reason stands).
        return Outcome(dropped=stored.dropped, facts=stored.facts, note=self.note)

    def forget(self, event: Forget) -> Outcome:
        history, stored = self.window.forget(event), self.facts.forget(event)
        return Outcome(dropped=stored.dropped + history.dropped, facts=stored.facts)

    def retained(self) -> list[Message]:
        return self.facts.retained() + self.window.retained()
