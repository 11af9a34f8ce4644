"""`none`: the control. Each request holds the system message and the current turn only, and
nothing is retained, so a check it passes is one any policy passes without memory: by the
answer's silence, by the system message, or by the question itself (docs/policies.md)."""

from __future__ import annotations

from collections.abc import Sequence

from harness.base.messages import Message
from harness.chronology import Forget, UserTurn
from harness.policy import Drop, Outcome
from harness.policy.history import current_messages, exchange, system_messages


class NoMemory:
    """System, then the current user message and the current turn's own tool steps (an agent's
    call and its results stay one group); no earlier turn, nothing kept between turns."""

    name = "none"
    description = (
        "The control: sends the system message and the current turn only and keeps nothing; "
        "what it passes needs no memory."
    )
    params = ()
    roles = ()
    sets = ("control",)

    def __init__(self, system: Message | None) -> None:
        self.system = system

    def view(self, turn: UserTurn) -> Sequence[Message]:
        # The current turn's tool steps are part of the question the agent answers, not memory.
        return system_messages(self.system) + current_messages(turn)

    def after_answer(self, turn: UserTurn, answer: str, aux: object) -> Outcome:
        # Nothing of the exchange is kept: each message is reported as never stored, so a loss
        # says why (`not-stored`) and the replay's check sees every user message accounted for.
        why = f"not kept: the control keeps nothing (turn {turn.number})"
        return Outcome(dropped=[Drop(m.text, why, "not-stored") for m in exchange(turn, answer) if m.text])

    def forget(self, event: Forget) -> Outcome:
        return Outcome()  # nothing was kept to clear

    def retained(self) -> Sequence[Message]:
        return []
