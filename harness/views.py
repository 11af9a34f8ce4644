"""Request views and retained states on disk: each message once, every list as a reference.

`messages.jsonl` holds one record per distinct message of a conversation, with an `id` unique
within that conversation (0, 1, 2, … in order of first appearance). A row of `views.jsonl`
gives the request view and the retained state as **list references** over those ids:

    {"base": 7, "head": 15, "tail": 0, "ids": [16, 17, 18]}

reads "the first 15 ids of the same list at turn 7, then 16, 17, 18, then the last 0 ids of the
turn-7 list". `base` is null when nothing is shared (then `head` and `tail` are 0). A view's
base is the latest earlier view of the same session; a retained state's base is the latest
earlier retained state. A full history then costs a few ids per turn instead of the whole
history again, so results grow linearly with the turns, not with their square.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.messages import Message

Record = dict[str, Any]


@dataclass(frozen=True)
class ListRef:
    """A list of message ids: `base[:head] + ids + base[len(base) - tail:]` (base: an earlier list)."""

    base: int | None  # the turn of the row whose list of the same kind this one reuses
    head: int
    tail: int
    ids: tuple[int, ...]

    def as_record(self) -> Record:
        return {"base": self.base, "head": self.head, "tail": self.tail, "ids": list(self.ids)}

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> ListRef:
        return cls(record["base"], int(record["head"]), int(record["tail"]), tuple(record["ids"]))

    def apply(self, base: Sequence[int]) -> list[int]:
        """The whole list, given the base list (empty when `base` is None)."""
        return [*base[: self.head], *self.ids, *base[len(base) - self.tail :]]


def common_prefix(a: Sequence[Message], b: Sequence[Message]) -> int:
    """Length of the longest common prefix, in a few C-level slice comparisons.

    The usual cases are tried first (`b` extends `a`, or replaces its last item), then a
    binary search: prefix equality is monotone in the length.
    """
    n = min(len(a), len(b))
    for k in (n, n - 1):
        if k <= 0 or a[:k] == b[:k]:
            return max(k, 0)
    low, high = 0, n - 1  # a[:low] == b[:low]; a[:high] != b[:high]
    while high - low > 1:
        middle = (low + high) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle
    return low


def common_suffix(a: Sequence[Message], b: Sequence[Message], limit: int) -> int:
    """Length of the longest common suffix, at most `limit`."""
    if limit <= 0:
        return 0
    if a[len(a) - limit :] == b[len(b) - limit :]:
        return limit
    low, high = 0, limit  # the last `low` items agree; the last `high` do not
    while high - low > 1:
        middle = (low + high) // 2
        if a[len(a) - middle :] == b[len(b) - middle :]:
            low = middle
        else:
            high = middle
    return low


class ViewEncoder:
    """Turns one conversation's views and retained states into message records and references.

    One per conversation (not shared between threads). It keeps every distinct message it has
    given an id, and the latest list of each kind, so memory grows with the distinct messages.
    """

    def __init__(self) -> None:
        self._ids: dict[Message, int] = {}
        self._views: dict[str, tuple[int, list[Message]]] = {}  # session -> (turn, latest view)
        self._retained: tuple[int, list[Message]] | None = None

    def encode(
        self, turn: int, session: str, view: list[Message] | None, retained: list[Message]
    ) -> tuple[list[Record], Record | None, Record]:
        """(new message records, view reference or None, retained reference) of one turn row."""
        new: list[Record] = []
        view_ref = None
        if view is not None:
            view_ref = self._reference(self._views.get(session), view, new)
            self._views[session] = (turn, list(view))
        retained_ref = self._reference(self._retained, retained, new)
        self._retained = (turn, list(retained))
        return new, view_ref.as_record() if view_ref else None, retained_ref.as_record()

    def _reference(self, base: tuple[int, list[Message]] | None, messages: list[Message], new: list[Record]) -> ListRef:
        turn, previous = base if base is not None else (None, [])
        head = common_prefix(previous, messages)
        tail = common_suffix(previous, messages, min(len(previous), len(messages)) - head)
        ids = tuple(self._id(m, new) for m in messages[head : len(messages) - tail])
        return ListRef(turn if head or tail else None, head, tail, ids)

    def _id(self, message: Message, new: list[Record]) -> int:
        found = self._ids.get(message)
        if found is None:
            found = self._ids[message] = len(self._ids)
            new.append({"id": found, **message.as_record()})
        return found


class ConversationViews:
    """The views of one conversation read back: message records by id, rows by turn."""

    def __init__(self, messages: Iterable[Record], rows: Iterable[Record]) -> None:
        self.messages = {int(m["id"]): message_fields(m) for m in messages}
        self.rows = {int(r["turn"]): r for r in rows}

    def at(self, turn: int) -> Record | None:
        """The row of `turn` with `view` and `retained` as whole lists of messages (None: no row)."""
        row = self.rows.get(turn)
        if row is None:
            return None
        view = None if row["view"] is None else [self.messages[i] for i in self.ids(turn, "view")]
        return {**row, "view": view, "retained": [self.messages[i] for i in self.ids(turn, "retained")]}

    def ids(self, turn: int, kind: str) -> list[int]:
        """The message ids of the `view` or `retained` list at `turn`, following its bases."""
        chain = []
        at: int | None = turn
        while at is not None:
            ref = ListRef.from_record(self.rows[at][kind])
            chain.append(ref)
            at = ref.base
        ids: list[int] = []
        for ref in reversed(chain):
            ids = ref.apply(ids)
        return ids


def message_fields(record: Record) -> Record:
    """A message record without its conversation identity and id: what a view holds."""
    return {key: record.get(key) for key in ("role", "content", "origin", "turn", "session")}
