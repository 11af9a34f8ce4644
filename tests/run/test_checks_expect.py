"""Probes that expect an answer (docs/chronologies.md, "Probes that expect an answer"): one
probes.csv row per expectation, met or not by the answer, offline kinds apart from rubrics the
judge decides, and the row's view cells describing the evidence: whether every evidence message
was in the view, and if not where and why it left. Replayed under the offline reference model."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import pandas as pd
import pytest

from harness.base.messages import ToolCall
from harness.chronology import Expectation, Forget
from harness.chronology.patterns import compile_pattern
from harness.chronology.types import Step, ToolResult
from harness.models.options import Models
from harness.models.reference import ReferenceModel
from harness.results.rows import JUDGE_UNUSABLE, NEEDS_JUDGE
from harness.results.tables import load_results
from harness.run.conversation import Conversation
from tests.conftest import builtin_registry, chronology, record_conversation, user
from tests.scripted import ScriptedModel

REGISTRY = builtin_registry()


def value(text: str) -> Expectation:
    return Expectation("value", text)


def pattern(kind: str, text: str) -> Expectation:
    return Expectation(kind, text, compile_pattern(text))  # type: ignore[arg-type]


ABSTAIN = Expectation("abstain", "true")


def rubric(text: str, passes: str = "YES") -> Expectation:
    return Expectation("rubric", text, passes=passes)


def filler(number: int, session: str = "main") -> object:
    return user(number, f"The invoice run {number} finished.", session, assistant="Noted.")


def replayed(tmp_path: Path, chron, policy: str, judge: ScriptedModel | None = None):
    folder = tmp_path / policy.replace(":", "_").replace("=", "_")
    models = Models(ReferenceModel(), judge=judge)
    record_conversation(folder, Conversation(chron, REGISTRY.parse(policy), "reference", 1), REGISTRY, models)
    return load_results(folder)


def expected(tmp_path: Path, chron, policy: str, judge: ScriptedModel | None = None) -> pd.DataFrame:
    probes = replayed(tmp_path, chron, policy, judge).probes
    return probes[probes.check == "expect"].set_index("subject")


def database_probe(*expect: Expectation, evidence: tuple[str, ...] = ("db",), fillers: int = 2, session="main"):
    """Turn 1 declares the database (evidence for probe db); the probe asks for it after `fillers` turns."""
    turns = [user(1, "database=PostgreSQL", session, assistant="Noted.", evidence=evidence)]
    turns += [filler(n) for n in range(2, 2 + fillers)]
    turns.append(user(2 + fillers, "Which database are we on?", probe="db", expect=expect))
    return chronology(*turns, sessions=("main", "other") if session != "main" else ("main",))


# --- Offline kinds: met or not by the answer alone ---------------------------------------------


def test_each_expectation_is_a_row_met_or_not_by_the_answer(tmp_path: Path) -> None:
    chron = database_probe(
        value("postgresql"),  # ignoring case
        value("Postgre"),  # never inside a longer value
        pattern("pattern", r"(?i)\bpostgres"),
        pattern("not", r"(?i)oracle"),
        pattern("not", r"(?i)postgres"),
        ABSTAIN,
    )
    rows = expected(tmp_path, chron, "full-history")  # the reference answers "database=PostgreSQL"
    assert rows.passed.to_dict() == {
        "value: postgresql": True,
        "value: Postgre": False,
        r"pattern: (?i)\bpostgres": True,
        "not: (?i)oracle": True,
        "not: (?i)postgres": False,
        "abstain": False,
    }
    assert (rows.in_answer == rows.passed).all() and rows.note.isna().all()


def test_an_answer_that_does_not_know_meets_abstain_and_misses_the_value(tmp_path: Path) -> None:
    rows = expected(tmp_path, database_probe(value("PostgreSQL"), ABSTAIN), "last-turns:turns=0")
    assert rows.passed.to_dict() == {"value: PostgreSQL": False, "abstain": True}  # "no database in my context"


# --- Rubrics: the judge decides; without one, not measured ------------------------------------


def test_without_a_judge_a_rubric_row_is_blank_and_says_it_needs_one(tmp_path: Path) -> None:
    row = expected(tmp_path, database_probe(rubric("Names PostgreSQL.")), "full-history").loc[
        "rubric: Names PostgreSQL."
    ]
    assert pd.isna(row.passed) and pd.isna(row.in_answer) and row.note == NEEDS_JUDGE


@pytest.mark.parametrize(
    ("reply", "passes", "passed", "note"),
    [
        ('{"verdict": "YES"}', "YES", True, "verdict YES"),
        ("NO.", "YES", False, "verdict NO"),
        ("No", "NO", True, "verdict NO"),
        ("YES or NO", "YES", None, f"{JUDGE_UNUSABLE}: both YES and NO in 'YES or NO'"),
    ],
)
def test_a_judge_verdict_decides_a_rubric(
    tmp_path: Path, reply: str, passes: str, passed: bool | None, note: str
) -> None:
    judge = ScriptedModel("judge", reply)
    rows = expected(tmp_path, database_probe(value("PostgreSQL"), rubric("Names it.", passes)), "full-history", judge)
    row = rows.loc["rubric: Names it."]
    assert (None if pd.isna(row.passed) else row.passed, row.judge_note) == (passed, note)
    assert row.judged_in_answer is row.passed or pd.isna(row.judged_in_answer)
    assert pd.isna(row.in_answer)  # no offline measurement of a rubric
    assert pd.isna(rows.loc["value: PostgreSQL"].judge_note)  # an offline kind is never judged
    assert len(judge.requests) == 1


def test_the_rubric_prompt_is_recorded_with_the_question_the_answer_and_the_rubric(tmp_path: Path) -> None:
    judge = ScriptedModel("judge", "YES")
    results = replayed(tmp_path, database_probe(rubric("Names PostgreSQL.")), "full-history", judge)
    [call] = results.calls[results.calls.kind == "judge"].to_dict("records")
    body = call["messages"][-1]["content"]
    assert "Which database are we on?" in body and "database=PostgreSQL" in body and "Names PostgreSQL." in body
    assert json.dumps(judge.requests[0].schema["properties"]["verdict"]["enum"]) == '["YES", "NO"]'


# --- Evidence: the view cells of an expectation ----------------------------------------------


def test_evidence_in_view_and_no_loss(tmp_path: Path) -> None:
    row = expected(tmp_path, database_probe(value("PostgreSQL")), "full-history").iloc[0]
    assert (row.in_view, row.in_retained, row.age) == (True, True, 3)
    assert pd.isna(row.lost_at) and pd.isna(row.cause)


def test_evidence_that_left_the_window_says_where_and_why(tmp_path: Path) -> None:
    row = expected(tmp_path, database_probe(value("PostgreSQL")), "last-turns:turns=1").iloc[0]
    assert (row.passed, row.in_view, row.in_retained) == (False, False, True)
    assert (row.cause, row.lost_at) == ("window", "left the request window at turn 3")


def test_a_summary_never_carries_evidence_even_when_it_carries_the_value(tmp_path: Path) -> None:
    chron = chronology(
        user(1, "database=PostgreSQL", assistant="Noted.", evidence=("db",), summary="database=PostgreSQL"),
        user(2, "The invoice run finished.", assistant="Noted.", summary="database=PostgreSQL"),
        user(3, "Which database are we on?", probe="db", expect=(value("PostgreSQL"),), summary="database=PostgreSQL"),
    )
    row = expected(tmp_path, chron, "summary").iloc[0]
    assert (row.passed, row.in_view, row.cause) == (True, False, "summary")


def test_evidence_stated_in_another_session_is_lost_to_it(tmp_path: Path) -> None:
    row = expected(tmp_path, database_probe(value("PostgreSQL"), session="other"), "full-history").iloc[0]
    assert (row.in_view, row.cause) == (False, "other-session")


def test_every_evidence_message_must_be_in_view_and_the_first_missing_one_is_named(tmp_path: Path) -> None:
    chron = chronology(
        user(1, "database=PostgreSQL", assistant="Noted.", evidence=("db",)),
        filler(2),
        filler(3),
        user(4, "We migrated last year.", assistant="Noted.", evidence=("db",)),
        user(5, "Which database are we on?", probe="db", expect=(value("PostgreSQL"),)),
    )
    row = expected(tmp_path, chron, "last-turns:turns=2").iloc[0]
    assert (row.in_view, row.age, row.cause) == (False, 4, "window")
    assert row.lost_at == "left the request window at turn 4"


def test_without_evidence_the_view_cells_are_blank(tmp_path: Path) -> None:
    row = expected(tmp_path, database_probe(value("PostgreSQL"), evidence=()), "last-turns:turns=0").iloc[0]
    assert row.passed is not pd.NA and not row.passed
    assert pd.isna(row.in_view) and pd.isna(row.age) and pd.isna(row.lost_at)


# --- Unmeasured: the policy stopped before the probe ------------------------------------------


def test_a_probe_the_policy_never_reached_has_blank_expectation_rows_saying_why(tmp_path: Path) -> None:
    chron = chronology(
        user(1, "database=PostgreSQL", assistant="Noted.", evidence=("db",), summary=""),
        user(2, "Which database are we on?", probe="db", expect=(value("PostgreSQL"), rubric("r"))),
    )
    rows = expected(tmp_path, chron, "summary")
    assert list(rows.status) == ["stopped", "stopped"] and rows.passed.isna().all() and rows.in_view.isna().all()
    assert set(rows.lost_at) == {"policy stopped at turn 1 (summary_empty)"} and set(rows.cause) == {"stopped"}
    assert list(rows.age) == [1, 1]


def test_a_probe_the_policy_never_reached_without_evidence_has_a_blank_age(tmp_path: Path) -> None:
    # Every imported benchmark item marks no evidence; the stopped row's age was once an empty list
    # written into probes.csv, and the run then refused its own results.
    chron = chronology(
        user(1, "database=PostgreSQL", assistant="Noted.", summary=""),
        user(2, "Which database are we on?", probe="db", expect=(value("PostgreSQL"),)),
    )
    rows = expected(tmp_path, chron, "summary")
    assert list(rows.status) == ["stopped"] and rows.age.isna().all()


def test_a_fact_store_says_it_never_stored_prose_evidence(tmp_path: Path) -> None:
    chron = chronology(
        user(1, "We moved everything to PostgreSQL last spring.", assistant="Noted.", evidence=("db",)),
        user(2, "Which database are we on?", probe="db", expect=(value("PostgreSQL"),)),
    )
    row = expected(tmp_path, chron, "bounded-facts").iloc[0]
    assert (row.passed, row.in_view, row.cause) == (False, False, "not-stored")
    assert row.lost_at == "not stored: only admitted key=value declarations become facts (turn 1)"


def test_a_fact_store_says_it_never_reads_tool_results(tmp_path: Path) -> None:
    read = Step((ToolCall("c1", "read_config", "{}"),), (ToolResult("c1", "database=PostgreSQL", evidence=("db",)),))
    chron = chronology(
        user(1, "Check the config.", assistant="Done.", steps=(read,)),
        user(2, "Which database are we on?", probe="db", expect=(value("PostgreSQL"),)),
    )
    row = expected(tmp_path, chron, "bounded-facts").iloc[0]
    assert (row.in_view, row.cause) == (False, "not-stored")
    assert row.lost_at == "not stored: tool results are not read by the fact store (turn 1)"


# --- A value is a whole; an abstention states no value (SPEC section 10) ----------------------


def answered(tmp_path: Path, chron, answer: str, policy: str = "full-history") -> pd.DataFrame:
    """The probe rows of `chron` (fixed replay) with `answer` as the model's answer to its probe."""
    folder = tmp_path / policy.replace(":", "_").replace("=", "_")
    model = ScriptedModel("reference", answer)
    record_conversation(folder, Conversation(chron, REGISTRY.parse(policy), "reference", 1), REGISTRY, model)
    return load_results(folder).probes


def asked_for(*expect: Expectation, question: str = "Who owns it?"):
    return chronology(user(1, "The ticket came in.", assistant="Noted."), user(2, question, probe="p", expect=expect))


@pytest.mark.parametrize(
    ("wanted", "answer"),
    [
        ("alice", "Write to alice@example.com."),
        ("example.com", "Write to alice@example.com."),
        ("C", "Use the C++ toolkit."),
        ("4.2", "Install 4.2~rc1 first."),
        ("db1", "It is db1:5432."),
    ],
)
def test_a_value_expected_is_not_met_inside_a_longer_token(tmp_path: Path, wanted: str, answer: str) -> None:
    rows = answered(tmp_path, asked_for(value(wanted)), answer)
    assert rows[rows.check == "expect"].passed.tolist() == [False]


def test_an_answer_in_another_unicode_form_meets_the_expected_value(tmp_path: Path) -> None:
    answer = unicodedata.normalize("NFD", "It is Café Müller.")
    rows = answered(tmp_path, asked_for(value("Café Müller")), answer)
    assert rows[rows.check == "expect"].passed.tolist() == [True]


def test_quoting_the_forgotten_value_back_is_not_abstaining(tmp_path: Path) -> None:
    chron = chronology(
        user(1, "symptom=I'm not sure, maybe the disk", assistant="Noted."),
        Forget(number=2, line=2, key="symptom"),
        user(3, "What was the symptom?", probe="p", expect=(ABSTAIN,)),
    )
    quoted = answered(tmp_path / "quoted", chron, "The symptom was: I'm not sure, maybe the disk.")
    assert quoted[quoted.check == "expect"].passed.tolist() == [False]
    declared = answered(tmp_path / "declared", chron, "symptom=I'm not sure, maybe the disk")
    assert declared[declared.check == "expect"].passed.tolist() == [False]
    honest = answered(tmp_path / "honest", chron, "I'm not sure: you asked me to forget the symptom.")
    assert honest[honest.check == "expect"].passed.tolist() == [True]


def test_an_answer_that_hedges_but_states_a_value_of_the_asked_key_does_not_abstain(tmp_path: Path) -> None:
    chron = chronology(
        user(1, "database=MySQL", assistant="Noted."),
        user(2, "database=PostgreSQL", assistant="Noted."),
        user(3, "Which database are we on?", probe="p", expect=(ABSTAIN,)),
    )
    rows = answered(tmp_path, chron, "I'm not sure; the database may be MySQL.")
    assert rows[rows.check == "expect"].passed.tolist() == [False]
