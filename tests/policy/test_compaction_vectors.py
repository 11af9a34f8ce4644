"""MAF's test vectors with tool groups: the sliding window (`request-compaction`,
`retained-reduction`) and the group index the MAF policies read (`policies.tool_result_compaction.Index`)
agree with Microsoft Agent Framework's .NET unit tests for grouped tool calls.

Re-derived, not copied, from `dotnet/tests/Microsoft.Agents.AI.UnitTests/Compaction/` at commit
`5eb3eb7` (`SlidingWindowCompactionStrategyTests.cs`, `CompactionMessageIndexTests.cs`); each test
names the MAF test method it comes from. MAF's cases are written on a message index; here they are
chronologies with tool steps, replayed through the policies, so the tool groups are the ones a
replay builds. Where the harness differs on purpose (docs/policies.md), the test asserts the
harness's documented behaviour and says what MAF does.
"""

from __future__ import annotations

from harness.base.messages import Message, ToolCall
from harness.chronology import Step, ToolResult, UserTurn
from harness.policy.compaction import sliding_window
from harness.policy.groups import group_problems
from harness.policy.history import exchange
from harness.policy.tokens import TokenCounter
from policies.compaction import RequestCompaction, RetainedReduction
from policies.tool_result_compaction import Index
from tests.conftest import user
from tests.policy.test_policies import FakeAux

SYS = Message("system", "SYS", origin="system")


def step(*call_ids: str, name: str = "search") -> Step:
    """One assistant message carrying a call per id, answered by one result each (MAF's tool-call group)."""
    return Step(
        tuple(ToolCall(call_id, name, "{}") for call_id in call_ids),
        tuple(ToolResult(call_id, f"result of {call_id}") for call_id in call_ids),
    )


def turn(number: int, *steps: Step) -> UserTurn:
    return user(number, f"Q{number}", steps=steps)


def replay(policy, *turns: UserTurn) -> tuple[list[Message], list]:
    """View and answer each turn (answer `A<n>`); the last view and the drops of every answer."""
    view, dropped = [], []
    for t in turns:
        view = list(policy.view(t))
        dropped += policy.after_answer(t, f"A{t.number}", FakeAux()).dropped
    return view, dropped


def shape(messages) -> list[str]:
    """Each message in short: its text, `call <ids>` for a tool-call message, `result <id>` for a result."""
    out = []
    for m in messages:
        if m.tool_calls:
            out.append("call " + ",".join(c.id for c in m.tool_calls))
        elif m.role == "tool":
            out.append(f"result {m.tool_call_id}")
        else:
            out.append(m.content)
    return out


# --- SlidingWindowCompactionStrategyTests -------------------------------------------------------


def test_a_kept_turn_keeps_its_tool_group_whole_in_the_request_view() -> None:
    # CompactAsyncPreservesToolCallGroupsInKeptTurnsAsync: TurnsExceed(1) over
    # [Q1, A1, Q2, call1 + result]: turn 1 is excluded, turn 2 (user + tool-call group) kept.
    # Here turn 2 is the current turn, its step not yet answered.
    policy = RequestCompaction(SYS, trigger=1, preserve=1)
    view, _ = replay(policy, turn(1), turn(2, step("call1")))
    assert shape(view) == ["SYS", "Q2", "call call1", "result call1"]
    assert group_problems(view) == []


def test_a_kept_turn_keeps_its_tool_group_whole_in_the_retained_history() -> None:
    # CompactAsyncPreservesToolCallGroupsInKeptTurnsAsync, as `retained-reduction` applies it to
    # the history after turn 2 is answered: turn 1 goes, turn 2 keeps its group and its reply.
    policy = RetainedReduction(SYS, trigger=1, preserve=1)
    _, dropped = replay(policy, turn(1), turn(2, step("call1")))
    assert shape(policy.retained()) == ["Q2", "call call1", "result call1", "A2"]
    assert [d.text for d in dropped] == ["Q1", "A1"]


def test_an_excluded_turn_takes_its_tool_groups_with_it() -> None:
    # CompactAsyncExceedsMaxTurnsExcludesOldestTurnsAsync with tool groups in the oldest turn:
    # TurnsExceed(2) over three turns excludes turn 1 whole, every group of it (its user message,
    # its tool-call groups, its reply), so no call is left without its result.
    turns = (turn(1, step("c1.1"), step("c1.2", "c1.3")), turn(2, step("c2.1")), turn(3))
    reduced = RetainedReduction(SYS, trigger=2, preserve=1)
    _, dropped = replay(reduced, *turns)
    assert shape(reduced.retained()) == ["Q2", "call c2.1", "result c2.1", "A2", "Q3", "A3"]
    assert group_problems(reduced.retained()) == []
    # Turn 1's 7 messages, each reported once, in order: Q1, two call messages, three results, A1.
    assert [d.text for d in dropped] == [
        "Q1",
        "search({})",
        "result of c1.1",
        "search({})\nsearch({})",
        "result of c1.2",
        "result of c1.3",
        "A1",
    ]
    assert {d.cause for d in dropped} == {"reduction"}

    # The request view at turn 3 counts the current turn: turns 2 and 3 stay, turn 1 goes whole.
    view, _ = replay(RequestCompaction(SYS, trigger=2, preserve=1), *turns)
    assert shape(view) == ["SYS", "Q2", "call c2.1", "result c2.1", "A2", "Q3"]
    assert group_problems(view) == []


def test_below_the_trigger_tool_groups_do_not_count_as_turns() -> None:
    # CompactAsyncBelowMaxTurnsReturnsFalseAsync with tool groups: MAF's trigger counts turns
    # (user messages), not groups; two turns with three tool groups do not exceed TurnsExceed(3).
    policy = RetainedReduction(SYS, trigger=3, preserve=1)
    _, dropped = replay(policy, turn(1, step("c1.1"), step("c1.2")), turn(2, step("c2.1")))
    assert dropped == []
    assert shape(policy.retained()) == [
        "Q1",
        "call c1.1",
        "result c1.1",
        "call c1.2",
        "result c1.2",
        "A1",
        "Q2",
        "call c2.1",
        "result c2.1",
        "A2",
    ]


def test_the_system_message_and_the_kept_turn_only_remain() -> None:
    # CompactAsyncIncludedMessagesContainOnlyKeptTurnsAsync, turn 1 with a tool group:
    # TurnsExceed(1) over [System, Q1, call + result, A1, Q2, A2] includes [System, Q2, A2].
    # The harness's request view holds the current turn, so Q3 is the kept turn at turn 3 here;
    # after turn 2, `retained-reduction` holds [Q2, A2] (the system message is never retained).
    reduced = RetainedReduction(SYS, trigger=1, preserve=1)
    replay(reduced, turn(1, step("c1.1")), turn(2))
    assert shape(reduced.retained()) == ["Q2", "A2"]
    view, _ = replay(RequestCompaction(SYS, trigger=1, preserve=1), turn(1, step("c1.1")), turn(2))
    assert shape(view) == ["SYS", "Q2"]


def test_a_tool_group_before_the_first_user_message_is_never_dropped() -> None:
    # CompactAsyncPreservesTurnIndexZeroAsync: a message before the first user message has
    # TurnIndex 0 and is never excluded. MAF's case uses minimumPreservedTurns: 0 and a target
    # that never stops, so both turns go; the harness's floor is at least 1 (docs/policies.md),
    # so here the newest turn stays. The turn-0 group is a tool call with its result.
    messages = [
        Message("assistant", "", tool_calls=(ToolCall("c0", "search", "{}"),)),
        Message("tool", "welcome", tool_call_id="c0"),
        Message("user", "Q1"),
        Message("assistant", "A1"),
        Message("user", "Q2"),
        Message("assistant", "A2"),
    ]
    assert shape(sliding_window(messages, trigger=1, preserve=1)) == ["call c0", "result c0", "Q2", "A2"]


# --- CompactionMessageIndexTests ----------------------------------------------------------------


def index_of(messages: list[Message]) -> Index:
    return Index(messages, TokenCounter())


def kinds(index: Index) -> list[tuple[str, int | None, int]]:
    return [(g.kind, g.turn, len(g.messages)) for g in index.groups]


def test_a_tool_call_and_its_result_are_one_group() -> None:
    # CreateToolCallWithResultsCreatesAtomicGroup: [call1, result1] is a single ToolCall group of
    # 2 messages, in order. (MAF's turn index before any user message is 0, as here.)
    messages = exchange(turn(1, step("call1")), "A1")[1:3]
    index = index_of(messages)
    assert kinds(index) == [("tool-call", 0, 2)]
    assert list(index.groups[0].messages) == messages


def test_a_conversation_with_a_tool_step_groups_by_kind() -> None:
    # CreateMixedConversationGroupsCorrectly: [System, User, call + result, Assistant text] is
    # four groups, System, User, ToolCall (2 messages), AssistantText.
    index = index_of([SYS, *exchange(turn(1, step("call1")), "A1")])
    assert kinds(index) == [("system", None, 1), ("user", 1, 1), ("tool-call", 1, 2), ("text", 1, 1)]


def test_several_results_join_the_call_message_they_answer() -> None:
    # CreateMultipleToolResultsGroupsAllWithAssistant: one assistant message with two calls and
    # its two tool results are one ToolCall group of 3 messages.
    messages = exchange(turn(1, step("call1", "call2")), "A1")[1:4]
    assert kinds(index_of(messages)) == [("tool-call", 0, 3)]


def test_a_turn_spans_its_tool_call_groups() -> None:
    # CreateTurnSpansToolCallGroups: [User, call + result, Assistant text] is three groups, all
    # of turn 1, and one turn in all.
    index = index_of(exchange(turn(1, step("call1")), "A1"))
    assert kinds(index) == [("user", 1, 1), ("tool-call", 1, 2), ("text", 1, 1)]
    assert index.metric("turns") == 1
    assert (index.metric("groups"), index.metric("messages")) == (3, 4)


def test_consecutive_tool_steps_are_one_group_each() -> None:
    # CreateTurnSpansToolCallGroups and CreateMultipleToolResultsGroupsAllWithAssistant together:
    # a group ends where the next assistant message starts, so two steps in a turn are two
    # ToolCall groups, and a replayed history is cut into the same groups as MAF's index.
    policy = RetainedReduction(SYS, trigger=10, preserve=1)
    replay(policy, turn(1, step("c1.1"), step("c1.2", "c1.3")), turn(2))
    index = index_of(list(policy.retained()))
    assert kinds(index) == [
        ("user", 1, 1),
        ("tool-call", 1, 2),
        ("tool-call", 1, 3),
        ("text", 1, 1),
        ("user", 2, 1),
        ("text", 2, 1),
    ]
    assert index.metric("turns") == 2


def test_a_tool_message_without_its_call_is_a_text_group() -> None:
    # CreateWithStandaloneToolMessageGroupsAsAssistantText: a Tool message not preceded by an
    # assistant tool-call message falls to the default kind, AssistantText. (The replay refuses
    # such a history, `group_problems`; the index still reads it as MAF's does.)
    orphan = [Message("tool", "Orphaned tool result", tool_call_id="call1")]
    assert kinds(index_of(orphan)) == [("text", 0, 1)]
    assert group_problems(orphan) == ["result call1 (turn None) without its call before it"]
