"""Messages: the OpenAI wire format, the record written to the results, and the text the
figures count, for plain messages and the messages of a tool step."""

from __future__ import annotations

from harness.base.messages import Message, ToolCall, total_chars

CALLS = Message(
    "assistant", "", turn=2, session="main", tool_calls=(ToolCall("call_1", "read_file", '{"path": "a.py"}'),)
)
RESULT = Message("tool", "print(1)", turn=2, session="main", tool_call_id="call_1")


def test_a_plain_message_is_role_and_content_on_the_wire() -> None:
    assert Message("user", "hi").as_openai() == {"role": "user", "content": "hi"}


def test_an_assistant_message_with_calls_carries_them_as_functions_and_no_content() -> None:
    assert CALLS.as_openai() == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a.py"}'}}
        ],
    }


def test_a_tool_message_names_the_call_it_answers() -> None:
    assert RESULT.as_openai() == {"role": "tool", "content": "print(1)", "tool_call_id": "call_1"}


def test_the_record_keeps_calls_and_call_ids_only_where_a_message_has_them() -> None:
    assert "tool_calls" not in Message("user", "hi").as_record()
    assert CALLS.as_record()["tool_calls"] == [{"id": "call_1", "name": "read_file", "arguments": '{"path": "a.py"}'}]
    assert RESULT.as_record()["tool_call_id"] == "call_1"


def test_the_counted_text_holds_each_calls_name_and_arguments() -> None:
    assert CALLS.text == 'read_file({"path": "a.py"})'
    assert Message("assistant", "Reading.", tool_calls=CALLS.tool_calls).text == 'Reading.\nread_file({"path": "a.py"})'
    assert total_chars([CALLS, RESULT]) == len('read_file({"path": "a.py"})') + len("print(1)")


def test_a_message_is_read_back_from_its_record_as_it_was() -> None:
    for message in (CALLS, RESULT, Message("user", "hi", "current", 3, "main")):
        assert Message.from_record({"id": 7, **message.as_record()}) == message
