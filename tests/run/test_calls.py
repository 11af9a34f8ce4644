"""The caller: every call made, by the model its role maps to, and recorded as it happens; answers
refer to the recorded view; an oversized answer is cut, and says so."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from harness.base.errors import ModelError
from harness.base.messages import Message
from harness.models import Completion, Usage
from harness.models.cache import ResponseCache
from harness.models.options import Models
from harness.policy.tokens import TokenCounter
from harness.results.rows import CallRecord
from harness.results.tables import Results, load_results
from harness.run.calls import MAX_ANSWER_CHARS, Caller, aux_columns
from harness.run.conversation import Conversation
from tests.conftest import builtin_registry, chronology, record_conversation, user
from tests.paths import ROOT
from tests.scripted import ScriptedModel

TURN = user(3, "module=Billing", summary="scripted summary")
ASK = (Message("system", "instructions", origin="system"), Message("user", "text", origin="current"))


def scripted(name: str, fails: bool = False, cacheable: bool = False) -> ScriptedModel:
    """A model that replies `<name>: <role>`; `fails`: every call raises ModelError; `cacheable`:
    it names a cache identity."""
    return ScriptedModel(
        name,
        lambda request: Completion(f"{name}: {request.kind}", Usage(5, 2)),
        fails=ModelError(f"{name}: HTTP 503 (3 attempts)", 3) if fails else None,
        cache_identity={"model": name} if cacheable else None,
    )


class Sink(list):
    """The results writer's `call`, kept in memory as the record it writes."""

    def call(self, record: CallRecord) -> None:
        self.append(record.as_record())


def caller(models: Models, cache: ResponseCache | None = None) -> tuple[Caller, Sink]:
    conversation = Conversation(chronology(TURN), builtin_registry().parse("summary"), "a", 1)
    sink = Sink()
    return Caller(conversation, models, TokenCounter(), sink, cache), sink  # type: ignore[arg-type]


def test_a_policys_call_goes_to_the_model_its_role_maps_to_and_is_recorded_with_kind_role() -> None:
    answer, critic = scripted("a"), scripted("c")
    made, sink = caller(Models(answer, {"critic": critic}))
    assert made.for_turn(TURN).call("critic", ASK, schema={"type": "object"}) == "c: critic"
    assert made.for_turn(TURN).call("writer", ASK) == "a: writer"  # a role not mapped: the answering model
    assert [(r["kind"], r["call_model"], r["turn"], r["scripted"]) for r in sink] == [
        ("critic", "c", 3, False),
        ("writer", "a", 3, False),
    ]
    assert critic.requests[0].schema == {"type": "object"} and sink[0]["messages"][1]["content"] == "text"
    assert [r.as_record() for r in made.aux] == list(sink)  # both count in the turn's aux_* cells


def test_a_failed_call_is_recorded_then_raised() -> None:
    made, sink = caller(Models(scripted("a", fails=True)))
    with pytest.raises(ModelError, match="HTTP 503"):
        made.for_turn(TURN).call("summarizer", ASK)
    assert (sink[0]["error"], sink[0]["attempts"], sink[0]["response"]) == ("a: HTTP 503 (3 attempts)", 3, None)
    assert made.stats.errors == 1 and made.stats.retries == 2


@pytest.mark.parametrize("role", ["answer", "judge", " "])
def test_a_policy_cannot_borrow_the_harnesss_own_roles(role: str) -> None:
    made, _ = caller(Models(scripted("a")))
    with pytest.raises(ValueError, match="name the policy's own role"):
        made.for_turn(TURN).call(role, ASK)


def test_a_scripted_output_has_no_model_no_latency_and_no_attempts() -> None:
    from harness.models.reference import ReferenceModel

    made, sink = caller(Models(ReferenceModel()))
    assert made.for_turn(TURN).call("summarizer", ASK) == "scripted summary"
    assert {k: sink[0][k] for k in ("call_model", "scripted", "latency_ms", "attempts")} == {
        "call_model": None,
        "scripted": True,
        "latency_ms": None,
        "attempts": 0,
    }


def test_a_cacheable_model_is_asked_once_for_the_same_call(tmp_path: Path) -> None:
    model, cache = scripted("a", cacheable=True), ResponseCache(tmp_path / "r.sqlite")
    made, sink = caller(Models(model), cache)
    first, second = (made.for_turn(TURN).call("critic", ASK) for _ in range(2))
    cache.close()
    assert first == second == "a: critic" and len(model.requests) == 1
    assert [r["cached"] for r in sink] == [False, True] and made.stats.cached == 1


def caller_of(policy: str, models: Models, cache: ResponseCache) -> tuple[Caller, Sink]:
    conversation = Conversation(chronology(TURN), builtin_registry().parse(policy), "a", 1)
    sink = Sink()
    return Caller(conversation, models, TokenCounter(), sink, cache), sink  # type: ignore[arg-type]


@pytest.mark.parametrize("per_policy, requests", [(False, 1), (True, 2)], ids=["shared", "independent"])
def test_two_policies_share_one_response_unless_the_cache_keeps_each_policys_apart(
    tmp_path: Path, per_policy: bool, requests: int
) -> None:
    model = scripted("a", cacheable=True)
    cache = ResponseCache(tmp_path / "r.sqlite", per_policy=per_policy)
    for policy in ("summary", "full-history"):
        caller_of(policy, Models(model), cache)[0].for_turn(TURN).call("critic", ASK)
    cache.close()
    assert len(model.requests) == requests


def test_the_judge_has_its_own_model_and_no_judge_means_none() -> None:
    judge = scripted("j")
    assert Models(scripted("a"), judge=judge).for_kind("judge") is judge
    with pytest.raises(AssertionError, match="no model for judge calls"):
        Models(scripted("a")).for_kind("judge")


def test_aux_totals_are_unknown_unless_every_call_reported() -> None:
    made, sink = caller(Models(scripted("a")))
    made.for_turn(TURN).call("critic", ASK)
    reported = replace(
        made.aux[0],
        chars=10,
        estimate_tokens=3,
        tiktoken_tokens=4,
        reported_prompt_tokens=5,
        reported_completion_tokens=2,
    )
    silent = replace(reported, reported_prompt_tokens=None, reported_completion_tokens=None)
    assert aux_columns([reported, reported])["aux_reported_prompt_tokens"] == 10
    cells = aux_columns([reported, silent])
    assert (cells["aux_calls"], cells["aux_reported_calls"], cells["aux_reported_prompt_tokens"]) == (2, 1, None)
    assert cells["aux_chars"] == 20


@pytest.mark.parametrize(
    "module",
    ["run/calls", "run/replay", "models/__init__", "models/reference", "models/openai", "models/local", "models/cache"],
)
def test_the_core_names_no_policys_role(module: str) -> None:
    """Summary and bounded facts use only the seam: their roles appear in no string of the core."""
    import ast

    tree = ast.parse((ROOT / "harness" / f"{module}.py").read_text())
    strings = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    assert not strings & {"summarizer", "writer", "summary", "facts"}


# --- answers refer to the recorded view; the answer cap ---------------------------------

REGISTRY = builtin_registry()
FOUR = chronology(*[user(n, f"question {n}") for n in range(1, 5)])


def talker(size: int) -> ScriptedModel:
    """Answers every call with `size` characters of prose."""
    return ScriptedModel("talker", ("the lock table is fine. " * (size // 24 + 1))[:size])


def replay(directory: Path, model: ScriptedModel, policy: str = "full-history") -> Results:
    conversation = Conversation(FOUR, REGISTRY.parse(policy), "talker", 1)
    record_conversation(directory, conversation, REGISTRY, model)
    return load_results(directory)


def test_an_answer_call_refers_to_the_view_recorded_at_its_turn(tmp_path: Path) -> None:
    model = talker(10)
    results = replay(tmp_path, model)
    answers = results.calls[results.calls.kind == "answer"]
    assert answers.messages.isna().all() and (answers.messages_from == "views.jsonl").all()
    for request in model.requests:
        record = results.view_at("mem", "full-history", "talker", 1, request.turn.number)
        assert record is not None and record["view"] == [m.as_record() for m in request.messages]


def test_an_answer_beyond_the_limit_is_cut_and_the_record_says_so(tmp_path: Path) -> None:
    results = replay(tmp_path, talker(MAX_ANSWER_CHARS + 7))
    call = results.calls.iloc[0]
    assert call.truncated and call.response_chars == MAX_ANSWER_CHARS + 7 and len(call.response) == MAX_ANSWER_CHARS
    later = results.view_at("mem", "full-history", "talker", 1, 2)
    assert later is not None and len(later["view"][2]["content"]) == MAX_ANSWER_CHARS  # the cut answer is the history


def test_an_answer_within_the_limit_is_kept_whole(tmp_path: Path) -> None:
    call = replay(tmp_path, talker(MAX_ANSWER_CHARS)).calls.iloc[0]
    assert not call.truncated and call.response_chars == len(call.response) == MAX_ANSWER_CHARS


def test_ten_megabyte_answers_write_results_linear_in_what_is_kept(tmp_path: Path) -> None:
    """Four 10 MB answers under full history wrote hundreds of MB; now each kept answer is
    stored twice (its call's response, and once as a message) and nothing else grows."""
    replay(tmp_path, talker(10_000_000))
    written = sum(path.stat().st_size for path in tmp_path.iterdir())
    assert written < 4 * 2 * MAX_ANSWER_CHARS + 20_000, written


def test_the_caller_does_not_import_the_runner_and_the_replay_keeps_to_the_callers_methods() -> None:
    """Issue 13: caller.py and runner.py imported each other; Replay reached into caller.aux and caller.counter."""
    import ast
    import re

    harness_dir = ROOT / "harness"
    imported = {
        node.module
        for node in ast.walk(ast.parse((harness_dir / "run" / "calls.py").read_text(encoding="utf-8")))
        if isinstance(node, ast.ImportFrom)
    }
    assert "harness.run.replay" not in imported
    runner = (harness_dir / "run" / "replay.py").read_text(encoding="utf-8")
    assert re.findall(r"caller\.(aux|counter|models)\b", runner) == []
