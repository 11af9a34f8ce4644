"""The trace of one policy's turns: entries, departures and the cause of each, session by session."""

from __future__ import annotations

from harness.base.messages import Message
from harness.chronology.ledger import Ledger
from harness.policy import Drop
from harness.results.rows import DISPUTED_VIEW
from harness.run.presence import Presence, prohibition, value
from harness.run.trace import Loss, Trace
from tests.conftest import NO_RESTART, chronology, user

RULE = "Never restart production."
CHRON = chronology(user(1, RULE), prohibitions=(NO_RESTART,))
SUBJECT = prohibition("no-restart")


def msg(text: str, session: str | None = "s") -> Message:
    return Message("user", text, "history", 1, session)


def trace(shared: bool = False) -> Trace:
    return Trace(Presence(CHRON, Ledger(CHRON).values()), shared)


def test_a_view_holding_the_subject_has_it_in_view_and_one_without_does_not() -> None:
    t = trace()
    t.view(1, "s", [msg(RULE)])
    assert t.in_view("s", SUBJECT) and not t.in_view("other", SUBJECT)
    t.view(2, "s", [msg("x")])
    assert not t.in_view("s", SUBJECT)


def test_lost_from_a_window_while_still_retained() -> None:
    t = trace()
    t.view(1, "s", [msg(RULE)])
    t.after(1, "s", [msg(RULE)], [])
    t.view(2, "s", [msg("x")])
    assert t.loss("s", SUBJECT, 1, "s") == Loss("window", "left the request window at turn 2")


def test_lost_from_the_retained_state_takes_the_policys_reason() -> None:
    t = trace()
    t.view(1, "s", [msg(RULE)])
    t.after(1, "s", [], [Drop(RULE, "evicted at turn 1", "eviction")])
    t.view(2, "s", [msg("x")])
    assert t.loss("s", SUBJECT, 1, "s") == Loss("eviction", "evicted at turn 1")


def test_a_departure_without_a_drop_or_a_retained_copy_is_untraced() -> None:
    t = trace()
    t.view(1, "s", [msg(RULE)])
    t.after(1, "s", [], [])
    t.view(2, "s", [msg("x")])
    assert t.loss("s", SUBJECT, 1, "s").cause == "untraced"


def test_the_last_departure_is_the_loss() -> None:
    t = trace()
    for number, view in ((1, [RULE]), (2, ["x"]), (3, [RULE]), (4, ["y"])):
        t.view(number, "s", [msg(text) for text in view])
        t.after(number, "s", [msg(RULE)], [])
    assert t.loss("s", SUBJECT, 1, "s") == Loss("window", "left the request window at turn 4")


def test_another_sessions_drop_does_not_explain_a_per_session_loss_but_a_shared_ones_does() -> None:
    for shared, cause in ((False, "window"), (True, "eviction")):
        t = trace(shared)
        t.view(1, "s", [msg(RULE)])
        t.after(1, "s", [msg(RULE, None)], [])
        t.view(2, "t", [msg("x", "t")])
        t.after(2, "t", [], [Drop(RULE, "evicted at turn 2", "eviction")])
        t.view(3, "s", [msg("x")])
        assert t.loss("s", SUBJECT, 1, "s").cause == (cause if shared else "untraced")


def test_a_forgets_drop_explains_a_loss_in_every_session() -> None:
    t = trace()
    t.view(1, "s", [msg(RULE)])
    t.after(1, "s", [msg(RULE)], [])
    t.after(2, None, [], [Drop(RULE, "history cleared by forget all at turn 2", "forget")])
    t.view(3, "s", [msg("x")])
    assert t.loss("s", SUBJECT, 1, "s") == Loss("forget", "history cleared by forget all at turn 2")


def test_another_sessions_history_is_never_a_window_loss() -> None:
    t = trace()
    t.view(1, "support", [msg(RULE, "support")])
    t.after(1, "support", [msg(RULE, "support")], [])
    t.view(2, "logs", [msg("x", "logs")])
    loss = t.loss("logs", SUBJECT, 1, "support")
    assert loss.cause == "other-session"
    assert loss.where.startswith("never in the view of session logs: stated at turn 1 in session support")


def test_a_shared_state_never_reads_other_session_even_when_the_policy_reported_nothing() -> None:
    # Its store is every session's: what it did not report is untraced, never "not a loss".
    t = trace(shared=True)
    t.view(1, "support", [msg(RULE, "support")])
    t.after(1, "support", [msg(RULE, "support")], [])
    t.view(2, "logs", [msg("x", "logs")])
    assert t.loss("logs", SUBJECT, 1, "support") == Loss(
        "untraced", "not in the view of session logs since turn 1 (the policy reported no reason)"
    )


def test_a_departure_before_the_latest_statement_is_not_the_loss() -> None:
    t = trace()
    t.view(1, "s", [msg(RULE)])
    t.after(1, "s", [msg(RULE)], [])
    t.view(2, "s", [msg("x")])  # left at 2, stated again at 3 in another session
    assert t.loss("s", SUBJECT, 3, "t").cause == "other-session"


def test_a_drop_is_matched_by_the_exact_text_of_a_message_that_stated_it() -> None:
    chron = chronology(user(1, "We moved to 5.0.", sets=(("version", "5.0"),)))
    t = Trace(Presence(chron, Ledger(chron).values()))
    stated = Message("user", "We moved to 5.0.", "history", 1, "s")
    t.view(1, "s", [stated])
    t.after(1, "s", [], [Drop("We moved to 5.0.", "absent from the summary written at turn 1", "summary")])
    t.view(2, "s", [])
    assert t.loss("s", value("version", "5.0"), 1, "s").cause == "summary"


def test_a_view_only_clearing_reported_at_the_same_turn_names_the_departure() -> None:
    # clear-tool-uses edits the view of turn 2 and reports it after that turn's answer: the
    # history still holds the result, so without the policy's word the loss would read `window`.
    result = Message("tool", RULE, "history", 1, "s", tool_call_id="call_1")
    t = trace()
    t.view(1, "s", [result])
    t.after(1, "s", [result], [])
    t.view(2, "s", [Message("tool", "[cleared]", "history", 1, "s", tool_call_id="call_1")])
    t.after(2, "s", [result], [Drop(RULE, "tool result of call_1 cleared at turn 2", "tool-clear")])
    assert t.loss("s", SUBJECT, 1, "s") == Loss("tool-clear", "tool result of call_1 cleared at turn 2")


def test_a_view_only_drop_of_another_turn_or_session_does_not_rename_a_window_loss() -> None:
    for number, session in ((3, "s"), (2, "t")):
        t = trace()
        t.view(1, "s", [msg(RULE)])
        t.after(1, "s", [msg(RULE)], [])
        t.view(2, "s", [msg("x")])
        t.after(number, session, [msg(RULE)], [Drop(RULE, "cleared", "tool-clear")])
        assert t.loss("s", SUBJECT, 1, "s") == Loss("window", "left the request window at turn 2")


def test_a_pinned_copy_keeps_a_subject_in_view_and_kept_when_its_history_message_is_dropped() -> None:
    t = trace()
    pinned = Message("user", RULE, "pinned", 1, "s")
    t.view(1, "s", [msg(RULE)])
    t.after(1, "s", [pinned], [Drop(RULE, "absent from the summary written at turn 1", "summary")])
    t.view(2, "s", [pinned, msg("x")])
    assert t.in_view("s", SUBJECT) and t.in_retained(SUBJECT)
    assert t.holders(SUBJECT) == [("pinned", None)]  # residue's place: the pinned statements, not outside text


def test_what_only_disputed_messages_state_is_unknown_in_view_until_the_next_view() -> None:
    t = trace()
    kept, other = msg(RULE), msg("x")
    t.view(1, "s", [kept, other])
    t.dispute("s", [kept])  # in the view, but the provider may have cleared it
    assert t.seen_in_view("s", SUBJECT) is None and t.unknown_note("s") == DISPUTED_VIEW
    t.view(2, "s", [kept, other])
    assert t.seen_in_view("s", SUBJECT) is True  # a dispute lasts one view
    t.view(3, "s", [other])
    t.dispute("s", [kept])  # not in the view, but the provider may have kept it
    assert t.seen_in_view("s", SUBJECT) is None


def test_a_disputed_message_does_not_hide_what_another_one_states() -> None:
    t = trace()
    t.view(1, "s", [msg(RULE), msg(RULE + " ")])
    t.dispute("s", [msg(RULE)])
    assert t.seen_in_view("s", SUBJECT) is True
