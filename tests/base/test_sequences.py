"""Joined sequences over append-only logs: the same answers as plain lists, without copying."""

from __future__ import annotations

import random

import pytest

from harness.base.messages import Message
from harness.base.sequences import Joined, Log, common_prefix, common_suffix
from harness.policy.history import SessionHistories


def naive_prefix(a: list[Message], b: list[Message]) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def message(rng: random.Random) -> Message:
    return Message(rng.choice(["user", "assistant", "system"]), rng.choice("abc"), turn=rng.randint(1, 3))


def joined_of(rng: random.Random, log: Log) -> Joined:
    """A view built as policies build them: small lists around a prefix of a shared log."""
    before = [message(rng) for _ in range(rng.randint(0, 2))]
    after = [message(rng) for _ in range(rng.randint(0, 2))]
    return before + log.prefix() + after  # type: ignore[return-value]  # Joined.__radd__


@pytest.mark.parametrize("seed", range(30))
def test_prefix_suffix_and_reading_agree_with_plain_lists(seed: int) -> None:
    rng = random.Random(seed)
    log = Log(message(rng) for _ in range(rng.randint(0, 6)))
    a = joined_of(rng, log)
    log.extend(message(rng) for _ in range(rng.randint(0, 4)))
    b = joined_of(rng, log)
    plain_a, plain_b = list(a), list(b)
    head = common_prefix(a, b)
    assert head == naive_prefix(plain_a, plain_b)
    limit = min(len(a), len(b)) - head
    assert common_suffix(a, b, limit) == min(naive_prefix(plain_a[::-1], plain_b[::-1]), limit)
    assert a == plain_a and b == plain_b and len(b) == len(plain_b)
    assert list(reversed(b)) == plain_b[::-1]
    start, stop = sorted(rng.randint(0, len(b)) for _ in range(2))
    assert b[start:stop] == plain_b[start:stop]
    assert b.positions("system", start, stop) == [i for i in range(start, stop) if plain_b[i].role == "system"]
    assert b.role_count("user") == sum(m.role == "user" for m in plain_b)
    if plain_b:
        assert b[-1] == plain_b[-1] and b[0] == plain_b[0]


def test_a_joined_view_does_not_change_when_its_log_grows() -> None:
    log = Log([Message("user", "u1")])
    view = log.prefix() + [Message("user", "now", origin="current")]
    log.append(Message("assistant", "a1"))
    assert [m.content for m in view] == ["u1", "now"]


def test_a_log_is_only_appended_to() -> None:
    log = Log([Message("user", "u1")])
    for change in (lambda: log.pop(), lambda: log.clear(), lambda: log.insert(0, log[0])):
        with pytest.raises(TypeError, match="only appended to"):
            change()


def test_a_history_that_grows_is_extended_in_place_and_drops_nothing() -> None:
    histories = SessionHistories()
    first = [Message("user", "u1"), Message("assistant", "a1")]
    assert histories.set("main", histories.of("main") + first) == []
    log = histories.of("main").parts[0][0]
    assert histories.set("main", histories.of("main") + [Message("user", "u2")]) == []
    assert histories.of("main").parts[0][0] is log and [m.content for m in histories.of("main")] == ["u1", "a1", "u2"]
    kept = list(histories.of("main"))[1:]  # a reduction: a new log, and the first message dropped
    assert histories.set("main", kept) == [first[0]]
    assert histories.of("main").parts[0][0] is not log
