"""Pinned statements: what the chronology marks `pin: true`, copied verbatim into every view.

A policy that summarises or compacts may lose a rule the user or the operator stated, as a
summary dropped the right database in anthropics/claude-code #88753; the ConstraintRot study
measured constraint violations rising from 0% with full context to 30% after compaction, and
back to 0% with the constraints pinned. With `pin=true` (`PIN_PARAM`), such a policy keeps a copy
of each pinned statement apart from its history (a user message marked `pin: true`, a turn's
system message marked `system: {text, pin: true}`) and sends the copies in every later view of
their session, after the system message and before the summary or the window, in turn order,
with origin `pinned`. The copy is taken once the exchange completes (at its own turn the
statement is the current message), and a copy is sent even while the original is still in the
window: pinning is a list kept beside the history, not a rule of the window. A `forget` clears
the pinned statements with everything else (the seed's rule). The copies are part of the
retained state (residue place `pinned`), so a pinned prohibition stays in view and in the kept
state whatever the history or summary drops.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.base.messages import Message
from harness.base.params import Param
from harness.chronology.types import Forget, UserTurn
from harness.policy.contract import Drop

PIN_CHOICES = ("false", "true")
PIN_PARAM = Param(
    "pin",
    "false",
    "copy statements the chronology pins (pin: true) verbatim into every later view",
    choices=PIN_CHOICES,
)


def pinned_statements(turn: UserTurn) -> list[Message]:
    """The turn's pinned statements as copies (origin `pinned`), in the order they were sent:
    the user message, then the turn's system message."""
    copies = [Message("user", turn.user, "pinned", turn.number, turn.session)] if turn.pin else []
    if turn.pin_system and turn.system is not None:
        copies.append(Message("system", turn.system, "pinned", turn.number, turn.session))
    return copies


class Pins:
    """The pinned statements of one conversation, per session, in turn order; empty when
    pinning is off (`enabled` False), so a policy calls it the same way either way."""

    def __init__(self, enabled: str | bool) -> None:
        self.enabled = enabled in (True, "true")
        self._by_session: dict[str, list[Message]] = {}

    def after_answer(self, turn: UserTurn) -> None:
        """Take the turn's pinned statements, once its exchange is complete."""
        if self.enabled and (copies := pinned_statements(turn)):
            self._by_session.setdefault(turn.session, []).extend(copies)

    def of(self, session: str) -> list[Message]:
        """The copies a view of `session` sends, after the system message."""
        return list(self._by_session.get(session, ()))

    def forget(self, event: Forget) -> list[Drop]:
        """Clear every session's pinned statements, as a forget clears histories and summaries."""
        why = f"pinned statements cleared by forget {event.key or 'all'} at turn {event.number} (the seed's rule)"
        dropped = [Drop(m.text, why, "forget") for copies in self._by_session.values() for m in copies]
        self._by_session.clear()
        return dropped

    def retained(self) -> Sequence[Message]:
        """Every session's copies, part of the retained state."""
        return [m for copies in self._by_session.values() for m in copies]


def opening(system: Message | None, pins: Pins, session: str) -> list[Message]:
    """What every view of `session` opens with: the system message, then the pinned copies."""
    return ([system] if system is not None else []) + pins.of(session)
