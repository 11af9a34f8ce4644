"""openai-chat: one chronology per JSONL line; replies recorded, the final user message a probe on request."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.chronology.loading import load_chronology
from harness.importing import openai_chat
from harness.importing.source import ImportRefused, read_source
from tests.importing.goldens import FIXTURES, GOLDEN
from tests.importing.helpers import assert_matches_golden, jsonl


def convert(source, probe_last=True, expectations=None):
    return list(openai_chat.convert(source, "own-logs", probe_last, expectations))


FOLDERS = ["openai-chat", "openai-chat-no-probe", "openai-chat-tools", "openai-chat-tools-no-probe"]


@pytest.mark.parametrize("folder", FOLDERS)
def test_the_fixture_converts_to_the_golden_chronologies(folder: str) -> None:
    assert_matches_golden(folder)


@pytest.mark.parametrize("folder", FOLDERS)
def test_every_golden_chronology_loads(folder: str) -> None:
    for path in sorted((GOLDEN / folder).glob("*.yaml")):
        load_chronology(path)


def test_user_turns_carry_the_recorded_replies_and_the_system_message_is_kept() -> None:
    first = convert(read_source(FIXTURES / "chat.jsonl"))[0].document
    assert first["system"] == "You are a support assistant for an ERP product."
    assert first["turns"][0] == {
        "user": "Our month-end invoice run is slow again.",
        "assistant": "I will look at the invoice run.",
    }


def test_probe_last_drops_the_reply_recorded_after_the_final_user_message() -> None:
    last = convert(read_source(FIXTURES / "chat.jsonl"))[0].document["turns"][-1]
    assert last == {"user": "Where is the database now?", "probe": "last", "asks": []}


def test_without_probe_last_the_final_turn_keeps_its_reply_and_no_probe() -> None:
    last = convert(read_source(FIXTURES / "chat.jsonl"), probe_last=False)[0].document["turns"][-1]
    assert last == {"user": "Where is the database now?", "assistant": "In Lisbon."}


def test_consecutive_user_messages_and_text_parts_become_one_turn() -> None:
    greeting = convert(read_source(FIXTURES / "chat.jsonl"))[1]
    assert greeting.item_id == "greeting" and greeting.stem == "chat-greeting"
    assert greeting.document["turns"][0]["user"] == "Hello.\n\nAre you there?"


def test_every_item_records_its_source() -> None:
    source = read_source(FIXTURES / "chat.jsonl")
    item = convert(source)[0]
    assert item.document["source"] == {
        "dataset": "chat",
        "item_id": "line-1",
        "sha256": source.sha256,
        "licence": "own-logs",
    }


def test_expectations_attach_to_the_probe_by_item_id() -> None:
    expectations = openai_chat.read_expectations(FIXTURES / "chat-expect.yaml", 1 << 20)
    items = convert(read_source(FIXTURES / "chat.jsonl"), expectations=expectations)
    assert items[0].document["turns"][-1]["expect"] == [{"value": "Lisbon"}, {"not": "(?i)porto"}]
    assert items[1].document["turns"][-1]["expect"] == {"pattern": r"(?i)\bno\b"}


def test_expectations_from_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "expect.jsonl"
    jsonl(path, {"id": "line-1", "expect": {"value": "Lisbon"}})
    assert openai_chat.read_expectations(path, 1 << 20) == {"line-1": {"value": "Lisbon"}}


def test_an_expectation_without_probe_last_is_refused() -> None:
    with pytest.raises(ImportRefused, match="no probe; add --probe-last"):
        convert(read_source(FIXTURES / "chat.jsonl"), probe_last=False, expectations={"line-1": {"value": "x"}})


def test_an_expectation_for_an_item_the_input_lacks_is_refused() -> None:
    with pytest.raises(ImportRefused, match="--expect names items the input does not hold: 'line-9'"):
        convert(read_source(FIXTURES / "chat.jsonl"), expectations={"line-9": {"value": "x"}})


def tools(probe_last: bool = True) -> list:
    return [i.document for i in convert(read_source(FIXTURES / "chat-tools.jsonl"), probe_last=probe_last)]


def test_tool_calls_and_their_results_become_the_user_turn_s_steps_and_the_final_text_its_reply() -> None:
    first = tools()[0]["turns"][0]
    assert list(first) == ["user", "steps", "assistant"]
    assert first["steps"][0] == {
        "tool_calls": [{"id": "call_1", "name": "read_file", "arguments": '{"path": "reporting/export.py"}'}],
        "results": [
            {"id": "call_1", "content": "def export(rows):\n    write(header)\n    write(header)\n    write(rows)"}
        ],
    }
    assert first["assistant"].endswith("\n\nFixed reporting/export.py: the header row was written twice.")


def test_the_text_of_a_message_that_calls_tools_joins_the_turn_s_reply_before_the_final_text() -> None:
    assert tools()[0]["turns"][0]["assistant"].startswith("Let me read the exporter first.\n\n")


def test_parallel_calls_are_one_step_with_their_results_in_the_calls_order() -> None:
    step = tools()[0]["turns"][0]["steps"][1]  # the log answers call_3 before call_2
    assert [c["id"] for c in step["tool_calls"]] == [r["id"] for r in step["results"]] == ["call_2", "call_3"]
    assert step["tool_calls"][1] == {"id": "call_3", "name": "run_tests"}  # arguments "": none
    assert step["results"] == [{"id": "call_2", "content": ""}, {"id": "call_3", "content": "12 passed"}]


def test_probe_last_keeps_the_final_turn_s_steps_and_drops_its_recorded_reply() -> None:
    last = tools()[0]["turns"][-1]
    assert (last["user"], last["probe"], "assistant" in last) == ("Which file did you change?", "last", False)
    assert [c["id"] for step in last["steps"] for c in step["tool_calls"]] == ["call_4"]
    assert tools(probe_last=False)[0]["turns"][-1]["assistant"] == "Only reporting/export.py."


def test_a_user_message_after_steps_starts_a_turn_and_the_turn_before_has_no_reply() -> None:
    first, second = tools(probe_last=False)[1]["turns"]
    assert "assistant" not in first and first["steps"][0]["results"][0]["content"] == "18 C, sunny"
    assert second == {"user": "And in Porto?", "assistant": "Porto: 16 C and cloudy."}


USER = {"role": "user", "content": "Read it."}


def calling(*ids: str, name: str = "read_file", arguments: object = "{}") -> dict:
    calls = [{"id": i, "type": "function", "function": {"name": name, "arguments": arguments}} for i in ids]
    return {"role": "assistant", "content": None, "tool_calls": calls}


def result(call_id: str, content: object = "ok") -> dict:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


@pytest.mark.parametrize(
    ("messages", "message"),
    [
        ([USER, result("call_1")], ":1: messages[1].tool_call_id: 'call_1' answers no call: the tool messages"),
        (
            [USER, calling("call_1"), result("call_2")],
            ":1: messages[2].tool_call_id: 'call_2' answers no call of messages[1] (its calls: call_1); fix the id",
        ),
        (
            [USER, calling("call_1"), result("call_1"), result("call_1")],
            ":1: messages[3].tool_call_id: 'call_1' answers a call a tool message before it answered already",
        ),
        (
            [USER, calling("call_1", "call_2"), result("call_1"), {"role": "assistant", "content": "Done."}],
            ":1: messages[1].tool_calls[1].id: call 'call_2' is never answered: no tool message with this "
            "tool_call_id follows it before messages[3]; add its result, or remove the call",
        ),
        (
            [USER, calling("call_1")],
            ":1: messages[1].tool_calls[0].id: call 'call_1' is never answered: no tool message with this "
            "tool_call_id follows it before the end of the conversation",
        ),
        (
            [USER, calling("call_1"), result("call_1"), calling("call_1"), result("call_1")],
            ":1: messages[3].tool_calls[0].id: 'call_1' is the id of an earlier call (messages[1].tool_calls[0])",
        ),
        ([USER, calling("call 1")], ":1: messages[1].tool_calls[0].id: 'call 1': letters, digits"),
        ([USER, calling("call_1", name="read file")], ":1: messages[1].tool_calls[0].function.name: 'read file'"),
        ([USER, calling("call_1", arguments="{path")], ":1: messages[1].tool_calls[0].function.arguments: not JSON"),
        ([USER, calling("call_1", arguments="[1]")], ":1: messages[1].tool_calls[0].function.arguments: a JSON array"),
        (
            [USER, {"role": "assistant", "tool_calls": [{"id": "c", "type": "custom", "custom": {}}]}],
            ":1: messages[1].tool_calls[0].type: 'custom'; only function calls are imported",
        ),
        ([USER, calling("call_1"), result("call_1", 3)], ":1: messages[2].content: a number, not a string"),
        ([calling("call_1"), result("call_1"), USER], ":1: messages[0].tool_calls: a tool call before any user"),
        (
            [USER, {"role": "assistant", "content": None, "function_call": {"name": "f", "arguments": "{}"}}],
            ":1: messages[1]: a legacy function call (function_call, or role function) carries no call id",
        ),
        ([USER, {"role": "function", "name": "f", "content": "x"}], ":1: messages[1]: a legacy function call"),
    ],
)
def test_tool_use_the_chronology_cannot_hold_is_refused_naming_line_and_field(
    tmp_path: Path, messages: list, message: str
) -> None:
    source = jsonl(tmp_path / "log.jsonl", {"messages": messages})
    with pytest.raises(ImportRefused) as refused:
        convert(source)
    assert str(refused.value).startswith(f"{tmp_path / 'log.jsonl'}{message}")


def test_arguments_given_as_a_mapping_are_kept_as_one(tmp_path: Path) -> None:
    source = jsonl(
        tmp_path / "log.jsonl", {"messages": [USER, calling("c1", arguments={"path": "a.py"}), result("c1")]}
    )
    step = convert(source, probe_last=False)[0].document["turns"][0]["steps"][0]
    assert step["tool_calls"] == [{"id": "c1", "name": "read_file", "arguments": {"path": "a.py"}}]


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ({"messages": "hi"}, ":1: messages: a string, not a list"),
        ({}, ":1: messages: missing"),
        ({"messages": [{"role": "user", "content": 3}]}, ":1: messages[0].content: a number, not a string"),
        ({"messages": [{"role": "user", "content": ""}]}, ":1: messages[0].content: empty"),
        ({"messages": [{"role": "narrator", "content": "x"}]}, ":1: messages[0].role: 'narrator' is not"),
        (
            {"messages": [{"role": "assistant", "content": "Hi!"}, {"role": "user", "content": "Hello."}]},
            ":1: messages[0].content: a reply before any user",
        ),
        (
            {"messages": [{"role": "user", "content": "a"}, {"role": "system", "content": "b"}]},
            ":1: messages[1]: a system message after the conversation began",
        ),
        (
            {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]},
            ":1: messages[0].content[0]: a image_url part; only text is imported",
        ),
        ({"messages": [{"role": "system", "content": "s"}]}, ":1: messages: no user message"),
    ],
)
def test_a_bad_line_is_refused_naming_file_line_and_field(tmp_path: Path, record: dict, message: str) -> None:
    source = jsonl(tmp_path / "log.jsonl", record)
    with pytest.raises(ImportRefused, match=None) as refused:
        convert(source)
    assert f"{tmp_path / 'log.jsonl'}{message}" in str(refused.value)


def test_a_line_that_is_not_json_is_refused_by_number(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_text('{"messages": [{"role": "user", "content": "Hi."}]}\n\n{"messages": [\n', encoding="utf-8")
    with pytest.raises(ImportRefused, match=r"log\.jsonl:3: not JSON"):
        convert(read_source(path))


def test_a_numeric_id_is_the_item_id(tmp_path: Path) -> None:
    source = jsonl(tmp_path / "log.jsonl", {"id": 812, "messages": [{"role": "user", "content": "Hi."}]})
    assert convert(source)[0].item_id == "812"


def test_a_json_array_or_one_object_of_conversations_imports_as_jsonl_does(tmp_path: Path) -> None:
    chat = {"messages": [{"role": "user", "content": "Hi."}, {"role": "assistant", "content": "Hello."}]}
    (tmp_path / "a.json").write_text(json.dumps([chat, {**chat, "id": "named"}], indent=2))
    (tmp_path / "one.json").write_text(json.dumps(chat, indent=2))
    array = openai_chat.convert(read_source(tmp_path / "a.json"), "ours", probe_last=False)
    assert [item.item_id for item in array] == ["item-1", "named"]
    (one,) = openai_chat.convert(read_source(tmp_path / "one.json"), "ours", probe_last=False)
    assert one.item_id == "line-1" and one.document["turns"] == [{"user": "Hi.", "assistant": "Hello."}]


@pytest.mark.parametrize(
    ("name", "text", "line", "key"),
    [
        ("expect.yaml", "line-1: {value: a}\ngreeting: {value: b}\nline-1: {value: c}\n", 3, "line-1"),
        ("expect.json", '{"line-1": {"value": "a"},\n "line-1": {"value": "c"}}', 2, "line-1"),
        ("expect.yaml", "line-1:\n  value: a\n  value: c\n", 3, "value"),
        ("expect.json", '{"line-1": {"value": "a",\n\n "value": "c"}}', 3, "value"),
        # JSON Lines: a field of an expectation, or the record's own id, named twice on one line
        ("expect.jsonl", '{"id": "line-1", "expect": {"value": "a", "value": "c"}}\n', 1, "value"),
        ("expect.jsonl", '{"id": "g", "expect": {"value": "a"}}\r{"id": "line-1", "id": "g", "expect": {}}\n', 2, "id"),
    ],
)
def test_an_expect_file_naming_a_key_twice_is_refused_with_its_line(
    tmp_path: Path, name: str, text: str, line: int, key: str
) -> None:
    (tmp_path / name).write_text(text)
    with pytest.raises(ImportRefused, match=rf"{name}:{line}: {key}: named twice"):
        openai_chat.read_expectations(tmp_path / name, 1 << 20)


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (os.mkfifo, "a named pipe (FIFO), not a regular file; give the expectations file (JSON Lines, JSON or YAML)"),
        (lambda path: None, "no such file; give the path of the expectations file (JSON Lines, JSON or YAML)"),
    ],
    ids=["fifo", "missing"],
)
def test_an_expect_path_that_is_no_file_names_the_option_not_the_dataset(
    tmp_path: Path, make: Callable[[Path], None], says: str
) -> None:
    make(tmp_path / "expect.jsonl")
    with pytest.raises(ImportRefused) as refused:
        openai_chat.read_expectations(tmp_path / "expect.jsonl", 1 << 20)
    assert str(refused.value) == f"--expect {tmp_path / 'expect.jsonl'}: {says}"


@pytest.mark.parametrize(
    "line",
    [
        {"messages": [{"role": "x" * 100_000, "content": "hi"}]},
        {
            "messages": [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "tool_calls": [{"type": "x" * 100_000}]},
            ]
        },
    ],
)
def test_a_refused_field_is_quoted_at_most_40_characters(tmp_path: Path, line: dict) -> None:
    jsonl(tmp_path / "log.jsonl", line)
    with pytest.raises(ImportRefused) as refused:
        convert(read_source(tmp_path / "log.jsonl"))
    assert "'xxxxxxxxxxxxxxxxxxxx'... (100,000 characters)" in str(refused.value)
    assert len(str(refused.value)) < 500
