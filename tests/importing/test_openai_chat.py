"""openai-chat: one chronology per JSONL line; replies recorded, the final user message a probe on request."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.chronology.loading import load_chronology
from harness.importing import openai_chat
from harness.importing.source import ImportRefused, read_source
from tests.importing.goldens import FIXTURES, GOLDEN
from tests.importing.helpers import assert_matches_golden, jsonl


def convert(source, probe_last=True, expectations=None):
    return list(openai_chat.convert(source, "own-logs", probe_last, expectations))


def test_the_fixture_converts_to_the_golden_chronologies() -> None:
    assert_matches_golden("openai-chat")
    assert_matches_golden("openai-chat-no-probe")


@pytest.mark.parametrize("folder", ["openai-chat", "openai-chat-no-probe"])
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


def test_tool_messages_are_refused_for_now() -> None:
    with pytest.raises(ImportRefused) as refused:
        convert(read_source(FIXTURES / "chat-tools.jsonl"))
    assert str(refused.value) == (
        f"{FIXTURES / 'chat-tools.jsonl'}:1: messages[1]: tool calls are not imported yet; remove the tool "
        "messages, or wait for tool steps in chronologies"
    )


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
