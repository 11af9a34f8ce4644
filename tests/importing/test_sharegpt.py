"""sharegpt: FastChat's `conversations` of `from`/`value`, read as a chat log is (openai-chat's rules)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.chronology.loading import load_chronology
from harness.importing import sharegpt
from harness.importing.source import OWN_LOGS, ImportRefused, read_source
from tests.importing.goldens import FIXTURES, GOLDEN
from tests.importing.helpers import assert_matches_golden, jsonl


def convert(path: Path, probe_last: bool = False) -> list[dict]:
    return [item.document for item in sharegpt.convert(read_source(path), OWN_LOGS, probe_last)]


@pytest.mark.parametrize("folder", ["sharegpt", "sharegpt-no-probe"])
def test_the_fixture_converts_to_the_golden_chronologies(folder: str) -> None:
    assert_matches_golden(folder)


@pytest.mark.parametrize("folder", ["sharegpt", "sharegpt-no-probe"])
def test_every_golden_chronology_loads(folder: str) -> None:
    for path in sorted((GOLDEN / folder).glob("*.yaml")):
        load_chronology(path)


def test_speakers_become_turns_and_the_system_text_is_kept_from_either_place() -> None:
    trip, rules, hotel = convert(FIXTURES / "sharegpt.json")
    assert trip["turns"][1] == {"user": "Actually it will be Lisbon, not Porto.", "assistant": "Noted: Lisbon in May."}
    assert rules["system"] == "Answer in one sentence."  # the conversation's `system` field
    assert rules["turns"][0]["assistant"] == "Understood, no night trains."  # from: chatgpt
    assert hotel["system"] == "You are a travel agent."  # a leading from: system entry
    assert hotel["turns"][-1] == {"user": "Which is cheaper?"}  # no reply recorded: the model answers it


def test_the_item_id_is_the_conversation_s_id_else_its_place_in_the_array() -> None:
    assert [d["source"]["item_id"] for d in convert(FIXTURES / "sharegpt.json")] == ["trip-1", "rules-2", "item-3"]


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ({"conversations": [{"from": "observation", "value": "x"}]}, ":1: conversations[0].from: 'observation' is not"),
        ({"conversations": [{"from": "human", "value": ""}]}, ":1: conversations[0].value: empty"),
        ({"conversations": [{"from": "gpt", "value": "Hi."}]}, ":1: conversations: no message from human"),
        (
            {"conversations": [{"from": "human", "value": "a"}, {"from": "system", "value": "s"}]},
            ":1: conversations[1]: a system message after the conversation began",
        ),
        ({"messages": [{"role": "user", "content": "a"}]}, "this is openai-chat's shape: import it as openai-chat"),
    ],
)
def test_a_bad_conversation_is_refused_naming_line_and_field(tmp_path: Path, record: dict, message: str) -> None:
    with pytest.raises(ImportRefused) as refused:
        list(sharegpt.convert(jsonl(tmp_path / "s.jsonl", record), OWN_LOGS, probe_last=False))
    assert message in str(refused.value)
