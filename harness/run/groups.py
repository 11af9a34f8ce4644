"""The invariant every policy keeps, built-in or plug-in, checked at each turn and forget.

A **violation** is one of:

- **a split group** in the request view or the retained state: a tool call without its result
  right after its assistant message, or a tool result without its call right before it
  (`harness.policy.groups.group_problems`; the API refuses such a request with HTTP 400);
- **the system message missing** from a request view, when the chronology has one (the retained
  state leaves it out by the contract: no policy ever drops it, so it is not kept there);
- **a user message altered** without a recorded drop: a message of role `user` that names a
  chronology turn (`Message.turn`) and enters a view or the retained state with a text other
  than that turn's `user:` (bounded-facts' `facts+current` message: one that does not end with
  it), while no `Drop` of the policy so far holds that turn's text;
- **a user message removed from the retained state** without a recorded drop: it left the
  retained state at this turn, and no `Drop` of the policy so far (this turn's included) holds
  its text; or the turn's own user message, which neither entered the retained state nor is
  held by a `Drop`.

Views are windows: a user message *left out* of a view is not a violation, only one changed.
Only what entered a list since its previous turn is read for the user-message rules, and only
the tool and system messages for the others, so the check costs what changed.

A view with a violation is still sent (a real endpoint then refuses it, as a deployment would
see). The check reads the turn's `TurnState` once the turn is over (`GroupCheck.check`: the view
against the drops before the turn's, the retained state with them), and the turn's `turns.csv` row
records every violation (`group_violations`), at most `MAX_SHOWN` in words and the count of the rest.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from harness.base.messages import Message
from harness.base.sequences import Joined
from harness.chronology import Chronology
from harness.policy.groups import group_problems
from harness.run.turnstate import TurnState

__all__ = ["MAX_SHOWN", "GroupCheck", "violations_text"]

MAX_SHOWN = 5  # violations written per turn; the rest are counted ("and 12 more")


class GroupCheck:
    """One conversation's check: the chronology's user texts, and every text its policy dropped."""

    def __init__(self, chronology: Chronology, system: Message | None) -> None:
        self.system = system
        self.users = {turn.number: turn.user for turn in chronology.user_turns}
        self.dropped: set[str] = set()

    def check(self, state: TurnState) -> list[str]:
        """Every violation of a turn: its request view's, then (the turn's drops taken in) its
        retained state's."""
        sent, difference = state.sent, state.retained_change
        found = self.view(sent.view, sent.known.change.added) if sent is not None else []
        self.dropped.update(drop.text for drop in state.outcome.dropped)
        return found + self.retained(state.retained, difference.added, difference.removed, state.asked)

    def view(self, view: Sequence[Message], added: Iterable[Message]) -> list[str]:
        """The violations of a request view; `added`: its messages the session's previous view lacked."""
        found = [f"view: {problem}" for problem in group_problems(view)]
        if self.system is not None and not self._holds_system(view):
            found.append("view: the system message is missing")
        return found + [f"view: {problem}" for problem in self._altered(added)]

    def retained(
        self, retained: Sequence[Message], added: Iterable[Message], removed: Iterable[Message], turn: int | None
    ) -> list[str]:
        """The violations of the retained state; `added` and `removed`: its change since the
        previous turn; `turn`: the user turn just taken in (None after a forget)."""
        found = [f"retained: {problem}" for problem in group_problems(retained)]
        added = list(added)
        found += [f"retained: {problem}" for problem in self._altered(added)]
        still = set(added)  # a change found by a shared head and tail may remove and add the same message
        for message in removed:
            if self._names_a_turn(message) and message not in still and message.content not in self.dropped:
                found.append(f"retained: user message of turn {message.turn} removed without a recorded drop")
        if turn is not None and turn in self.users and self.users[turn] not in self.dropped:
            if not any(m.turn == turn and self._names_a_turn(m) for m in added):
                found.append(f"retained: user message of turn {turn} neither kept nor dropped")
        return found

    def _holds_system(self, view: Sequence[Message]) -> bool:
        system = self.system
        assert system is not None
        if view and _same(view[0], system):
            return True
        joined = view if isinstance(view, Joined) else Joined([(view, len(view))])
        return any(_same(joined[p], system) for p in joined.positions("system"))

    def _names_a_turn(self, message: Message) -> bool:
        return message.role == "user" and message.turn in self.users

    def _altered(self, added: Iterable[Message]) -> list[str]:
        found = []
        for message in added:
            if not self._names_a_turn(message):
                continue
            assert message.turn is not None
            text = self.users[message.turn]
            same = message.content.endswith(text) if message.origin == "facts+current" else message.content == text
            if not same and text not in self.dropped:
                found.append(f"user message of turn {message.turn} altered without a recorded drop")
        return found


def _same(message: Message, system: Message) -> bool:
    return message.role == "system" and message.content == system.content


def violations_text(violations: list[str]) -> str | None:
    """The `group_violations` cell: the first `MAX_SHOWN` violations, then how many more; None: none."""
    if not violations:
        return None
    more = len(violations) - MAX_SHOWN
    return "; ".join(violations[:MAX_SHOWN]) + (f"; and {more} more" if more > 0 else "")
