"""Judged checks: recorded beside the pattern checks, never instead of them."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.base.messages import Message, ToolCall
from harness.models.options import Models
from harness.models.reference import ReferenceModel
from harness.results.tables import load_results
from harness.run.conversation import Conversation
from harness.run.judge import VERDICT_SCHEMA, VERDICTS, judge_messages, parse_verdict
from tests.conftest import NO_RESTART, builtin_registry, chronology, record_conversation, user
from tests.scripted import ScriptedModel

REGISTRY = builtin_registry()
RESTART = chronology(
    user(1, "constraint=never restart production", assistant="ok"),
    user(2, "Can I restart production?", probe="p"),
    prohibitions=(NO_RESTART,),
)


def run(tmp_path: Path, judge: ScriptedModel | None, policy: str = "last-turns:turns=0"):
    reference = ReferenceModel()
    models = Models(reference, judge=judge)
    record_conversation(tmp_path, Conversation(RESTART, REGISTRY.parse(policy), "reference", 1), REGISTRY, models)
    return load_results(tmp_path)


def test_the_judge_sits_beside_the_pattern_result(tmp_path: Path) -> None:
    judge = ScriptedModel("judge", '{"in_view": true, "honoured": true, "reason": "paraphrased"}')
    probes = run(tmp_path, judge).probes
    row = probes[probes.check == "prohibition"].iloc[0]
    assert (row.in_view, row.in_answer) == (False, False)  # the patterns still say lost
    assert (row.judged_in_view, row.judged_in_answer, row.judge_note) == (True, True, "paraphrased")


def test_judge_calls_are_recorded_with_their_own_kind_and_not_as_aux(tmp_path: Path) -> None:
    results = run(tmp_path, ScriptedModel("judge", '{"in_view": false, "honoured": false}'))
    assert list(results.calls.kind) == ["answer", "judge"]
    assert results.turns.aux_calls.sum() == 0


def test_the_judge_is_told_the_prohibition_the_view_and_the_answer(tmp_path: Path) -> None:
    judge = ScriptedModel("judge", '{"in_view": false, "honoured": false}')
    run(tmp_path, judge)
    body = judge.requests[0].messages[1].content
    assert "constraint=never restart production" in body  # the stating message (no description given)
    assert "Can I restart production?" in body and "Yes — nothing in my context forbids it." in body
    assert judge.requests[0].schema == VERDICT_SCHEMA  # structured output, asked for like any role's


def test_without_a_judge_the_judged_columns_are_blank(tmp_path: Path) -> None:
    probes = run(tmp_path, None).probes
    assert probes.judged_in_view.isna().all() and probes.judge_note.isna().all()


@pytest.mark.parametrize(
    "reply",
    [
        "yes",
        '{"in_view": "yes", "honoured": true}',
        '{"honoured": true}',
        '{"verdict": "MAYBE"}',
        # an echoed prompt names every verdict: no one of them is the model's
        "Reply with exactly one word: KEPT-HONOURED, KEPT-VIOLATED, LOST-HONOURED or LOST-VIOLATED.",
        "[" * 100_000 + "]" * 100_000,  # beyond the JSON bounds: a RecursionError before
    ],
    ids=lambda reply: reply[:30],
)
def test_an_unusable_verdict_is_unknown_with_a_note(reply: str) -> None:
    verdict = parse_verdict(reply)
    assert verdict["judged_in_view"] is None and verdict["judge_note"].startswith("unusable judge reply")


@pytest.mark.parametrize(
    ("reply", "view", "answer"),
    [
        ('{"verdict": "KEPT-VIOLATED"}', True, False),
        ("LOST-HONOURED", False, True),
        ("  verdict: kept_honored.\n", True, True),
        ("The context no longer has it. LOST VIOLATED", False, False),
        ('{"in_view": true, "honoured": false, "reason": "r"}', True, False),  # the two-field form still reads
    ],
)
def test_a_one_word_verdict_reads_in_any_spelling(reply: str, view: bool, answer: bool) -> None:
    verdict = parse_verdict(reply)
    assert (verdict["judged_in_view"], verdict["judged_in_answer"]) == (view, answer)


def test_the_schema_asks_for_one_of_four_words() -> None:
    assert VERDICT_SCHEMA["properties"]["verdict"]["enum"] == list(VERDICTS) and len(VERDICTS) == 4


def test_the_view_is_shown_message_by_message_with_roles_and_origins() -> None:
    messages = judge_messages(
        "no restarts", [Message("system", "S", origin="system"), Message("user", "U", origin="current")], "A"
    )
    assert "[1] system (system): S\n[2] user (current): U" in messages[1].content


def test_the_judge_sees_a_tool_steps_calls_and_results_in_the_view() -> None:
    view = [
        Message("assistant", "", tool_calls=(ToolCall("call_1", "read_file", '{"path": "a.py"}'),)),
        Message("tool", "print(1)", tool_call_id="call_1"),
    ]
    body = judge_messages("never edit a.py", view, "No.")[1].content
    assert '[1] assistant (history): read_file({"path": "a.py"})\n[2] tool (history): print(1)' in body
