"""One turn's change, worked out once (`Changes`) and handed whole (`TurnState`) to what reads it."""

from __future__ import annotations

from harness.base.messages import Message
from harness.chronology import Forget
from harness.chronology.ledger import Ledger
from harness.policy import Drop, Outcome
from harness.policy.tokens import RunningCount, TokenCounter
from harness.run.presence import Presence, prohibition
from harness.run.trace import Loss, Trace
from harness.run.turnstate import Changes
from tests.conftest import NO_RESTART, chronology, user

RULE = "Never restart production."
COUNTER = TokenCounter()


def msg(text: str, session: str = "s") -> Message:
    return Message("user", text, "history", 1, session)


def changes() -> Changes:
    return Changes(lambda: RunningCount(COUNTER))


def test_a_view_is_read_by_its_change_from_its_sessions_previous_view_and_sized_whole() -> None:
    c = changes()
    first, second, third = msg("one"), msg("two"), msg("three")
    c.sent("s", [first, second])
    sent = c.sent("s", [first, second, third])
    assert (sent.known.change.head, sent.known.change.removed, sent.known.change.added) == (2, [], [third])
    assert c.sent("s", [second, third]).known.change.removed == [first]  # a window moved on
    assert sent.tokens == COUNTER.count([first, second, third])
    other = c.sent("t", [third])  # another session's previous view is its own
    assert (other.known.previous, other.known.change.added) == ((), [third])


def test_a_turns_state_holds_the_retained_change_and_size_and_a_forgets_has_no_view() -> None:
    c, kept = changes(), msg("kept")
    turn = c.turn(user(1, "kept", "s"), "s", "scripted", [kept], sent=c.sent("s", [kept]))
    assert (turn.retained_change.added, turn.retained_chars, turn.asked) == ([kept], COUNTER.count([kept]).chars, 1)
    forget = c.turn(Forget(2, 2, None), "s", "forget", [])
    assert (forget.retained_change.removed, forget.retained_chars, forget.asked) == ([kept], 0, None)
    assert forget.sent is None and forget.records[1] is None  # views.jsonl: no view at a forget


def test_the_trace_takes_a_forget_as_touching_every_session() -> None:
    chron = chronology(user(1, RULE), prohibitions=(NO_RESTART,))
    trace, c = Trace(Presence(chron, Ledger(chron).values())), changes()
    trace.take(c.turn(user(1, RULE, "s"), "s", "scripted", [msg(RULE)], sent=c.sent("s", [msg(RULE)])))
    cleared = Outcome(dropped=[Drop(RULE, "history cleared by forget all at turn 2", "forget")])
    trace.take(c.turn(Forget(2, 2, None), "other", "forget", [], outcome=cleared))
    trace.take(c.turn(user(3, "x", "s"), "s", "scripted", [], sent=c.sent("s", [msg("x")])))
    assert trace.loss("s", prohibition("no-restart"), 1, "s") == Loss(
        "forget", "history cleared by forget all at turn 2"
    )
