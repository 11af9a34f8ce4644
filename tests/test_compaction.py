"""The sliding-window strategy, on its own."""

from __future__ import annotations

import pytest

from harness.compaction import count_turns, sliding_window, split_turns
from harness.messages import Message

S = Message("system", "S")


def conversation(turns: int, current: bool = False) -> list[Message]:
    messages = [S]
    for n in range(1, turns + 1):
        messages += [Message("user", f"u{n}"), Message("assistant", f"a{n}")]
    return messages + ([Message("user", "now")] if current else [])


def test_a_turn_is_a_user_message_and_what_follows_it() -> None:
    messages = [S, Message("user", "u1"), Message("assistant", "a1"), Message("assistant", "a1b"), Message("user", "u2")]
    head, turns = split_turns(messages)
    assert head == [S]
    assert [[m.content for m in t] for t in turns] == [["u1", "a1", "a1b"], ["u2"]]


def test_nothing_is_dropped_until_the_trigger_is_exceeded() -> None:
    assert sliding_window(conversation(3), trigger=3, preserve=3) == conversation(3)


def test_beyond_the_trigger_only_the_last_preserved_turns_remain() -> None:
    kept = sliding_window(conversation(5), trigger=3, preserve=3)
    assert [m.content for m in kept] == ["S", "u3", "a3", "u4", "a4", "u5", "a5"]


def test_the_current_unanswered_message_counts_as_a_turn() -> None:
    kept = sliding_window(conversation(3, current=True), trigger=3, preserve=3)
    assert [m.content for m in kept] == ["S", "u2", "a2", "u3", "a3", "now"]


def test_system_messages_inside_dropped_turns_survive() -> None:
    messages = conversation(2) + [Message("system", "late rule")] + conversation(3)[1:]
    kept = sliding_window(messages, trigger=3, preserve=1)
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
