"""multichallenge: recorded turns, the final user message a judged probe, instruction retention as a
prohibition whose presence is measured."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.chronology.loading import load_chronology
from harness.chronology.patterns import compile_pattern
from harness.importing import multichallenge
from harness.importing.source import ImportRefused, read_source
from tests.importing.goldens import FIXTURES, GOLDEN
from tests.importing.helpers import assert_matches_golden, jsonl

ROW = {
    "QUESTION_ID": "q1",
    "AXIS": "INSTRUCTION_RETENTION",
    "CONVERSATION": [
        {"role": "user", "content": "Reply only in French. What is a good name for a cat?"},
        {"role": "assistant", "content": "Minou."},
        {"role": "user", "content": "And for a dog?"},
    ],
    "TARGET_QUESTION": "Is the response in French?",
    "PASS_CRITERIA": "YES",
}


def convert(source):
    return [item.document for item in multichallenge.convert(source, "named-by-the-user")]


def test_the_fixture_converts_to_the_golden_chronologies() -> None:
    assert_matches_golden("multichallenge")


def test_every_golden_chronology_loads() -> None:
    for path in sorted((GOLDEN / "multichallenge").glob("*.yaml")):
        load_chronology(path)


def test_the_final_user_message_is_the_probe_with_the_rubric_as_a_judged_expectation(tmp_path: Path) -> None:
    [document] = convert(jsonl(tmp_path / "b.jsonl", ROW))
    assert document["turns"] == [
        {"user": "Reply only in French. What is a good name for a cat?", "assistant": "Minou."},
        {
            "user": "And for a dog?",
            "probe": "target",
            "asks": [],
            "expect": [{"rubric": "Is the response in French?", "pass": "YES"}],
        },
    ]


RETAINED = {
    **ROW,
    "CONVERSATION": [
        {"role": "user", "content": "I love cats. For our chat, avoid the word \u2018purr\u2019 entirely! Name a cat?"},
        {"role": "assistant", "content": "Minou."},
        {"role": "user", "content": "Cats purr when happy. And for a dog?"},
    ],
    "TARGET_QUESTION": 'Does the model avoid the word "purr"?',
}


def test_instruction_retention_follows_the_sentence_quoting_what_the_target_question_quotes(tmp_path: Path) -> None:
    [document] = convert(jsonl(tmp_path / "b.jsonl", RETAINED))
    prohibition = document["prohibitions"]["first-instruction"]
    present = compile_pattern(prohibition["present"])
    assert prohibition["description"].endswith("For our chat, avoid the word \u2018purr\u2019 entirely!")
    assert present.search("For our chat, avoid the word \u2018purr\u2019\nentirely!")  # re-wrapped, still found
    assert not present.search("I love cats. Name a cat? Cats purr when happy.")  # not the unquoted mention
    assert prohibition["violated_by"] == multichallenge.NEVER
    assert not compile_pattern(multichallenge.NEVER).search("Non. Oui. Yes. No.")
    assert document["turns"][-1]["asks"] == []  # the rubric judges the answer, not the prohibition


@pytest.mark.parametrize(
    ("target", "messages", "sentence"),
    [
        (
            'Does it begin with "It\u2019s important to note that"?',
            ["Hi. Begin with 'It's important to note that...'. Ok?"],
            "Begin with 'It's important to note that...'.",
        ),
        ('Avoid "tea"?', ['Never say "tea".', 'I said "tea" again.'], None),  # two sentences quote it: none taken
        ('Does it avoid the letter "T"?', ['Avoid the letter "T".'], None),  # a letter names no sentence
        ("Is the response in French?", ["Reply only in French. What is a good name?"], None),  # nothing quoted
    ],
)
def test_the_instruction_is_the_one_sentence_quoting_the_target_questions_term(
    target: str, messages: list[str], sentence: str | None
) -> None:
    assert multichallenge.instruction_sentence(target, messages) == sentence


def test_instruction_retention_without_a_quoted_instruction_is_judged_only(tmp_path: Path) -> None:
    [document] = convert(jsonl(tmp_path / "b.jsonl", ROW))
    assert "prohibitions" not in document
    assert document["turns"][-1]["expect"] == [{"rubric": "Is the response in French?", "pass": "YES"}]


def test_other_axes_have_no_prohibition(tmp_path: Path) -> None:
    [document] = convert(jsonl(tmp_path / "b.jsonl", {**ROW, "AXIS": "SELF_COHERENCE"}))
    assert "prohibitions" not in document


def test_the_hugging_face_lower_case_names_and_a_conversation_as_a_json_string() -> None:
    documents = convert(read_source(FIXTURES / "benchmark_questions.jsonl"))
    assert documents[1]["source"]["item_id"] == "9b3e2c10ffee0002"
    assert documents[1]["turns"][-1]["expect"] == [
        {"rubric": "Does the response suggest a snack with peanuts in it?", "pass": "NO"}
    ]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"TARGET_QUESTION": None}, ":1: TARGET_QUESTION: missing"),
        ({"AXIS": 3}, ":1: AXIS: a number, not a string"),
        ({"PASS_CRITERIA": "MAYBE"}, ":1: PASS_CRITERIA: 'MAYBE' is not YES or NO"),
        ({"CONVERSATION": None}, ":1: CONVERSATION: missing"),
        ({"CONVERSATION": "not json"}, ":1: CONVERSATION: a string that is not a JSON list"),
        ({"CONVERSATION": []}, ":1: CONVERSATION: a array, not a non-empty list"),
        (
            {"CONVERSATION": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]},
            ":1: CONVERSATION[1].content: the conversation ends with a reply",
        ),
    ],
)
def test_a_bad_row_is_refused_naming_file_line_and_field(tmp_path: Path, change: dict, message: str) -> None:
    row = {k: v for k, v in {**ROW, **change}.items() if v is not None}
    with pytest.raises(ImportRefused) as refused:
        convert(jsonl(tmp_path / "b.jsonl", row))
    assert f"{tmp_path / 'b.jsonl'}{message}" in str(refused.value)
