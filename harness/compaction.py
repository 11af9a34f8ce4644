"""The sliding-window compaction strategy, as a pure function over a message list.

It mirrors Microsoft Agent Framework's `SlidingWindowCompactionStrategy`: a **turn** is one
user message plus every following non-user, non-system message; every user message starts a
turn (the current, unanswered one included); messages before the first user message and all
system messages are never dropped. When the number of turns exceeds the trigger, only the
most recent `preserve` turns are kept.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.messages import Message


def split_turns(messages: Sequence[Message]) -> tuple[list[Message], list[list[Message]]]:
    """Split into the messages before the first user message, and the turns after it."""
    head: list[Message] = []
    turns: list[list[Message]] = []
    for message in messages:
        if message.role == "user":
            turns.append([message])
        elif turns:
            turns[-1].append(message)
        else:
            head.append(message)
    return head, turns


def count_turns(messages: Sequence[Message]) -> int:
    """Number of turns, i.e. of user messages."""
    return sum(1 for m in messages if m.role == "user")


def sliding_window(messages: Sequence[Message], trigger: int = 3, preserve: int = 3) -> list[Message]:
    """Keep the last `preserve` turns once there are more than `trigger` turns.

    System messages inside dropped turns survive in place: system instructions are never dropped.
    """
    if trigger < 1 or preserve < 1:
        raise ValueError("trigger and preserve must be at least 1")
    head, turns = split_turns(messages)
    if len(turns) <= trigger:
        return list(messages)
    dropped, kept = turns[: len(turns) - preserve], turns[len(turns) - preserve :]
    survivors = [m for turn in dropped for m in turn if m.role == "system"]
    return head + survivors + [m for turn in kept for m in turn]
