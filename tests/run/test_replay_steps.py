"""Replaying a chronology with tool steps: under every built-in policy the view at a turn with
steps ends with the user message and the steps, the history after it holds user, steps, reply,
and no policy splits a group."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.base.messages import ToolCall
from harness.chronology import Step, ToolResult
from harness.models.reference import ReferenceModel
from harness.results.tables import Results, load_results
from harness.run.conversation import Conversation
from tests.conftest import COMPARISON, NO_RESTART, builtin_registry, chronology, record_conversation, user

REGISTRY = builtin_registry()

READ = Step((ToolCall("call_1", "read_config", '{"service": "billing"}'),), (ToolResult("call_1", "database=Oracle"),))
TWO = Step(
    (ToolCall("call_2", "grep", '{"pattern": "restart"}'), ToolCall("call_3", "ls", "{}")),
    (ToolResult("call_2", "no match", error=True), ToolResult("call_3", "main.py")),
)
AGENT = chronology(
    user(1, "constraint=never restart production", assistant="Understood."),
    user(2, "Check the billing service's configuration.", steps=(READ, TWO), assistant="Done."),
    user(3, "Hello", assistant="Hi."),
    user(4, "Which database does billing use?", probe="which-database"),
    prohibitions=(NO_RESTART,),
)

STEP_MESSAGES = [
    ("assistant", "", ("call_1",), None),
    ("tool", "database=Oracle", (), "call_1"),
    ("assistant", "", ("call_2", "call_3"), None),
    ("tool", "no match", (), "call_2"),
    ("tool", "main.py", (), "call_3"),
]


def replay(tmp_path: Path, policy: str) -> Results:
    conversation = Conversation(AGENT, REGISTRY.parse(policy), "reference", 1)
    record_conversation(tmp_path, conversation, REGISTRY, ReferenceModel())
    return load_results(tmp_path)


def shape(messages: list[dict]) -> list[tuple]:
    return [
        (m["role"], m["content"], tuple(c["id"] for c in m.get("tool_calls", ())), m.get("tool_call_id"))
        for m in messages
    ]


@pytest.mark.parametrize("policy", COMPARISON)
def test_the_view_at_a_turn_with_steps_ends_with_the_user_message_and_its_steps(tmp_path: Path, policy: str) -> None:
    results = replay(tmp_path, policy)
    view = results.view_at("mem", policy, "reference", 1, turn=2)["view"]
    assert view[-6]["role"] == "user" and view[-6]["content"].endswith("Check the billing service's configuration.")
    assert shape(view[-5:]) == STEP_MESSAGES
    assert results.turns.group_violations.isna().all()


@pytest.mark.parametrize("policy", ["full-history", "last-turns", "token-budget", "retrieval", "retained-reduction"])
def test_the_history_after_a_turn_with_steps_holds_user_steps_then_reply(tmp_path: Path, policy: str) -> None:
    retained = replay(tmp_path, policy).view_at("mem", policy, "reference", 1, turn=2)["retained"]
    assert shape(retained[-7:]) == [
        ("user", "Check the billing service's configuration.", (), None),
        *STEP_MESSAGES,
        ("assistant", "Done.", (), None),
    ]


def test_a_later_view_keeps_the_steps_in_place_and_the_reference_model_reads_the_tool_result(tmp_path: Path) -> None:
    results = replay(tmp_path, "full-history")
    view = results.view_at("mem", "full-history", "reference", 1, turn=4)["view"]
    assert [m["origin"] for m in view if m["role"] == "tool"] == ["history"] * 3
    answer = results.calls.query("turn == 4 and kind == 'answer'").response.iloc[0]
    assert "Oracle" in answer  # read from the tool result like any text


def test_a_window_that_lets_the_turn_go_lets_its_steps_go_with_it(tmp_path: Path) -> None:
    results = replay(tmp_path, "last-turns:turns=1")
    view = results.view_at("mem", "last-turns:turns=1", "reference", 1, turn=4)["view"]
    assert [m["role"] for m in view] == ["system", "user", "assistant", "user"]
    assert results.turns.group_violations.isna().all()


def test_the_step_texts_count_in_the_view_figures(tmp_path: Path) -> None:
    """Each call as `name(arguments)`, each result's content: `Message.text`."""
    chars = replay(tmp_path, "full-history").turns.set_index("turn").view_chars
    before = len("SYS") + len("constraint=never restart production") + len("Understood.")
    steps = len('read_config({"service": "billing"})') + len("database=Oracle")
    steps += len('grep({"pattern": "restart"})\nls({})') + len("no match") + len("main.py")
    assert chars[2] == before + len("Check the billing service's configuration.") + steps
