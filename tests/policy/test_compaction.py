"""The sliding-window strategy, on its own: MAF's own cases, then its invariants."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.base.messages import Message
from harness.policy.compaction import count_turns, sliding_window, split_turns
from policies.compaction import RequestCompaction, RetainedReduction
from tests.conftest import user

S = Message("system", "S")


def conversation(turns: int, current: bool = False) -> list[Message]:
    messages = [S]
    for n in range(1, turns + 1):
        messages += [Message("user", f"u{n}"), Message("assistant", f"a{n}")]
    return messages + ([Message("user", "now")] if current else [])


def said(*spec: str) -> list[Message]:
    """`"S"` is a system message, `"Q…"` a user message, anything else an assistant message."""
    role = {"S": "system", "Q": "user"}
    return [Message(role.get(text[0], "assistant"), text) for text in spec]  # type: ignore[arg-type]


def test_a_turn_is_a_user_message_and_what_follows_it() -> None:
    messages = [
        S,
        Message("user", "u1"),
        Message("assistant", "a1"),
        Message("assistant", "a1b"),
        Message("user", "u2"),
    ]
    head, turns = split_turns(messages)
    assert head == [S]
    assert [[m.content for m in t] for t in turns] == [["u1", "a1", "a1b"], ["u2"]]


# Vectors from Microsoft Agent Framework's .NET tests
# (dotnet/tests/Microsoft.Agents.AI.UnitTests/Compaction/SlidingWindowCompactionStrategyTests.cs,
# the same from dotnet-1.0.0-rc4, commit d3f0c33, through dotnet-1.17.0), with
# `CompactionTriggers.TurnsExceed(trigger)`, the default target (the trigger's inverse) and MAF's
# default floor, `minimumPreservedTurns: 1`: one turn, as here. MAF's custom-target test
# (CompactAsyncCustomTargetStopsExcludingEarlyAsync) has no counterpart: the target is fixed here;
# nor have its cases with a floor of 0 (the harness's `preserve` is at least 1).
MAF_VECTORS = [
    # CompactAsyncBelowMaxTurnsReturnsFalseAsync: 2 turns do not exceed 3.
    (("Q1", "A1", "Q2", "A2"), 3, 1, ("Q1", "A1", "Q2", "A2")),
    # CompactAsyncExceedsMaxTurnsExcludesOldestTurnsAsync: 3 turns exceed 2, turn 1 goes.
    (("Q1", "A1", "Q2", "A2", "Q3", "A3"), 2, 1, ("Q2", "A2", "Q3", "A3")),
    # CompactAsyncPreservesSystemMessagesAsync: the system message stays, turn 1 goes.
    (("S", "Q1", "A1", "Q2"), 1, 1, ("S", "Q2")),
    # CompactAsyncPreservesToolCallGroupsInKeptTurnsAsync: the kept turn keeps all its replies
    # (MAF's tool call and tool result are two assistant-side messages here).
    (("Q1", "A1", "Q2", "call", "result"), 1, 1, ("Q2", "call", "result")),
    # CompactAsyncTriggerNotMetReturnsFalseAsync: 3 turns do not exceed 99.
    (("Q1", "Q2", "Q3"), 99, 1, ("Q1", "Q2", "Q3")),
    # CompactAsyncIncludedMessagesContainOnlyKeptTurnsAsync: System, Q2, A2 remain.
    (("S", "Q1", "A1", "Q2", "A2"), 1, 1, ("S", "Q2", "A2")),
    # CompactAsyncMinimumPreservedStopsCompactionAsync: MAF's floor of 2 turns keeps Q2, A2, Q3, A3
    # although its target never says stop (the last case). With the default target and a floor of
    # 1 turn the target stops the removal at one turn; with a floor of 2 turns the floor, not the
    # trigger, decides what remains.
    (("Q1", "A1", "Q2", "A2", "Q3", "A3"), 1, 1, ("Q3", "A3")),
    (("Q1", "A1", "Q2", "A2", "Q3", "A3"), 1, 2, ("Q2", "A2", "Q3", "A3")),
]


@pytest.mark.parametrize("messages, trigger, preserve, expected", MAF_VECTORS)
def test_maf_vectors(messages: tuple[str, ...], trigger: int, preserve: int, expected: tuple[str, ...]) -> None:
    kept = sliding_window(said(*messages), trigger, preserve)
    assert tuple(m.content for m in kept) == expected


def test_nothing_is_dropped_until_the_trigger_is_exceeded() -> None:
    assert sliding_window(conversation(3), trigger=3, preserve=3) == conversation(3)


def test_beyond_the_trigger_the_oldest_turns_go_until_the_trigger_is_met() -> None:
    kept = sliding_window(conversation(5), trigger=3, preserve=3)
    assert [m.content for m in kept] == ["S", "u3", "a3", "u4", "a4", "u5", "a5"]


def test_preserve_is_a_floor_not_a_target() -> None:
    """trigger=2, preserve=1 keeps 2 turns (it used to cut to exactly 1)."""
    kept = sliding_window(conversation(4), trigger=2, preserve=1)
    assert [m.content for m in kept] == ["S", "u3", "a3", "u4", "a4"]


def test_a_floor_above_the_turn_count_keeps_every_turn() -> None:
    """preserve > turns > trigger used to slice with a negative index and drop recent turns."""
    assert sliding_window(conversation(3), trigger=1, preserve=5) == conversation(3)


def test_the_current_unanswered_message_counts_as_a_turn() -> None:
    kept = sliding_window(conversation(3, current=True), trigger=3, preserve=3)
    assert [m.content for m in kept] == ["S", "u2", "a2", "u3", "a3", "now"]


def test_system_messages_inside_dropped_turns_survive() -> None:
    messages = conversation(2) + [Message("system", "late rule")] + conversation(3)[1:]
    kept = sliding_window(messages, trigger=1, preserve=1)
    assert [m.content for m in kept] == ["S", "late rule", "u3", "a3"]


def test_messages_before_the_first_user_message_are_never_dropped() -> None:
    messages = [S, Message("assistant", "greeting")] + conversation(4)[1:]
    assert [m.content for m in sliding_window(messages, 3, 2)][:2] == ["S", "greeting"]


def test_count_turns_counts_user_messages() -> None:
    assert count_turns(conversation(4, current=True)) == 5


@pytest.mark.parametrize("trigger, preserve", [(0, 3), (3, 0)])
def test_parameters_must_be_positive(trigger: int, preserve: int) -> None:
    with pytest.raises(ValueError):
        sliding_window(conversation(1), trigger, preserve)


# Invariants, over generated conversations: any mix of roles, any parameters.
ROLES = st.sampled_from(["system", "user", "assistant"])
MESSAGES = st.lists(ROLES, max_size=30).map(lambda roles: [Message(r, f"{r}{i}") for i, r in enumerate(roles)])
PARAM = st.integers(min_value=1, max_value=8)


@given(MESSAGES, PARAM, PARAM)
def test_system_messages_are_kept(messages: list[Message], trigger: int, preserve: int) -> None:
    kept = sliding_window(messages, trigger, preserve)
    assert [m for m in kept if m.role == "system"] == [m for m in messages if m.role == "system"]


@given(MESSAGES, PARAM, PARAM)
def test_whole_turns_are_kept_as_a_suffix(messages: list[Message], trigger: int, preserve: int) -> None:
    _, turns = split_turns(messages)
    _, kept = split_turns(sliding_window(messages, trigger, preserve))
    assert kept == turns[len(turns) - len(kept) :]


@given(MESSAGES, PARAM, PARAM)
def test_the_window_keeps_min_of_turns_and_max_of_trigger_and_preserve(
    messages: list[Message], trigger: int, preserve: int
) -> None:
    turns = count_turns(messages)
    kept = count_turns(sliding_window(messages, trigger, preserve))
    assert kept >= min(turns, max(trigger, preserve))
    assert kept == (turns if turns <= trigger else min(turns, max(trigger, preserve)))


@given(MESSAGES, PARAM, PARAM)
def test_the_window_is_idempotent(messages: list[Message], trigger: int, preserve: int) -> None:
    once = sliding_window(messages, trigger, preserve)
    assert sliding_window(once, trigger, preserve) == once


@given(MESSAGES, PARAM, PARAM)
def test_the_head_before_the_first_user_message_is_never_dropped(
    messages: list[Message], trigger: int, preserve: int
) -> None:
    head, _ = split_turns(messages)
    assert sliding_window(messages, trigger, preserve)[: len(head)] == head


# Through the two policies, turn by turn: the number of turns in each request view.
def view_turns(policy: RequestCompaction | RetainedReduction, turns: int) -> list[int]:
    counts = []
    for n in range(1, turns + 1):
        turn = user(n, f"u{n}")
        counts.append(count_turns(policy.view(turn)))
        policy.after_answer(turn, f"a{n}", None)
    return counts


@pytest.mark.parametrize(
    "policy, expected",
    [
        # Used to be 1,2,2,1,5,5,5: a floor above the turn count dropped recent turns.
        (RequestCompaction(S, trigger=1, preserve=5), [1, 2, 3, 4, 5, 5, 5]),
        # Used to stay at 2 for good; now the retained 5 turns plus the current one.
        (RetainedReduction(S, trigger=1, preserve=5), [1, 2, 3, 4, 5, 6, 6]),
        # Used to be 1 from turn 3 on: the trigger, not the floor, sets the size.
        (RequestCompaction(S, trigger=2, preserve=1), [1, 2, 2, 2, 2, 2, 2]),
        (RetainedReduction(S, trigger=2, preserve=1), [1, 2, 3, 3, 3, 3, 3]),
        # The defaults agree with the old behaviour.
        (RequestCompaction(S), [1, 2, 3, 3, 3, 3, 3]),
        (RetainedReduction(S), [1, 2, 3, 4, 4, 4, 4]),
    ],
    ids=["request:1/5", "retained:1/5", "request:2/1", "retained:2/1", "request:3/3", "retained:3/3"],
)
def test_turns_in_the_view_through_the_policies(
    policy: RequestCompaction | RetainedReduction, expected: list[int]
) -> None:
    assert view_turns(policy, 7) == expected
