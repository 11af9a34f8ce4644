"""An imported benchmark item's rubric is judged through its benchmark's own prompt
(harness.run.judge_prompts): the request is, to the character, the one the benchmark's
evaluation script sends, and the reply is read as that script reads it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from harness.chronology import Expectation, Source
from harness.importing.longmemeval import JUDGE_INSTRUCTIONS, judge_rubric
from harness.results.rows import JUDGE_UNUSABLE
from harness.run.judge import rubric_messages
from harness.run.judge_prompts import (
    HARNESS,
    LONGMEMEVAL,
    LONGMEMEVAL_ABSTENTION,
    MULTICHALLENGE,
    prompt_for,
    reasoned_verdict,
    recorded_prompts,
    yes_anywhere,
)
from tests.conftest import chronology, user
from tests.run.test_checks_expect import replayed
from tests.scripted import ScriptedModel

# The oracle: LongMemEval's get_anscheck_prompt templates (src/evaluation/evaluate_qa.py at
# 9e0b455, MIT License, Copyright (c) 2024 Di Wu), copied as upstream writes them.
_HEAD = (
    "I will give you a question, a correct answer, and a response from a model. Please answer yes if the response "
    "contains the correct answer. Otherwise, answer no. If the response is equivalent to the correct answer or "
    "contains all the intermediate steps to get the correct answer, you should also answer yes. If the response "
    "only contains a subset of the information required by the answer, answer no."
)
_TAIL = "\n\nQuestion: {}\n\nCorrect Answer: {}\n\nModel Response: {}\n\nIs the model response correct? Answer yes or no only."
UPSTREAM = {
    "single-session-user": _HEAD + " " + _TAIL,
    "temporal-reasoning": _HEAD
    + " In addition, do not penalize off-by-one errors for the number of days. If the question asks for the number "
    "of days/weeks/months, etc., and the model makes off-by-one errors (e.g., predicting 19 days when the answer is "
    "18), the model's response is still correct. " + _TAIL,
    "knowledge-update": "I will give you a question, a correct answer, and a response from a model. Please answer yes "
    "if the response contains the correct answer. Otherwise, answer no. If the response contains some previous "
    "information along with an updated answer, the response should be considered as correct as long as the updated "
    "answer is the required answer." + _TAIL,
    "single-session-preference": "I will give you a question, a rubric for desired personalized response, and a "
    "response from a model. Please answer yes if the response satisfies the desired response. Otherwise, answer no. "
    "The model does not need to reflect all the points in the rubric. The response is correct as long as it recalls "
    "and utilizes the user's personal information correctly.\n\nQuestion: {}\n\nRubric: {}\n\nModel Response: {}\n\n"
    "Is the model response correct? Answer yes or no only.",
    "_abs": "I will give you an unanswerable question, an explanation, and a response from a model. Please answer yes "
    "if the model correctly identifies the question as unanswerable. The model could say that the information is "
    "incomplete, or some other information is given but the asked information is not.\n\nQuestion: {}\n\n"
    "Explanation: {}\n\nModel Response: {}\n\nDoes the model correctly identify the question as unanswerable? "
    "Answer yes or no only.",
}
UPSTREAM["single-session-assistant"] = UPSTREAM["multi-session"] = UPSTREAM["single-session-user"]

# MultiChallenge's JUDGE_PROMPT (src/evaluator.py at 5ccefcc), as upstream writes it.
MC_UPSTREAM = """You are tasked with evaluating a model response to see if it meets a specific criteria.
The criteria will always be YES/NO evaluation.

The model response is as follows:
<MODEL_RESPONSE>
{}
</MODEL_RESPONSE>

The criteria that the model response must meet is as follows. Be VERY STRICT!:
<CRITERIA>
{}
</CRITERIA>

Print your reasoning followed by your verdict, either "YES" or "NO"."""


def sent(prompt, rubric: str, response: str) -> str:
    [message] = rubric_messages(
        "Current date: 2023/05/30 (Tue) 23:40\n\nignored", response, rubric, prompt.template, prompt.system
    )
    return message.text


@pytest.mark.parametrize("kind", sorted(JUDGE_INSTRUCTIONS))
def test_a_longmemeval_rubric_is_asked_as_upstream_asks_it(kind: str) -> None:
    question, answer, response = "How many {days} did I spend?", "18 days {x}", "About 19 days: {rubric}"
    prompt = LONGMEMEVAL_ABSTENTION if kind == "_abs" else LONGMEMEVAL
    assert sent(prompt, judge_rubric(kind, question, answer), response) == UPSTREAM[kind].format(
        question, answer, response
    )


def test_a_multichallenge_rubric_is_asked_as_upstream_asks_it() -> None:
    target, response = "Does the model avoid the word {antioxidant}?", "Eat citrus {fruit}."
    assert sent(MULTICHALLENGE, target, response) == MC_UPSTREAM.format(response, target)
    assert MULTICHALLENGE.schema["required"] == ["reasoning", "verdict"]  # upstream's JudgeResponse


@pytest.mark.parametrize(
    ("dataset", "item", "prompt"),
    [
        ("longmemeval_s", "e47becba", LONGMEMEVAL),
        ("longmemeval_oracle", "gpt4_2655b836_abs", LONGMEMEVAL_ABSTENTION),
        ("multichallenge", "6745526875828b24787b636f", MULTICHALLENGE),
        ("factconsolidation", "1", HARNESS),
    ],
)
def test_the_prompt_is_chosen_by_the_items_benchmark(dataset: str, item: str, prompt) -> None:
    assert prompt_for(Source(dataset, item, "0" * 64, "MIT")) is prompt
    assert prompt_for(None) is HARNESS


@pytest.mark.parametrize(
    ("reply", "word"), [("yes", "YES"), ("Yes.", "YES"), ("No, but yes in part", "YES"), ("No.", "NO"), ("", "NO")]
)
def test_longmemeval_reads_yes_anywhere_in_the_reply(reply: str, word: str) -> None:
    assert yes_anywhere(reply, "YES") == {"judged_in_answer": word == "YES", "judge_note": f"verdict {word}"}


@pytest.mark.parametrize(
    ("reply", "note"),
    [
        ('{"reasoning": "It says yes to bold.", "verdict": "NO"}', "verdict NO"),
        ("It does not use bold, yes. Verdict: NO", "verdict NO"),
        ("The criteria hold.", f"{JUDGE_UNUSABLE}: no verdict word in 'The criteria hold.'"),
        # beyond the JSON bounds (a RecursionError before): the reasoning's last word decides
        ('{"verdict": "NO", "x": ' + "[" * 100_000 + "]" * 100_000 + "} YES", "verdict YES"),
    ],
    ids=lambda value: value[:30],
)
def test_multichallenge_reads_the_verdict_after_the_reasoning(reply: str, note: str) -> None:
    assert reasoned_verdict(reply, "NO")["judge_note"] == note


def test_each_prompt_used_is_recorded_by_its_sha256() -> None:
    sources = [Source("multichallenge", "1", "0" * 64, "x"), None, Source("multichallenge", "2", "0" * 64, "x")]
    assert recorded_prompts(sources) == {"harness": HARNESS.sha256, "multichallenge": MULTICHALLENGE.sha256}
    assert len({p.sha256 for p in (HARNESS, LONGMEMEVAL, LONGMEMEVAL_ABSTENTION, MULTICHALLENGE)}) == 4


def test_a_run_judges_an_items_rubric_through_its_benchmarks_prompt(tmp_path: Path) -> None:
    probe = user(2, "Any foods?", probe="target", expect=(Expectation("rubric", "Avoids bold?", passes="YES"),))
    item = dataclasses.replace(
        chronology(user(1, "No bold, please.", assistant="Noted."), probe),
        source=Source("multichallenge", "q1", "0" * 64, "named-by-the-user", "INSTRUCTION_RETENTION"),
    )
    judge = ScriptedModel("judge", '{"reasoning": "plain text", "verdict": "YES"}')
    probes = replayed(tmp_path, item, "full-history", judge).probes
    [request] = judge.requests
    assert [m.role for m in request.messages] == [
        "user"
    ] and "<CRITERIA>\nAvoids bold?\n</CRITERIA>" in request.messages[0].text
    assert request.schema is MULTICHALLENGE.schema
    assert probes[probes.check == "expect"].passed.tolist() == [True]
