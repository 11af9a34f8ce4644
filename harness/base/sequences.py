"""Message lists that share storage, so a replay step costs the same at turn 10,000 as at turn 10.

A full history sends every earlier message at every turn. Built as a fresh Python list, each
view copies the whole history, and comparing it with the previous view (to store it as a
reference, to count its tokens) reads it all again: work proportional to the history at every
turn, quadratic over a conversation. Here a history is a `Log`, a list that is only ever
appended to, and a view is a `Joined`: parts `(items, n)` meaning `items[:n]`. Appending to a
log leaves every earlier `Joined` over it unchanged, so two views over the same log share
their prefix by construction, and `common_prefix` / `common_suffix` find it without reading it.

`Joined` is a read-only `Sequence[Message]` that compares equal to a list of the same
messages; policies that build plain lists keep working, and the functions here accept both.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Iterator, Sequence
from itertools import chain, islice
from typing import Any, overload

from harness.base.messages import Message

Part = tuple[Sequence[Message], int]  # (items, n): the first n items; `items` is a Log or a tuple

# Indexed beside the roles: the assistant messages that carry tool calls (`positions(TOOL_CALLS)`).
TOOL_CALLS = "tool_calls"


def _is(message: Message, kind: str) -> bool:
    """Whether `message` is of `kind`: a role, or `TOOL_CALLS`."""
    return bool(message.tool_calls) if kind == TOOL_CALLS else message.role == kind


class Log(list[Message]):
    """A message list that is only ever appended to (`append`, `extend`), never changed in
    place, and that indexes the positions of its user, system and tool messages, and of the
    assistant messages carrying tool calls, as they arrive.

    The in-place mutators other than appending raise, so a `Joined` over a log can trust that
    its first `n` items never change.
    """

    def __init__(self, messages: Iterable[Message] = ()) -> None:
        super().__init__()
        # ascending, by role (and TOOL_CALLS)
        self.positions: dict[str, list[int]] = {"user": [], "system": [], "tool": [], TOOL_CALLS: []}
        self.extend(messages)

    def append(self, message: Message) -> None:
        found = self.positions.get(message.role)
        if found is not None:
            found.append(len(self))
        if message.tool_calls:
            self.positions[TOOL_CALLS].append(len(self))
        super().append(message)

    def extend(self, messages: Iterable[Message]) -> None:
        for message in messages:
            self.append(message)

    def _refuse(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("a Log is only appended to; build a new one to change it")

    __setitem__ = __delitem__ = insert = pop = remove = clear = sort = reverse = __iadd__ = _refuse  # type: ignore[assignment]

    def prefix(self) -> Joined:
        """Everything the log holds now, as a `Joined` that later appends leave unchanged."""
        return Joined([(self, len(self))])


def _parts(messages: Sequence[Message]) -> list[Part]:
    if isinstance(messages, Joined):
        return list(messages.parts)
    return [(tuple(messages), len(messages))]


class Joined(Sequence[Message]):
    """The concatenation of parts `items[:n]`; read-only, and equal to a list of the same messages."""

    __slots__ = ("parts", "_len")

    def __init__(self, parts: Iterable[Part]) -> None:
        self.parts: tuple[Part, ...] = tuple((items, n) for items, n in parts if n > 0)
        self._len = sum(n for _, n in self.parts)

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator[Message]:
        # islice, not the items themselves: a log appended to during the iteration adds nothing to it.
        return chain.from_iterable(islice(items, n) for items, n in self.parts)

    def __reversed__(self) -> Iterator[Message]:
        for items, n in reversed(self.parts):
            for i in range(n - 1, -1, -1):
                yield items[i]

    @overload
    def __getitem__(self, index: int) -> Message: ...
    @overload
    def __getitem__(self, index: slice) -> list[Message]: ...
    def __getitem__(self, index: int | slice) -> Message | list[Message]:
        if isinstance(index, slice):
            start, stop, step = index.indices(self._len)
            if step == 1:
                return self.between(start, stop)
            return list(self)[index]
        if index < 0:
            index += self._len
        if not 0 <= index < self._len:
            raise IndexError("Joined index out of range")
        for items, n in self.parts:
            if index < n:
                return items[index]
            index -= n
        raise AssertionError("unreachable")

    def between(self, start: int, stop: int) -> list[Message]:
        """The messages at positions start..stop-1, reading only the parts they lie in."""
        found: list[Message] = []
        offset = 0
        for items, n in self.parts:
            if offset >= stop:
                break
            low, high = max(start - offset, 0), min(stop - offset, n)
            if low < high:
                found.extend(items[low:high])
            offset += n
        return found

    def positions(self, role: str, start: int = 0, stop: int | None = None) -> list[int]:
        """Positions of the `role` messages within start..stop-1, ascending; a log's index
        answers for its parts without reading them."""
        stop = self._len if stop is None else stop
        found: list[int] = []
        offset = 0
        for items, n in self.parts:
            low, high = max(start - offset, 0), min(stop - offset, n)
            if low < high:
                indexed = items.positions.get(role) if isinstance(items, Log) else None
                if indexed is not None:
                    found.extend(offset + p for p in indexed[bisect_left(indexed, low) : bisect_left(indexed, high)])
                else:
                    found.extend(offset + p for p in range(low, high) if _is(items[p], role))
            offset += n
        return found

    def role_count(self, role: str) -> int:
        """How many messages have this role."""
        total = 0
        for items, n in self.parts:
            indexed = items.positions.get(role) if isinstance(items, Log) else None
            if indexed is not None:
                total += bisect_left(indexed, n)
            else:
                total += sum(1 for m in items[:n] if _is(m, role))
        return total

    def __add__(self, other: Sequence[Message]) -> Joined:
        return Joined([*self.parts, *_parts(other)])

    def __radd__(self, other: Sequence[Message]) -> Joined:
        return Joined([*_parts(other), *self.parts])

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Joined):
            return len(self) == len(other) and common_prefix(self, other) == len(self)
        if isinstance(other, (list, tuple)):
            return len(self) == len(other) and list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # equal to lists, which are unhashable

    def __repr__(self) -> str:
        return f"Joined({list(self)!r})"


def joined(*parts: Sequence[Message]) -> Joined:
    """The concatenation of message sequences, sharing the storage of any `Joined` among them."""
    return Joined([p for part in parts for p in _parts(part)])


class _Cursor:
    """A position in a message sequence, part by part (a plain list is one part), walking
    forwards or, with `reverse`, backwards from the end."""

    __slots__ = ("parts", "reverse", "index", "offset")

    def __init__(self, parts: list[Part], reverse: bool) -> None:
        self.parts, self.reverse = (parts[::-1] if reverse else parts), reverse
        self.index, self.offset = 0, 0

    def chunk(self) -> tuple[Sequence[Message], int, int]:
        """(items, position, remaining) of the part under the cursor: the next message is
        items[position], or items[position - 1] going backwards."""
        items, n = self.parts[self.index]
        return items, (n - self.offset if self.reverse else self.offset), n - self.offset

    def read(self, size: int) -> list[Message]:
        """The next `size` messages, in walking order."""
        items, position, _ = self.chunk()
        if self.reverse:
            return list(items[position - size : position])[::-1]
        return list(items[position : position + size])

    def advance(self, count: int) -> None:
        self.offset += count
        if self.offset == self.parts[self.index][1]:
            self.index, self.offset = self.index + 1, 0


def _first_difference(a: list[Message], b: list[Message]) -> int:
    """Length of the common prefix of two lists of the same length (one C-level comparison when they agree)."""
    if a == b:
        return len(a)
    return next(i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y)


def common_prefix(a: Sequence[Message], b: Sequence[Message]) -> int:
    """Length of the longest common prefix of two message sequences.

    Parts that are the same log from the same position agree without being read; elsewhere the
    messages are compared, as for plain lists.
    """
    return _common(a, b, min(len(a), len(b)), reverse=False)


def common_suffix(a: Sequence[Message], b: Sequence[Message], limit: int) -> int:
    """Length of the longest common suffix, at most `limit`."""
    return _common(a, b, min(limit, len(a), len(b)), reverse=True)


def _common(a: Sequence[Message], b: Sequence[Message], remaining: int, reverse: bool) -> int:
    if not isinstance(a, Joined) and not isinstance(b, Joined):
        return _plain_common(a, b, remaining, reverse)
    x, y = _Cursor(_parts(a), reverse), _Cursor(_parts(b), reverse)
    same = 0
    while remaining > 0:
        (items_a, at_a, left_a), (items_b, at_b, left_b) = x.chunk(), y.chunk()
        size = min(left_a, left_b, remaining)
        if items_a is items_b and at_a == at_b:
            agree = size  # the same log from the same position: the same messages
        else:
            agree = _first_difference(x.read(size), y.read(size))
        same += agree
        if agree < size:
            break
        remaining -= size
        x.advance(size)
        y.advance(size)
    return same


def _plain_common(a: Sequence[Message], b: Sequence[Message], limit: int, reverse: bool) -> int:
    """Common prefix (or suffix) of two plain lists, at most `limit`, in a few C-level slice
    comparisons: the whole stretch first (the usual case), then a binary search, since
    agreement over a length is monotone in the length."""

    def agree(k: int) -> bool:
        if reverse:
            return k == 0 or a[len(a) - k :] == b[len(b) - k :]
        return a[:k] == b[:k]

    for k in (limit, limit - 1):
        if k <= 0 or agree(k):
            return max(k, 0)
    low, high = 0, limit - 1  # the first (last) `low` agree; the first (last) `high` do not
    while high - low > 1:
        middle = (low + high) // 2
        if agree(middle):
            low = middle
        else:
            high = middle
    return low
