"""The sliding-window compaction strategy, as a pure function over a message list.

It follows Microsoft Agent Framework's `SlidingWindowCompactionStrategy` with its default
target: a **turn** is one user message plus every following non-user, non-system message; every
user message starts a turn (the current, unanswered one included). Compaction runs only when
the turns *exceed* the trigger; it then removes the oldest whole turns one at a time until
they no longer exceed the trigger, and never goes below the minimum preserved turns. So
`min(turns, max(trigger, preserve))` turns are kept. System messages and the messages before
the first user message are never dropped. Where this differs from MAF (the floor counts turns,
not message groups; a leading non-system message is kept) is said in the README.
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


def turns_kept(turns: int, trigger: int, preserve: int) -> int:
    """How many of `turns` the window keeps: all up to the trigger, else `max(trigger, preserve)`."""
    if turns <= trigger:
        return turns
    return min(turns, max(trigger, preserve))


def sliding_window(messages: Sequence[Message], trigger: int = 3, preserve: int = 3) -> list[Message]:
    """Drop the oldest whole turns once there are more than `trigger`, keeping at least `preserve`.

    System messages inside dropped turns survive in place: system instructions are never dropped.
    """
    if trigger < 1 or preserve < 1:
        raise ValueError("trigger and preserve must be at least 1")
    head, turns = split_turns(messages)
    cut = len(turns) - turns_kept(len(turns), trigger, preserve)
    if cut == 0:
        return list(messages)
    survivors = [m for turn in turns[:cut] for m in turn if m.role == "system"]
    return head + survivors + [m for turn in turns[cut:] for m in turn]
