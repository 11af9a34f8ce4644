"""The invariant every policy keeps, checked at each turn: a policy that splits a tool group,
drops the system message or alters a user message is recorded in turns.csv `group_violations`,
never stopped."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from harness.base.messages import Message, ToolCall
from harness.chronology import Step, ToolResult, UserTurn
from harness.models.openai import OpenAIModel
from harness.models.reference import ReferenceModel
from harness.policy import Outcome, PolicyRegistry
from harness.results.tables import Results, load_results
from harness.run.conversation import Conversation
from harness.run.groups import MAX_SHOWN, violations_text
from policies.full_history import FullHistory
from tests.conftest import BUILTIN_POLICIES, chronology, record_conversation, user
from tests.loopback import Reply, ScriptedServer, chat_completion

STEP = Step((ToolCall("call_1", "read_file", '{"path": "a.py"}'),), (ToolResult("call_1", "print(1)"),))
AGENT = chronology(
    user(1, "Read a.py.", steps=(STEP,), assistant="It prints 1."),
    user(2, "And now?", assistant="Still 1."),
    user(3, "Thanks.", assistant="You're welcome."),
)


class CallDropper(FullHistory):
    """Sheds the assistant messages that carry tool calls and keeps their results: the split the
    anchors' trackers report (a trimmed call, an orphan result the API refuses)."""

    name = "call-dropper"

    def view(self, turn: UserTurn) -> Sequence[Message]:
        return [m for m in super().view(turn) if not m.tool_calls]


class SystemDropper(FullHistory):
    name = "system-dropper"

    def view(self, turn: UserTurn) -> Sequence[Message]:
        return [m for m in super().view(turn) if m.role != "system"]


class UserRewriter(FullHistory):
    """Shortens earlier user messages in its history without saying so."""

    name = "user-rewriter"

    def after_answer(self, turn: UserTurn, answer: str, aux: object) -> Outcome:
        outcome = super().after_answer(turn, answer, aux)
        history = list(self.histories.of(turn.session))
        self.histories.set(
            turn.session, [replace(m, content=m.content[:4]) if m.role == "user" else m for m in history]
        )
        return outcome


class SilentForgetter(FullHistory):
    """Keeps only the latest exchange, recording no drop."""

    name = "silent-forgetter"

    def after_answer(self, turn: UserTurn, answer: str, aux: object) -> Outcome:
        super().after_answer(turn, answer, aux)
        history = list(self.histories.of(turn.session))
        self.histories.set(turn.session, history[-2:])
        return Outcome()


REGISTRY = PolicyRegistry.from_mapping(
    {**BUILTIN_POLICIES, **{cls.name: cls for cls in (CallDropper, SystemDropper, UserRewriter, SilentForgetter)}}
)


def violations(tmp_path: Path, policy: str, chron=AGENT) -> list[str | None]:
    conversation = Conversation(chron, REGISTRY.parse(policy), "reference", 1)
    finished = record_conversation(tmp_path, conversation, REGISTRY, ReferenceModel())
    assert finished.status == "complete"  # recorded, never a crash nor a stop
    cells = load_results(tmp_path).turns.group_violations
    return [None if isinstance(cell, float) else cell for cell in cells]


def test_a_policy_that_drops_the_calls_is_reported_at_each_turn(tmp_path: Path) -> None:
    assert violations(tmp_path, "call-dropper") == [
        "view: result call_1 (turn 1) without its call before it",
        "view: result call_1 (turn 1) without its call before it",
        "view: result call_1 (turn 1) without its call before it",
    ]


def test_a_policy_that_drops_the_system_message_is_reported(tmp_path: Path) -> None:
    assert violations(tmp_path, "system-dropper") == ["view: the system message is missing"] * 3


def test_without_a_system_message_in_the_chronology_none_is_missing(tmp_path: Path) -> None:
    chron = chronology(user(1, "hi", assistant="hello"), system=None)
    assert violations(tmp_path, "system-dropper", chron) == [None]


def test_a_user_message_altered_without_a_drop_is_reported_where_it_enters(tmp_path: Path) -> None:
    assert violations(tmp_path, "user-rewriter") == [
        "retained: user message of turn 1 altered without a recorded drop",
        "view: user message of turn 1 altered without a recorded drop; "
        "retained: user message of turn 2 altered without a recorded drop",
        "view: user message of turn 2 altered without a recorded drop; "
        "retained: user message of turn 3 altered without a recorded drop",
    ]


def test_a_user_message_removed_from_the_retained_state_without_a_drop_is_reported(tmp_path: Path) -> None:
    assert violations(tmp_path, "silent-forgetter") == [
        "retained: result call_1 (turn 1) without its call before it; "
        "retained: user message of turn 1 neither kept nor dropped",
        "view: result call_1 (turn 1) without its call before it",
        "retained: user message of turn 2 removed without a recorded drop",
    ]


@pytest.mark.parametrize("policy", ["full-history", "last-turns:turns=1", "retained-reduction:trigger=1,preserve=1"])
def test_the_built_in_windows_keep_groups_whole(tmp_path: Path, policy: str) -> None:
    assert violations(tmp_path, policy) == [None] * 3


def test_the_cell_shows_the_first_violations_and_counts_the_rest() -> None:
    many = [f"view: result c{i} (turn 1) without its call before it" for i in range(MAX_SHOWN + 3)]
    assert violations_text(many).endswith("view: result c4 (turn 1) without its call before it; and 3 more")
    assert violations_text([]) is None


# --- against an endpoint that refuses what the real API refuses --------------------------------


@pytest.fixture
def endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[ScriptedServer, OpenAIModel]]:
    monkeypatch.setenv("HARNESS_TEST_API_KEY", "sk-loopback")
    with ScriptedServer() as server:
        server.default = Reply(body=chat_completion("Noted."))
        with OpenAIModel("m", base_url=server.base_url, api_key_env="HARNESS_TEST_API_KEY", max_retries=0) as model:
            yield server, model


def replayed_live(tmp_path: Path, policy: str, model: OpenAIModel) -> tuple[str, Results]:
    conversation = Conversation(AGENT, REGISTRY.parse(policy), "openai:m", 1)
    finished = record_conversation(tmp_path, conversation, REGISTRY, model, live=True)
    return finished.status, load_results(tmp_path)


def test_the_check_names_the_policy_before_the_request_the_api_refuses(
    tmp_path: Path, endpoint: tuple[ScriptedServer, OpenAIModel]
) -> None:
    server, model = endpoint
    status, results = replayed_live(tmp_path, "call-dropper", model)
    assert status == "error" and server.refused == 1
    row = results.turns.iloc[0]
    assert row.status == "error" and "400" in row.error
    assert row.group_violations == "view: result call_1 (turn 1) without its call before it"


def test_a_policy_that_keeps_groups_whole_sends_well_paired_requests(
    tmp_path: Path, endpoint: tuple[ScriptedServer, OpenAIModel]
) -> None:
    server, model = endpoint
    status, results = replayed_live(tmp_path, "full-history", model)
    assert status == "complete" and server.refused == 0
    last = server.requests[-1].body["messages"]
    assert [m["role"] for m in last] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    assert results.turns.group_violations.isna().all()
