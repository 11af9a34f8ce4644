"""Per-session chat histories, shared by the policies that keep messages.

Business sessions never see each other's history; a `forget` starts fresh histories in
every session.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.base.messages import Message, Origin
from harness.base.sequences import Joined, Log
from harness.chronology import Forget, UserTurn
from harness.policy.contract import Drop, Outcome
from harness.policy.pinning import Pins, opening

# Said of every loss a forget causes in a history or a summary: it is the seed's rule, not a
# choice of the policy (full history loses the old declarations too).
FORGET_RULE = " (the seed's rule: a forget clears every session's history and summary, whichever key it names)"


def current_message(turn: UserTurn) -> Message:
    """The user message of this turn, as it enters a request view."""
    return Message("user", turn.user, origin="current", turn=turn.number, session=turn.session)


def turn_system(turn: UserTurn, origin: Origin = "history") -> list[Message]:
    """The system message the turn adds mid-conversation (`system:`), if any: sent right after
    the user message, so a policy that keeps or drops whole turns (a user message and what
    follows it) keeps or drops it with its turn."""
    if turn.system is None:
        return []
    return [Message("system", turn.system, origin, turn.number, turn.session)]


def step_messages(turn: UserTurn, origin: Origin = "history") -> list[Message]:
    """The turn's tool steps as messages, in order: for each step, the assistant message
    carrying its calls (empty content), then one `tool` message per result, answering its call."""
    messages: list[Message] = []
    for step in turn.steps:
        messages.append(Message("assistant", "", origin, turn.number, turn.session, tool_calls=step.tool_calls))
        messages += [
            Message("tool", result.content, origin, turn.number, turn.session, tool_call_id=result.id)
            for result in step.results
        ]
    return messages


def current_messages(turn: UserTurn) -> list[Message]:
    """What a request view ends with at this turn: the user message, the turn's system message,
    then its tool steps, as an agent's final call (the one that writes the reply) sees them."""
    return [current_message(turn), *after_current(turn)]


def after_current(turn: UserTurn) -> list[Message]:
    """What follows the current user message in a view: the turn's system message, its tool steps."""
    return [*turn_system(turn, "current"), *step_messages(turn, "current")]


def exchange(turn: UserTurn, answer: str) -> list[Message]:
    """The user message, the turn's system message and tool steps, and the answer, as they
    enter a history."""
    return [
        Message("user", turn.user, origin="history", turn=turn.number, session=turn.session),
        *turn_system(turn),
        *step_messages(turn),
        Message("assistant", answer, origin="history", turn=turn.number, session=turn.session),
    ]


def reply_text(turn: UserTurn, answer: str) -> str:
    """The assistant's side of an exchange as one text, for a policy that reads an exchange as
    text (a summarizer): each tool call and result (outside text, like the answer), then the answer."""
    lines = [
        message.text if message.role == "assistant" else f"[{message.tool_call_id}] {message.content}"
        for message in step_messages(turn)
    ]
    return "\n".join([*lines, answer])


def system_messages(system: Message | None) -> list[Message]:
    return [system] if system is not None else []


class SessionHistories:
    """One message log per session, in the order sessions were first used.

    A history that only grows is appended to in place (`Log`), and read as a `Joined` that
    shares its storage, so keeping a long history costs what each turn adds, not its length.
    """

    def __init__(self) -> None:
        self._by_session: dict[str, Log] = {}

    def of(self, session: str) -> Joined:
        log = self._by_session.get(session)
        return log.prefix() if log is not None else Joined(())

    def set(self, session: str, messages: Sequence[Message]) -> list[Message]:
        """Replace a session's history; return the messages that were dropped."""
        before = self._by_session.get(session)
        if before is not None and _extends(messages, before):
            before.extend(messages[len(before) :])
            return []
        kept = {id(m) for m in messages}
        self._by_session[session] = Log(messages)
        return [m for m in before or () if id(m) not in kept]

    def clear(self) -> list[Message]:
        """Start fresh histories in every session; return what was dropped."""
        dropped = list(self.all())
        self._by_session.clear()
        return dropped

    def all(self) -> Joined:
        return Joined([(log, len(log)) for log in self._by_session.values()])


def _extends(messages: Sequence[Message], log: Log) -> bool:
    """Whether `messages` is all of `log` and then more, known from how it was built."""
    if not isinstance(messages, Joined) or not messages.parts:
        return False
    items, n = messages.parts[0]
    return items is log and n == len(log)


class HistoryPolicy:
    """Base of the policies that keep messages: subclasses choose the window and the reduction.

    The retained state excludes the system instructions, which no policy ever drops. A subclass
    that takes `pin` (`harness.policy.pinning.PIN_PARAM`) sets `self.pins = Pins(pin)`: the pinned
    copies then open every view after the system message, and are part of the retained state.
    """

    name = "history"
    description = ""
    params: tuple = ()

    def __init__(self, system: Message | None, **params: object) -> None:
        self.system = system
        self.histories = SessionHistories()
        self.pins = Pins(False)

    def window(self, history: Joined, current: Message) -> Sequence[Message]:
        """The request view without the system message; the whole history by default."""
        return history + [current]

    def reduce(self, history: Joined) -> Sequence[Message]:
        """The history kept after an exchange; all of it by default."""
        return history

    def view(self, turn: UserTurn) -> Sequence[Message]:
        # The turn's system message and steps follow the current message: `window` sees only the
        # history and that message, so a window never cuts into the current turn.
        window = self.window(self.histories.of(turn.session), current_message(turn))
        return opening(self.system, self.pins, turn.session) + window + after_current(turn)

    def after_answer(self, turn: UserTurn, answer: str, aux: object) -> Outcome:
        self.pins.after_answer(turn)
        history = self.histories.of(turn.session) + exchange(turn, answer)
        dropped = self.histories.set(turn.session, self.reduce(history))
        why = f"dropped from the retained history after turn {turn.number}"
        return Outcome(dropped=[Drop(m.text, why, "reduction") for m in dropped])

    def forget(self, event: Forget) -> Outcome:
        why = f"history cleared by forget {event.key or 'all'} at turn {event.number}{FORGET_RULE}"
        dropped = [Drop(m.text, why, "forget") for m in self.histories.clear()]
        return Outcome(dropped=dropped + self.pins.forget(event))

    def retained(self) -> Sequence[Message]:
        return self.histories.all() + self.pins.retained()
