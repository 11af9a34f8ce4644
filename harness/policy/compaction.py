"""The sliding-window compaction strategy, as a pure function over a message list.

It follows Microsoft Agent Framework's `SlidingWindowCompactionStrategy` with its default
target: a **turn** is one user message plus every following non-user, non-system message; every
user message starts a turn (the current, unanswered one included). Compaction runs only when
the turns *exceed* the trigger; it then removes the oldest whole turns one at a time until
they no longer exceed the trigger, and never goes below the minimum preserved turns. So
`min(turns, max(trigger, preserve))` turns are kept. System messages and the messages before
the first user message are never dropped, as in MAF. Where the policies built on it differ from
MAF is said in docs/policies.md.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import islice

from harness.base.messages import Message
from harness.base.sequences import Joined


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
    if isinstance(messages, Joined):
        return messages.role_count("user")
    return sum(1 for m in messages if m.role == "user")


def first_turn(messages: Sequence[Message]) -> int:
    """Position of the first user message (where the turns start); the length when there is none."""
    return next((i for i, m in enumerate(messages) if m.role == "user"), len(messages))


def turn_starts_from_end(messages: Sequence[Message]) -> Iterator[int]:
    """Where each turn starts (its user message), the latest first, read lazily from the end:
    a caller that stops after a few turns never reads the rest of a long history."""
    for position, message in zip(range(len(messages) - 1, -1, -1), reversed(messages), strict=True):
        if message.role == "user":
            yield position


def last_turn_starts(messages: Sequence[Message], count: int) -> list[int]:
    """Where the last `count` turns start, the latest first; fewer when there are fewer turns."""
    return list(islice(turn_starts_from_end(messages), max(count, 0)))


def systems_between(messages: Sequence[Message], start: int, stop: int) -> list[Message]:
    """The system messages at positions start..stop-1, in order."""
    if isinstance(messages, Joined):
        return [messages[p] for p in messages.positions("system", start, stop)]
    return [m for m in messages[start:stop] if m.role == "system"]


def sliding_window(messages: Sequence[Message], trigger: int = 3, preserve: int = 3) -> list[Message]:
    """Drop the oldest whole turns once there are more than `trigger`, keeping at least `preserve`.

    System messages inside dropped turns survive in place: system instructions are never dropped.
    """
    if trigger < 1 or preserve < 1:
        raise ValueError("trigger and preserve must be at least 1")
    keep = max(trigger, preserve)
    starts = last_turn_starts(messages, keep + 1)
    if len(starts) <= keep:  # at most max(trigger, preserve) turns: the window keeps them all
        return list(messages)
    # More turns than that, so more than the trigger: the last `keep` turns stay. Found from
    # the end, so a long history costs what the window keeps, not what it drops.
    first, kept_from = first_turn(messages), starts[keep - 1]
    head = list(messages[:first])
    return head + systems_between(messages, first, kept_from) + list(messages[kept_from:])
