"""Tool groups in a message list: every call answered right after its assistant message, every
result right after its call (what the chat-completions API accepts)."""

from __future__ import annotations

from harness.base.messages import Message, ToolCall
from harness.base.sequences import Log
from harness.policy.groups import group_problems

USER = Message("user", "go", turn=1)
CALLS = Message("assistant", "", turn=1, tool_calls=(ToolCall("a", "f", "{}"), ToolCall("b", "g", "{}")))
RESULT_A = Message("tool", "x", turn=1, tool_call_id="a")
RESULT_B = Message("tool", "y", turn=1, tool_call_id="b")
REPLY = Message("assistant", "done", turn=1)


def test_a_whole_group_is_no_problem_in_a_list_or_a_log() -> None:
    messages = [USER, CALLS, RESULT_A, RESULT_B, REPLY]
    assert group_problems(messages) == []
    assert group_problems(Log(messages).prefix()) == []


def test_results_may_answer_the_calls_in_any_order() -> None:
    assert group_problems([USER, CALLS, RESULT_B, RESULT_A]) == []


def test_a_call_without_its_result() -> None:
    assert group_problems([USER, CALLS, RESULT_A, REPLY]) == ["call b (turn 1) without its result"]


def test_a_result_without_its_call_before_it() -> None:
    assert group_problems(Log([USER, RESULT_A, RESULT_B, REPLY]).prefix()) == [
        "result a (turn 1) without its call before it",
        "result b (turn 1) without its call before it",
    ]


def test_a_message_between_the_call_and_its_result_splits_the_group() -> None:
    assert group_problems([CALLS, RESULT_A, REPLY, RESULT_B]) == [
        "call b (turn 1) without its result",
        "result b (turn 1) without its call before it",
    ]


def test_a_result_given_twice_is_one_too_many() -> None:
    assert group_problems([CALLS, RESULT_A, RESULT_B, RESULT_A]) == ["result a (turn 1) without its call before it"]
