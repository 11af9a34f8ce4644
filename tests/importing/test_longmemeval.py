"""longmemeval: sessions with their dates, has_answer turns as evidence, the answer as a value,
abstention questions, and LongMemEval's judge prompt per question type as the rubric."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.chronology.loading import load_chronology
from harness.importing import longmemeval
from harness.importing.source import ImportRefused, read_source
from tests.importing.goldens import FIXTURES, GOLDEN
from tests.importing.helpers import assert_matches_golden

ROW = {
    "question_id": "k1",
    "question_type": "knowledge-update",
    "question": "Where do I live now?",
    "answer": "Lisbon",
    "question_date": "2023/06/01 (Thu) 10:00",
    "haystack_session_ids": ["s1"],
    "haystack_dates": ["2023/05/20 (Sat) 02:21"],
    "haystack_sessions": [[{"role": "user", "content": "I moved to Lisbon.", "has_answer": True}]],
}


def documents(sessions: str = "separate") -> list[dict]:
    source = read_source(FIXTURES / "longmemeval_oracle.json")
    return [item.document for item in longmemeval.convert(source, "MIT", sessions)]


def convert_rows(tmp_path: Path, *rows: dict) -> list[dict]:
    path = tmp_path / "longmemeval_s.json"
    path.write_text(json.dumps(list(rows)), encoding="utf-8")
    return [item.document for item in longmemeval.convert(read_source(path), "MIT", "separate")]


def test_the_fixture_converts_to_the_golden_chronologies() -> None:
    assert_matches_golden("longmemeval")
    assert_matches_golden("longmemeval-joined")


@pytest.mark.parametrize("folder", ["longmemeval", "longmemeval-joined"])
def test_every_golden_chronology_loads(folder: str) -> None:
    for path in sorted((GOLDEN / folder).glob("*.yaml")):
        load_chronology(path)


def test_sessions_are_in_date_order_each_dated_in_its_first_message() -> None:
    update = documents()[0]
    assert update["sessions"] == ["answer_e47becba_1", "answer_e47becba_2", "question"]
    firsts = [t["user"].splitlines()[0] for t in update["turns"] if t["user"].startswith("Session date:")]
    assert firsts == ["Session date: 2022/03/02 (Wed) 18:05", "Session date: 2023/05/20 (Sat) 02:21"]


def test_the_question_is_a_probe_in_its_own_session_with_its_date() -> None:
    probe = documents()[0]["turns"][-1]
    assert probe["session"] == "question" and probe["probe"] == "question" and probe["asks"] == []
    assert probe["user"] == "Current date: 2023/06/01 (Thu) 10:00\n\nWhere do I live now?"


def test_joined_sessions_share_one_history() -> None:
    joined = documents("joined")[0]
    assert "sessions" not in joined and not any("session" in turn for turn in joined["turns"])


def test_has_answer_turns_are_evidence_for_the_probe_whichever_side_is_marked() -> None:
    update, _, preference = documents()
    assert [t.get("evidence") for t in update["turns"][:-1]] == [None, None, ["question"]]
    assert preference["turns"][0]["evidence"] == ["question"]  # the marked message is the reply


def test_the_answer_is_a_value_and_the_type_judge_prompt_a_rubric() -> None:
    expect = documents()[0]["turns"][-1]["expect"]
    assert expect[0] == {"value": "Lisbon"}
    assert expect[1]["pass"] == "YES"
    assert expect[1]["rubric"].startswith(longmemeval.JUDGE_INSTRUCTIONS["knowledge-update"])
    assert expect[1]["rubric"].endswith("\n\nQuestion: Where do I live now?\n\nCorrect Answer: Lisbon")


def test_an_abs_question_expects_abstention_and_is_judged_with_the_abstention_prompt() -> None:
    expect = documents()[1]["turns"][-1]["expect"]
    assert expect[0] == {"abstain": True}
    assert "correctly identifies the question as unanswerable" in expect[1]["rubric"]
    assert "Explanation: You did not mention a cat" in expect[1]["rubric"]


def test_a_preference_answer_is_a_rubric_only() -> None:
    expect = documents()[2]["turns"][-1]["expect"]
    assert len(expect) == 1 and "Rubric: The user would prefer vegetarian suggestions." in expect[0]["rubric"]


def test_a_number_as_answer_is_its_text(tmp_path: Path) -> None:
    [document] = convert_rows(tmp_path, {**ROW, "answer": 3})
    assert document["turns"][-1]["expect"][0] == {"value": "3"}


def test_the_dataset_is_the_file_s_name() -> None:
    assert documents()[0]["source"]["dataset"] == "longmemeval_oracle"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"question": None}, "item 1 (k1): question: missing"),
        ({"question_type": "trivia"}, "item 1 (k1): question_type: 'trivia' is not a LongMemEval type"),
        ({"question_date": "June 1st"}, "item 1 (k1): question_date: 'June 1st' is not a LongMemEval date"),
        ({"haystack_dates": []}, "item 1 (k1): haystack_sessions: 1 ids, 0 dates and 1 sessions"),
        (
            {"haystack_sessions": [[{"role": "user", "content": "x", "has_answer": "yes"}]]},
            "item 1 (k1): haystack_sessions[0][0].has_answer: a string",
        ),
        ({"haystack_sessions": [["hi"]]}, "item 1 (k1): haystack_sessions[0][0]: a string, not an object"),
        ({"answer": ["Lisbon"]}, "item 1 (k1): answer: a array, not a string"),
    ],
)
def test_a_bad_item_is_refused_naming_file_item_and_field(tmp_path: Path, change: dict, message: str) -> None:
    row = {k: v for k, v in {**ROW, **change}.items() if v is not None}
    with pytest.raises(ImportRefused) as refused:
        convert_rows(tmp_path, row)
    assert f"{tmp_path / 'longmemeval_s.json'}:{message}" in str(refused.value)


def test_more_sessions_than_a_chronology_holds_are_refused_with_what_to_do(tmp_path: Path) -> None:
    many = 100
    row = {
        **ROW,
        "haystack_session_ids": [f"s{i}" for i in range(many)],
        "haystack_dates": ["2023/05/20 (Sat) 02:21"] * many,
        "haystack_sessions": [[{"role": "user", "content": "x"}]] * many,
    }
    with pytest.raises(ImportRefused, match="100 sessions, over the 99 .* import with --sessions joined"):
        convert_rows(tmp_path, row)


def test_the_judge_prompts_are_upstream_s_words_for_every_type() -> None:
    assert set(longmemeval.JUDGE_INSTRUCTIONS) == {
        "single-session-user",
        "single-session-assistant",
        "multi-session",
        "temporal-reasoning",
        "knowledge-update",
        "single-session-preference",
        "_abs",
    }
    assert "do not penalize off-by-one errors" in longmemeval.JUDGE_INSTRUCTIONS["temporal-reasoning"]


def test_a_session_the_assistant_opens_is_dated_by_a_turn_of_its_own(tmp_path: Path) -> None:
    opened = [{"role": "assistant", "content": "Welcome back!"}, {"role": "user", "content": "I moved to Lisbon."}]
    [document] = convert_rows(tmp_path, {**ROW, "haystack_sessions": [opened]})
    assert document["turns"][:2] == [
        {"user": "Session date: 2023/05/20 (Sat) 02:21", "session": "s1", "assistant": "Welcome back!"},
        {"user": "I moved to Lisbon.", "session": "s1"},
    ]


def test_by_default_every_session_and_the_question_share_one_history() -> None:
    """LongMemEval's setting: the assistant is expected to remember earlier chats."""
    source = read_source(FIXTURES / "longmemeval_oracle.json")
    assert [item.document for item in longmemeval.convert(source, "MIT")] == documents("joined")


def _names_one_by_one(ids: list[str]) -> list[str]:
    """The naming rule spelt out naively (each name tries -2, -3, ... against every name so far)."""
    names: list[str] = []
    for sid in ids:
        base = longmemeval.UNSAFE.sub("-", sid).strip("-") or "session"
        name, n = base, 1
        while name in names:
            n += 1
            name = f"{base}-{n}"
        names.append(name)
    return names


def test_repeated_session_ids_get_the_first_free_suffix() -> None:
    ids = ["s", "s", "s-2", "s", "s!", "", "?", "s-3", "s", "t", "s-2"]
    assert longmemeval._session_names(ids) == _names_one_by_one(ids)
    assert longmemeval._session_names(ids) == [
        "s", "s-2", "s-2-2", "s-3", "s-4", "session", "session-2", "s-3-2", "s-5", "t", "s-2-3"
    ]  # fmt: skip


def test_thousands_of_repeats_of_one_session_id_are_named_in_one_pass() -> None:
    # 20,000 repeats: the naive rule tries about n^2/2 = 2e8 names, each against up to n names
    # (hours; a 600 kB LongMemEval file took 5 minutes); one pass names them in milliseconds
    ids = ["s"] * 20_000 + [f"s-{i}" for i in range(2, 50)]
    names = longmemeval._session_names(ids)
    assert len(set(names)) == len(names)
    assert names[:3] == ["s", "s-2", "s-3"] and names[19_999] == "s-20000"
    assert names[20_000:20_002] == ["s-2-2", "s-3-2"]
