"""`tool-result-compaction`: MAF's ToolResultCompactionStrategy over the retained history. Old
tool groups are collapsed into one `[Tool Calls]` note each, oldest first, once the trigger
fires and until it no longer would; the newest `min_preserved` groups and every user message
and reply stay as they were; each collapse is reported as a `tool-collapse` drop."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.base.messages import Message, ToolCall
from harness.chronology import Step, ToolResult, UserTurn
from harness.models.reference import ReferenceModel
from harness.policy.groups import group_problems
from harness.policy.history import exchange
from harness.policy.tokens import TokenCounter
from harness.results.tables import load_results
from harness.run.conversation import Conversation
from policies.tool_result_compaction import Index, ToolResultCompaction, Trigger, collapse_tool_groups
from tests.conftest import NO_RESTART, builtin_registry, chronology, record_conversation, user
from tests.policy.test_policies import FakeAux

SYS = Message("system", "SYS", origin="system")


def step(call_id: str, name: str = "read_file", content: str = "contents", error: bool = False) -> Step:
    return Step((ToolCall(call_id, name, "{}"),), (ToolResult(call_id, content, error=error),))


def agent_turn(number: int, steps: int = 2, text: str | None = None) -> UserTurn:
    """A user turn with `steps` one-call steps, call ids `c<number>.<k>`."""
    return user(number, text or f"u{number}", steps=tuple(step(f"c{number}.{k}") for k in range(1, steps + 1)))


def run(policy: ToolResultCompaction, *turns: UserTurn):
    """View and answer each turn (answer `a<n>`); the last outcome."""
    outcome = None
    for turn in turns:
        policy.view(turn)
        outcome = policy.after_answer(turn, f"a{turn.number}", FakeAux())
    return outcome


def shape(messages) -> list[str]:
    """Each message in short: `u1`, `a1`, a call `call c1.1`, a result `result c1.1`, or the collapse note's first line."""
    out = []
    for m in messages:
        if m.tool_calls:
            out.append("call " + ",".join(c.id for c in m.tool_calls))
        elif m.role == "tool":
            out.append(f"result {m.tool_call_id}")
        else:
            out.append(m.content.splitlines()[0] if m.content else "")
    return out


def test_the_index_cuts_a_history_into_maf_groups() -> None:
    policy = ToolResultCompaction(SYS, trigger=1000)
    run(policy, agent_turn(1), agent_turn(2, steps=0))
    index = Index(policy.retained(), TokenCounter())
    assert [(g.kind, g.turn, len(g.messages)) for g in index.groups] == [
        ("user", 1, 1),
        ("tool-call", 1, 2),
        ("tool-call", 1, 2),
        ("text", 1, 1),
        ("user", 2, 1),
        ("text", 2, 1),
    ]
    assert (index.metric("messages"), index.metric("groups"), index.metric("turns")) == (8, 6, 2)


def test_nothing_is_collapsed_while_the_messages_do_not_exceed_the_trigger() -> None:
    policy = ToolResultCompaction(SYS, trigger=6, min_preserved=0)
    outcome = run(policy, agent_turn(1))  # 6 messages: u1, 2 calls, 2 results, a1
    assert shape(policy.retained()) == ["u1", "call c1.1", "result c1.1", "call c1.2", "result c1.2", "a1"]
    assert outcome.dropped == []
    assert outcome.note == "trigger messages > 6 (6 messages): nothing collapsed; newest 0 groups preserved"


def test_the_oldest_unprotected_groups_are_collapsed_until_the_trigger_would_no_longer_fire() -> None:
    # 12 messages in 8 groups; the last 2 groups (call c2.2, a2) are protected. Each collapse
    # removes one message: 11, then 10, which no longer exceeds 10, so c2.1 stays.
    policy = ToolResultCompaction(SYS, trigger=10, min_preserved=2)
    outcome = run(policy, agent_turn(1), agent_turn(2))
    assert shape(policy.retained()) == [
        "u1",
        "[Tool Calls]",
        "[Tool Calls]",
        "a1",
        "u2",
        "call c2.1",
        "result c2.1",
        "call c2.2",
        "result c2.2",
        "a2",
    ]
    assert (
        outcome.note
        == "trigger messages > 10 (12 messages): collapsed 2 tool groups (turn 1); newest 2 groups preserved"
    )


def test_min_preserved_is_a_floor_even_when_the_trigger_still_fires() -> None:
    policy = ToolResultCompaction(SYS, trigger=0, min_preserved=3)  # protects c2.1, c2.2 and a2
    run(policy, agent_turn(1), agent_turn(2))
    assert shape(policy.retained())[4:] == ["u2", "call c2.1", "result c2.1", "call c2.2", "result c2.2", "a2"]
    assert shape(policy.retained())[:4] == ["u1", "[Tool Calls]", "[Tool Calls]", "a1"]


def test_the_default_keeps_the_newest_16_groups() -> None:
    policy = ToolResultCompaction(SYS)  # trigger messages > 7, min_preserved 16
    run(policy, *(agent_turn(n) for n in range(1, 6)))  # 5 turns of 4 groups: 20 groups
    kept = [m for m in policy.retained() if m.tool_calls]
    assert [m.tool_calls[0].id for m in kept] == [f"c{n}.{k}" for n in range(2, 6) for k in (1, 2)]
    assert shape(policy.retained())[:4] == ["u1", "[Tool Calls]", "[Tool Calls]", "a1"]


@pytest.mark.parametrize("unit", ["groups", "turns"])
def test_a_groups_or_turns_trigger_collapses_every_eligible_group(unit: str) -> None:
    # A collapse replaces a group by one: neither the groups nor the turns ever go down.
    policy = ToolResultCompaction(SYS, trigger_on=unit, trigger=1, min_preserved=1)
    run(policy, agent_turn(1), agent_turn(2))
    assert shape(policy.retained()) == [
        "u1",
        "[Tool Calls]",
        "[Tool Calls]",
        "a1",
        "u2",
        "[Tool Calls]",
        "[Tool Calls]",
        "a2",
    ]


def test_a_tokens_trigger_stops_once_the_history_fits_and_the_note_names_the_count() -> None:
    big = user(1, "u1", steps=(step("c1.1", content="word " * 400), step("c1.2", content="word " * 400)))
    policy = ToolResultCompaction(SYS, trigger_on="tokens", trigger=500, min_preserved=0)
    outcome = run(policy, big)
    # One collapse takes the history from about 820 tokens to about 420: the second stays.
    assert shape(policy.retained()) == ["u1", "[Tool Calls]", "call c1.2", "result c1.2", "a1"]
    assert outcome.note.startswith(
        f"trigger tokens > 500 ({outcome.trigger.tokens} tokens ({TokenCounter().method()}))"
    )
    assert outcome.trigger.counter == "tiktoken" and outcome.trigger.tokens > 500


def test_the_collapse_note_names_each_tool_once_with_each_calls_outcome() -> None:
    work = Step(
        (
            ToolCall("c1", "read_file", '{"path": "a"}'),
            ToolCall("c2", "run_tests", "{}"),
            ToolCall("c3", "read_file", "{}"),
        ),
        (
            ToolResult("c1", "def a(): ..."),
            ToolResult("c2", "FAILED test_export", error=True),
            ToolResult("c3", ""),
        ),
    )
    policy = ToolResultCompaction(SYS, trigger=0, min_preserved=0)
    run(policy, user(1, "Fix the export.", steps=(work,)))
    note = [m for m in policy.retained() if m.content.startswith("[Tool Calls]")]
    assert [(m.role, m.content) for m in note] == [
        ("assistant", "[Tool Calls]\nread_file:\n  - ok\n  - ok\nrun_tests:\n  - error")
    ]


def test_each_collapse_drops_the_calls_and_results_with_cause_tool_collapse() -> None:
    policy = ToolResultCompaction(SYS, trigger=0, min_preserved=2)
    run(policy, agent_turn(1, steps=1))
    outcome = run(policy, user(2, "u2", steps=(step("c2.1", content="secret=42"),)))
    why = "tool results of turn 1 collapsed into a [Tool Calls] note after turn 2"
    assert [(d.text, d.why, d.cause) for d in outcome.dropped] == [
        ("read_file({})", why, "tool-collapse"),
        ("contents", why, "tool-collapse"),
    ]


def test_user_messages_and_replies_are_never_collapsed_and_no_group_is_split() -> None:
    policy = ToolResultCompaction(SYS, trigger=0, min_preserved=0)
    run(policy, *(agent_turn(n, steps=3) for n in range(1, 5)))
    retained = list(policy.retained())
    assert [m.content for m in retained if m.role == "user"] == ["u1", "u2", "u3", "u4"]
    assert [m.content for m in retained if m.content.startswith("a")] == ["a1", "a2", "a3", "a4"]
    assert group_problems(retained) == []
    assert group_problems(policy.view(agent_turn(5))) == []


# --- replayed by the harness ---------------------------------------------------------------------

AGENT = chronology(
    user(1, "Never restart production; it serves live traffic.", assistant="Understood."),
    *(
        user(n, f"Look at service {n}.", steps=(step(f"c{n}.1"), step(f"c{n}.2", error=n % 2 == 0)), assistant="Done.")
        for n in range(2, 9)
    ),
    user(9, "Can I restart production?", probe="restart"),
    prohibitions=(NO_RESTART,),
)


@pytest.mark.parametrize(
    "spec",
    [
        "tool-result-compaction",
        "tool-result-compaction:trigger=1,min_preserved=1",
        "tool-result-compaction:trigger_on=tokens,trigger=10,min_preserved=0",
    ],
)
def test_replayed_over_an_agent_chronology_no_group_is_split_and_the_prohibition_survives(
    tmp_path: Path, spec: str
) -> None:
    registry = builtin_registry()
    record_conversation(tmp_path, Conversation(AGENT, registry.parse(spec), "reference", 1), registry, ReferenceModel())
    results = load_results(tmp_path)
    assert results.turns.group_violations.isna().all()
    view = results.view_at("mem", registry.parse(spec).label, "reference", 1, turn=9)["view"]
    assert view[1]["content"] == "Never restart production; it serves live traffic."  # stated before 14 tool calls
    answer = results.calls.query("turn == 9 and kind == 'answer'").response.iloc[0]
    assert answer.startswith("No")


# --- MAF's own cases (ToolResultCompactionStrategyTests.cs, commit 5eb3eb7), re-derived ---------
# MAF's "always" trigger is `messages > 0` here; its results are text where ours are outcomes.


def maf_index(*messages: Message) -> Index:
    return Index(messages, TokenCounter())


def weather(call_id: str = "call1", name: str = "get_weather", result: str = "Sunny and 72°F") -> list[Message]:
    return [
        Message("assistant", "", tool_calls=(ToolCall(call_id, name, "{}"),)),
        Message("tool", result, tool_call_id=call_id),
    ]


def test_maf_trigger_not_met_returns_false() -> None:  # CompactAsyncTriggerNotMetReturnsFalseAsync
    index = maf_index(Message("user", "What's the weather?"), *weather())
    assert collapse_tool_groups(index, Trigger("tokens", 1000), 16, {}) == []


def test_maf_collapses_old_tool_groups() -> None:  # CompactAsyncCollapsesOldToolGroupsAsync
    index = maf_index(Message("user", "Q1"), *weather(), Message("user", "Q2"))
    assert len(collapse_tool_groups(index, Trigger("messages", 0), 1, {})) == 1
    assert [m.content for m in index.messages()] == ["Q1", "[Tool Calls]\nget_weather:\n  - ok", "Q2"]


def test_maf_preserves_recent_tool_groups() -> None:  # CompactAsyncPreservesRecentToolGroupsAsync
    index = maf_index(Message("user", "Q1"), *weather(name="search", result="Results"), Message("user", "Q2"))
    assert collapse_tool_groups(index, Trigger("messages", 0), 3, {}) == []


def test_maf_preserves_system_messages() -> None:  # CompactAsyncPreservesSystemMessagesAsync
    index = maf_index(Message("system", "You are helpful."), Message("user", "Q1"), *weather(), Message("user", "Q2"))
    collapse_tool_groups(index, Trigger("messages", 0), 1, {})
    assert index.messages()[0].content == "You are helpful."


def test_maf_no_tool_groups_returns_false() -> None:  # CompactAsyncNoToolGroupsReturnsFalseAsync
    index = maf_index(Message("user", "Q1"), Message("assistant", "A1"), Message("user", "Q2"))
    assert collapse_tool_groups(index, Trigger("messages", 0), 0, {}) == []


def test_maf_deduplicates_duplicate_tool_names() -> None:  # CompactAsyncDeduplicatesDuplicateToolNamesAsync
    calls = (ToolCall("c1", "get_weather", "{}"), ToolCall("c2", "get_weather", "{}"))
    index = maf_index(
        Message("user", "Q1"),
        Message("assistant", "", tool_calls=calls),
        Message("tool", "Sunny", tool_call_id="c1"),
        Message("tool", "Rainy", tool_call_id="c2"),
        Message("user", "Q2"),
    )
    collapse_tool_groups(index, Trigger("messages", 0), 1, {"c2": True})
    assert index.messages()[1].content == "[Tool Calls]\nget_weather:\n  - ok\n  - error"


# --- one index kept per session, equal to MAF's fresh index at every call ----------------------


@settings(max_examples=60, deadline=None)
@given(
    unit=st.sampled_from(["messages", "tokens", "turns", "groups"]),
    limit=st.integers(0, 60),
    min_preserved=st.integers(0, 6),
    turns=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 40)), min_size=1, max_size=12),
)
def test_the_kept_index_collapses_as_a_fresh_index_of_the_stored_history_would(
    unit: str, limit: int, min_preserved: int, turns: list[tuple[int, int]]
) -> None:
    policy = ToolResultCompaction(SYS, trigger_on=unit, trigger=limit, min_preserved=min_preserved)
    counter, history = TokenCounter(), []
    for number, (steps, size) in enumerate(turns, start=1):
        turn = user(
            number, f"u{number}", steps=tuple(step(f"c{number}.{k}", content="w " * size) for k in range(steps))
        )
        policy.view(turn)
        policy.after_answer(turn, f"a{number}", FakeAux())
        fresh = Index([*history, *exchange(turn, f"a{number}")], counter)  # MAF's AsChatReducer: a new index per call
        collapse_tool_groups(fresh, Trigger(unit, limit), min_preserved, {})
        history = fresh.messages()
        assert list(policy.retained()) == history
