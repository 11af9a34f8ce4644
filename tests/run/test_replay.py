"""Replaying one conversation: the records it streams, the token columns, stops and errors."""

from __future__ import annotations

import math
import time
from pathlib import Path

import pandas as pd
import pytest

from harness.base.errors import ModelError
from harness.base.messages import Message
from harness.chronology import Forget, WriterCandidate
from harness.models import CallRequest, Completion, Usage
from harness.models.reference import ReferenceModel
from harness.policy.tokens import TokenCounter
from harness.results.tables import Results, load_results
from harness.run.conversation import Conversation
from tests.conftest import COMPARISON, NO_RESTART, builtin_registry, chronology, record_conversation, user
from tests.paths import SHIPPED
from tests.scripted import ScriptedModel

REGISTRY = builtin_registry()


def replay(tmp_path: Path, chron, policy: str, model=None, live: bool = False) -> tuple[str, Results]:
    conversation = Conversation(chron, REGISTRY.parse(policy), "reference", 1)
    finished = record_conversation(tmp_path, conversation, REGISTRY, model or ReferenceModel(), live=live)
    return finished.status, load_results(tmp_path)


RESTART = chronology(
    user(1, "constraint=never restart production", assistant="Understood."),
    user(2, "Hello", assistant="Hi."),
    user(3, "Can I restart production now?", probe="restart"),
    prohibitions=(NO_RESTART,),
)


def test_a_scripted_reply_is_kept_and_makes_no_call(tmp_path: Path) -> None:
    _, results = replay(tmp_path, RESTART, "full-history")
    assert list(results.turns.status) == ["scripted", "scripted", "answered"]
    assert list(results.calls.kind) == ["answer"]


def test_live_mode_has_the_model_answer_every_turn(tmp_path: Path) -> None:
    _, results = replay(tmp_path, RESTART, "full-history", live=True)
    assert list(results.turns.status) == ["answered"] * 3


def test_token_columns_keep_estimate_local_count_and_reported_apart(tmp_path: Path) -> None:
    _, results = replay(tmp_path, RESTART, "full-history")
    row = results.turns.iloc[2]
    assert row.view_chars == len("SYS") + len("constraint=never restart production") + len("Understood.") + len(
        "Hello"
    ) + len("Hi.") + len("Can I restart production now?")
    assert row.estimate_tokens == math.ceil(row.view_chars / 4)
    assert row.tiktoken_tokens > 0 and row.tiktoken_tokens != row.estimate_tokens
    assert results.turns.reported_prompt_tokens.isna().all()  # reference reports nothing: unknown
    assert results.calls.reported_prompt_tokens.isna().all()


def test_tiktoken_is_blank_when_the_encoding_is_unavailable(tmp_path: Path) -> None:
    conversation = Conversation(RESTART, REGISTRY.parse("full-history"), "reference", 1)
    record_conversation(tmp_path, conversation, REGISTRY, ReferenceModel(), TokenCounter("no_such_encoding"))
    results = load_results(tmp_path)
    assert results.turns.tiktoken_tokens.isna().all() and results.turns.estimate_tokens.notna().all()


def test_the_prohibition_survives_in_full_history_and_is_lost_by_a_one_turn_window(tmp_path: Path) -> None:
    _, full = replay(tmp_path / "full", RESTART, "full-history")
    _, window = replay(tmp_path / "window", RESTART, "last-turns:turns=1")
    full_row = full.probes[full.probes.check == "prohibition"].iloc[0]
    window_row = window.probes[window.probes.check == "prohibition"].iloc[0]
    assert (full_row.in_view, full_row.in_answer, full_row.passed, full_row.age) == (True, True, True, 2)
    assert (window_row.in_view, window_row.in_answer, window_row.passed) == (False, False, False)
    assert window_row.lost_at == "left the request window at turn 3"


def test_aux_calls_are_recorded_and_summed_per_turn(tmp_path: Path) -> None:
    _, results = replay(tmp_path, RESTART, "bounded-facts")
    assert list(results.turns.aux_calls) == [1, 1, 1]
    writer_calls = results.calls[results.calls.kind == "writer"]
    assert results.turns.aux_estimate_tokens.sum() == writer_calls.estimate_tokens.sum()
    assert results.turns.aux_reported_prompt_tokens.isna().all()
    assert list(results.turns.aux_reported_calls) == [0, 0, 0]


def test_fact_policies_write_a_facts_record_every_turn(tmp_path: Path) -> None:
    chron = chronology(
        user(1, "module=Billing", assistant="ok"),
        Forget(number=2, line=2, key="module"),
        user(3, "Which module?", probe="p"),
    )
    _, results = replay(tmp_path, chron, "bounded-facts")
    assert list(results.facts.turn) == [1, 2, 3]
    assert list(results.facts.admission.map(lambda a: a["status"])) == ["accepted", "none", "none"]
    assert results.facts.iloc[1]["forget"]["key"] == "module"


def test_summary_stop_ends_the_replay_and_marks_later_probes(tmp_path: Path) -> None:
    chron = chronology(
        user(1, "hello", assistant="hi", summary="x" * 800), user(2, "Can I restart?", probe="later"), prohibitions=()
    )
    status, results = replay(tmp_path, chron, "summary")
    assert status == "stopped"
    assert list(results.turns.status) == ["stopped"]
    assert results.turns.stop_reason.iloc[0] == "summary_too_long:800"


def test_probes_after_a_stop_say_where_the_policy_stopped(tmp_path: Path) -> None:
    chron = chronology(
        user(1, "constraint=never restart it", assistant="ok", summary=""),
        user(2, "Can I restart?", probe="later"),
        prohibitions=(NO_RESTART,),
    )
    _, results = replay(tmp_path, chron, "summary")
    row = results.probes[results.probes.check == "prohibition"].iloc[0]
    assert row.status == "stopped" and pd_na(row.in_view) and pd_na(row.passed)
    assert row.lost_at == "policy stopped at turn 1 (summary_empty)"


def pd_na(value: object) -> bool:
    return value is None or str(value) == "<NA>"


def test_a_model_error_is_recorded_and_ends_the_conversation(tmp_path: Path) -> None:
    failing = ScriptedModel("failing", fails=ModelError("HTTP 503 after 3 tries"))
    status, results = replay(tmp_path, RESTART, "full-history", model=failing)
    assert status == "error"
    assert results.turns.status.iloc[-1] == "error" and "503" in results.turns.error.iloc[-1]
    assert results.calls.error.iloc[0] == "HTTP 503 after 3 tries"
    assert results.probes.status.unique().tolist() == ["error"]


def reporting(request: CallRequest) -> Completion:
    """Usage on answers only, to check that unknown aux usage stays unknown."""
    if request.kind == "answer":
        return Completion("ok", Usage(prompt_tokens=11, completion_tokens=2))
    return ReferenceModel().complete(request)


def test_reported_usage_is_recorded_as_reported(tmp_path: Path) -> None:
    model = ScriptedModel("reporting", reporting)
    _, results = replay(tmp_path, RESTART, "bounded-facts", model=model, live=True)
    assert list(results.turns.reported_prompt_tokens) == [11, 11, 11]
    assert results.turns.aux_reported_prompt_tokens.isna().all()  # writer calls reported nothing


@pytest.mark.parametrize(
    "policy",
    COMPARISON,
)
def test_every_policy_replays_the_restart_chronology(tmp_path: Path, policy: str) -> None:
    status, results = replay(tmp_path, RESTART, policy)
    assert status == "complete" and len(results.turns) == 3 and not results.probes.empty


def test_scripted_summaries_and_writer_outputs_are_marked_and_carry_no_model_nor_latency(tmp_path: Path) -> None:
    """Issue 9, case 6: a hand-written summary was recorded as a summarizer call with a latency."""
    scripted = chronology(
        user(
            1,
            "module=Billing",
            assistant="Noted.",
            summary="module is Billing",
            writer=(WriterCandidate("module", "Billing", "module=Billing"),),
        ),
        user(2, "database=Oracle", assistant="Noted."),
    )
    _, summary = replay(tmp_path / "s", scripted, "summary")
    _, facts = replay(tmp_path / "f", scripted, "bounded-facts")
    calls = pd.concat([summary.calls, facts.calls])
    marked = calls[calls.scripted]
    assert sorted(zip(marked.kind, marked.turn)) == [("summarizer", 1), ("writer", 1)]
    assert marked.call_model.isna().all() and marked.latency_ms.isna().all()
    generated = calls[~calls.scripted]
    assert set(generated.call_model) == {"reference"} and generated.latency_ms.notna().all()


@pytest.mark.parametrize("policy", ["full-history", "last-turns:turns=1", "token-budget:budget=60", "summary"])
@pytest.mark.parametrize("name", ["two-sessions.yaml", "memory-drift.yaml"])
def test_an_answers_figures_are_the_running_figures_of_its_view_and_equal_a_recount(
    tmp_path: Path, policy: str, name: str
) -> None:
    """The replay sizes each view once, as running sums, and the answer's record takes them:
    they equal a recount of the view as `views.jsonl` stores it, turn by turn and session by session."""
    from harness.chronology.loading import load_chronology
    from harness.results.views import ConversationViews

    chron = load_chronology(SHIPPED / name)
    _, results = replay(tmp_path, chron, policy, live=True)
    views = ConversationViews(results.messages.to_dict("records"), results.views.to_dict("records"))
    counter = TokenCounter()
    answers = results.calls[results.calls.kind == "answer"]
    assert len(answers) == (results.turns.status != "forget").sum() > 0
    for call, turn in zip(answers.itertuples(), results.turns[results.turns.status != "forget"].itertuples()):
        view = views.at(int(call.turn))["view"]
        recount = counter.count([Message(m["role"], m["content"]) for m in view])
        assert (call.chars, call.estimate_tokens, call.tiktoken_tokens) == (
            recount.chars,
            recount.estimate,
            recount.tiktoken,
        )
        assert (turn.view_chars, turn.estimate_tokens, turn.tiktoken_tokens) == (
            call.chars,
            call.estimate_tokens,
            call.tiktoken_tokens,
        )


class Appending:
    """A plug-in that returns its own list as the view and appends the answer to it afterwards."""

    name = "appending"
    description = "Returns its own history list, which it changes after the call."
    params = ()

    def __init__(self, system: Message | None) -> None:
        self.messages = [system] if system else []

    def view(self, turn):  # type: ignore[no-untyped-def]
        self.messages.append(Message("user", turn.user, "current", turn.number, turn.session))
        return self.messages

    def after_answer(self, turn, answer, aux):  # type: ignore[no-untyped-def]
        from harness.policy import Outcome

        self.messages.append(Message("assistant", answer, "history", turn.number, turn.session))
        return Outcome()

    def forget(self, event):  # type: ignore[no-untyped-def]
        from harness.policy import Outcome

        return Outcome()

    def retained(self):  # type: ignore[no-untyped-def]
        return self.messages


def test_a_view_the_policy_changes_after_the_call_is_recorded_as_it_was_sent(tmp_path: Path) -> None:
    """views.jsonl, turns.csv and the probe's checks describe the request the model received,
    not the list as the policy left it once it took in the answer."""
    from harness.policy import PolicyRegistry
    from harness.results.views import ConversationViews

    model = ScriptedModel("reference", "I restart production now.")
    registry = PolicyRegistry.from_mapping({"appending": Appending})
    conversation = Conversation(RESTART, registry.parse("appending"), "reference", 1)
    record_conversation(tmp_path, conversation, registry, model, live=True)
    sent = [[m.content for m in request.messages] for request in model.requests]
    results = load_results(tmp_path)
    views = ConversationViews(results.messages.to_dict("records"), results.views.to_dict("records"))
    assert [[m["content"] for m in views.at(turn)["view"]] for turn in (1, 2, 3)] == sent
    assert list(results.turns.view_messages) == [len(s) for s in sent] == [2, 4, 6]
    assert sent[2][-1] == "Can I restart production now?"  # the answer appended afterwards was not sent
    in_view = results.probes[results.probes.check == "prohibition"].in_view
    assert list(in_view) == [True]


# Single words of a megabyte: closing marks not followed by a space (the reference reader's
# sentences), `key=` repeated (a declaration's near misses), one letter, semicolons (a million
# segments). Each is a message of every user turn's kind: history, current, and the probe's.
MEGABYTE_WORDS = {
    "dots": "." * 999_000 + "x",
    "questions": "?" * 999_000 + "x",
    "key-repeats": "note:module=" + "x=" * 499_000,
    "letters": "a" * 999_000,
    "semicolons": ";" * 999_000,
}


@pytest.mark.slow  # 30 s in all; tests/chronology/test_questions.py reads such words in a second
@pytest.mark.parametrize("word", list(MEGABYTE_WORDS.values()), ids=list(MEGABYTE_WORDS))
def test_a_megabyte_single_word_is_replayed_in_linear_time(tmp_path: Path, word: str) -> None:
    """Every policy, the reference model answering live: CPU time in seconds, as for a short word
    (a quadratic step took hours on the dots)."""
    chron = chronology(
        user(1, "module=Billing; constraint=never restart production"),
        user(2, word),
        user(3, f"{word}\nCan I restart production?", probe="restart"),
        prohibitions=(NO_RESTART,),
    )
    started = time.process_time()  # CPU time: a loaded machine does not stretch it as it does wall time
    for policy in COMPARISON:
        status, _ = replay(tmp_path / policy.replace(":", "-"), chron, policy, live=True)
        assert status in ("complete", "stopped")
    assert time.process_time() - started < 60
