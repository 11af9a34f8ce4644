"""factconsolidation: numbered facts in user turns, questions as probes expecting the newest value,
the values it superseded a failed `not` when answered."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.chronology.loading import load_chronology
from harness.chronology.patterns import compile_pattern
from harness.importing import factconsolidation
from harness.importing.source import ImportRefused, read_source
from tests.importing.goldens import FIXTURES, GOLDEN
from tests.importing.helpers import assert_matches_golden, jsonl

ROW = {
    "context": "0. The capital of Freedonia is Alba.\n1. The capital of Freedonia is Brava.",
    "questions": ["What is the capital of Freedonia?"],
    "answers": [["Brava"]],
}


def document(per_turn: int = 2) -> dict:
    source = read_source(FIXTURES / "conflict_resolution.jsonl")
    [item] = factconsolidation.convert(source, "MIT", per_turn)
    return item.document


def test_the_fixture_converts_to_the_golden_chronology() -> None:
    assert_matches_golden("factconsolidation")


def test_the_golden_chronology_loads() -> None:
    for path in sorted((GOLDEN / "factconsolidation").glob("*.yaml")):
        load_chronology(path)


def test_facts_are_split_into_turns_with_their_numbers_and_a_fixed_reply() -> None:
    turns = document(per_turn=4)["turns"]
    assert turns[0]["user"].splitlines() == [
        "0. The capital of Freedonia is Alba.",
        "1. The chairperson of Acme is Dana Reyes.",
        "2. The spouse of Dana Reyes is Kim Lo.",
        "3. The capital of Freedonia is Brava.",
    ]
    assert turns[0]["assistant"] == factconsolidation.REPLY and turns[1]["assistant"] == factconsolidation.REPLY
    assert [t.get("probe") for t in turns] == [None, None, "q1", "q2", "q3"]


def test_the_newest_value_is_expected_and_the_superseded_ones_fail_as_stale() -> None:
    q1 = document()["turns"][3]
    assert q1["expect"][0] == {"value": "Corsa"}
    stale = compile_pattern(q1["expect"][1]["not"])
    assert stale.search("It is alba.") and stale.search("Brava")
    assert not stale.search("Corsa") and not stale.search("Albania")


def test_several_accepted_answers_become_one_pattern() -> None:
    q2 = document()["turns"][4]
    accepted = compile_pattern(q2["expect"][0]["pattern"])
    assert accepted.search("ivo tan") and accepted.search("Mr Tan") and not accepted.search("Dana Reyes")


def test_the_turn_holding_the_newest_fact_is_evidence() -> None:
    turns = document()["turns"]
    assert turns[2]["evidence"] == ["q1", "q2"] and "evidence" not in turns[0]


def test_an_answer_no_fact_states_gets_no_stale_check_nor_evidence() -> None:
    q3 = document()["turns"][5]
    assert q3["expect"] == [{"value": "unknown"}]


def test_an_answer_ending_a_longer_word_is_not_its_fact(tmp_path: Path) -> None:
    row = {**ROW, "context": "0. The capital of Freedonia is Alba.\n1. The capital of Freedonia is Bravado."}
    [item] = factconsolidation.convert(jsonl(tmp_path / "c.jsonl", {**row, "answers": [["ado"]]}), "MIT")
    assert item.document["turns"][-1]["expect"] == [{"value": "ado"}]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"context": "no numbers here"}, ":1: context: no numbered facts"),
        ({"questions": None}, ":1: questions: missing"),
        ({"answers": [["a"], ["b"]]}, ":1: answers: 2 answers for 1 questions"),
        ({"answers": [[3]]}, ":1: answers[0][0]: a number, not a string"),
        ({"metadata": "x"}, ":1: metadata: a string, not an object"),
    ],
)
def test_a_bad_row_is_refused_naming_file_line_and_field(tmp_path: Path, change: dict, message: str) -> None:
    row = {k: v for k, v in {**ROW, **change}.items() if v is not None}
    with pytest.raises(ImportRefused) as refused:
        list(factconsolidation.convert(jsonl(tmp_path / "c.jsonl", row), "MIT"))
    assert f"{tmp_path / 'c.jsonl'}{message}" in str(refused.value)
