"""One conversation's records read back from a JSON-lines results file, never every
conversation's at once; and the views of one conversation, read from two of those files.

The reading here is a plain scan: the file read line by line, each complete line parsed, the
records of the conversation asked for kept (a torn last line and a line that is no JSON are
left out). It depends on nothing but the records' identity fields, and costs a pass over the
file per conversation. harness.results.spans, an annex, finds a conversation's lines without
parsing the others' (by the bytes its records start with, as harness.results.writer writes
them) and gives the same records; it reads a line as this module does wherever it cannot.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import orjson  # the files hold long message texts: five to ten times the standard parser's speed

from harness.base.identity import RunKey
from harness.results.views import ConversationViews

Record = dict[str, Any]

VIEW_FILES = ("messages.jsonl", "views.jsonl")  # message records, then the turns' references into them


class ConversationRecords(Protocol):
    """One JSON-lines results file, read one conversation at a time."""

    def conversation(self, key: RunKey) -> list[Record]:
        """The records of one conversation, in file order (none: an empty list)."""
        ...


class Scan:
    """A JSON-lines results file read by a plain scan: one pass over its lines per conversation."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def conversation(self, key: RunKey) -> list[Record]:
        found: list[Record] = []
        if not self.path.exists():
            return found
        with self.path.open("rb") as handle:
            for line in handle:
                if not line.endswith(b"\n"):
                    break  # a torn last record
                record = parsed(line)
                if RunKey.written(record) == key:
                    found.append(record)
        return found


def parsed(line: bytes) -> Any:
    """A line's JSON value; None for a line that is no JSON orjson reads."""
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        return None


class ViewReader:
    """The views of a results directory, one conversation at a time, from its message and view
    records (`VIEW_FILES`) read as `ConversationRecords`. The last conversation read is kept:
    callers ask for several turns of one conversation in a row."""

    def __init__(self, messages: ConversationRecords, views: ConversationRecords) -> None:
        self.messages, self.views = messages, views
        self._last: tuple[RunKey, ConversationViews] | None = None

    def conversation(self, key: RunKey) -> ConversationViews | None:
        """The views of one conversation (None when it has no record in `views.jsonl`)."""
        if self._last is not None and self._last[0] == key:
            return self._last[1]
        rows = self.views.conversation(key)
        if not rows:
            return None
        found = ConversationViews(self.messages.conversation(key), rows)
        self._last = (key, found)
        return found


# How a results directory's views are read: (the directory, whether its files are in plan
# order, as a completed batch leaves them) -> its `ViewReader`.
ViewReading = Callable[[Path, bool], ViewReader]


def scanning(directory: Path, in_plan_order: bool = False) -> ViewReader:
    """The views of `directory`, each file read by a plain scan (the order is not used)."""
    return ViewReader(*(Scan(directory / name) for name in VIEW_FILES))
