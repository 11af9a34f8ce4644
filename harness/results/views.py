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

from harness.base.messages import Message
from harness.base.sequences import Joined, common_prefix, common_suffix

__all__ = [
    "Change",
    "ConversationViews",
    "KnownChange",
    "ListRef",
    "ViewEncoder",
    "change",
    "common_prefix",
    "common_suffix",
]

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


@dataclass(frozen=True)
class Change:
    """How a list differs from the previous list of its kind: they share `head` messages at
    the front and `tail` at the back; `removed` and `added` are the middles in between."""

    head: int
    tail: int
    removed: list[Message]
    added: list[Message]


@dataclass(frozen=True)
class KnownChange:
    """A view's change worked out by a caller: from `previous` (the list kept of the session's
    last view) to the view, and `current`, the list kept of the view (`kept`)."""

    previous: Sequence[Message]
    change: Change
    current: Sequence[Message]


def change(previous: Sequence[Message], current: Sequence[Message]) -> Change:
    """The change from `previous` to `current`, reading only what differs when both share storage."""
    head = common_prefix(previous, current)
    tail = common_suffix(previous, current, min(len(previous), len(current)) - head)
    return Change(head, tail, _middle(previous, head, tail), _middle(current, head, tail))


def _middle(messages: Sequence[Message], head: int, tail: int) -> list[Message]:
    return list(messages[head : len(messages) - tail])


class ViewEncoder:
    """Turns one conversation's views and retained states into message records and references.

    One per conversation (not shared between threads). It keeps every distinct message it has
    given an id, and the latest list of each kind, so memory grows with the distinct messages.
    """

    def __init__(self) -> None:
        self._ids: dict[Message, int] = {}
        self._views: dict[str, tuple[int, Sequence[Message]]] = {}  # session -> (turn, latest view)
        self._retained: tuple[int, Sequence[Message]] | None = None

    def encode(
        self, turn: int, session: str, view: Sequence[Message] | None, retained: Sequence[Message]
    ) -> tuple[list[Record], Record | None, Record]:
        """(new message records, view reference or None, retained reference) of one turn row."""
        return self.encode_changes(turn, session, view, retained)[:3]

    def encode_changes(
        self,
        turn: int,
        session: str,
        view: Sequence[Message] | None,
        retained: Sequence[Message],
        known: KnownChange | None = None,
    ) -> tuple[list[Record], Record | None, Record, Change | None, Change]:
        """`encode`, and how the view (None without one) and the retained state changed since
        the previous ones of their kind, so a caller can keep totals without rereading them.

        `known`: the view's change when the caller worked it out already (the replay sizes each
        view before its call); used only if its previous view is the very list kept here, else
        the change is worked out again."""
        new: list[Record] = []
        view_ref, view_change = None, None
        if view is not None:
            base = self._views.get(session)
            previous = base[1] if base is not None else ()
            if known is not None and (known.previous is previous or (base is None and not known.previous)):
                view_ref, view_change = self._reference(base, view, new, known.change)
                self._views[session] = (turn, known.current)
            else:
                view_ref, view_change = self._reference(base, view, new)
                self._views[session] = (turn, kept(view))
        retained_ref, retained_change = self._reference(self._retained, retained, new)
        self._retained = (turn, kept(retained))
        return new, view_ref.as_record() if view_ref else None, retained_ref.as_record(), view_change, retained_change

    def _reference(
        self,
        base: tuple[int, Sequence[Message]] | None,
        messages: Sequence[Message],
        new: list[Record],
        diff: Change | None = None,
    ) -> tuple[ListRef, Change]:
        turn, previous = base if base is not None else (None, ())
        if diff is None:
            diff = change(previous, messages)
        ids = tuple(self._id(m, new) for m in diff.added)
        return ListRef(turn if diff.head or diff.tail else None, diff.head, diff.tail, ids), diff

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


def kept(messages: Sequence[Message]) -> Sequence[Message]:
    """A list to keep beyond the turn: a `Joined` as it is (nothing can change it), a copy of
    anything else (a policy may change a list it returned)."""
    return messages if isinstance(messages, Joined) else list(messages)


MESSAGE_FIELDS = ("role", "content", "origin", "turn", "session")
TOOL_FIELDS = ("tool_calls", "tool_call_id")  # written only on the messages of a tool step


def message_fields(record: Record) -> Record:
    """A message record without its conversation identity and id: what a view holds; a tool
    step's message keeps its `tool_calls` or `tool_call_id`."""
    fields = {key: record.get(key) for key in MESSAGE_FIELDS}
    return fields | {key: record[key] for key in TOOL_FIELDS if record.get(key) is not None}
