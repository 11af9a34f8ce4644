"""One conversation's views read from disk on demand, never every conversation's at once.

`views.jsonl` and `messages.jsonl` grow with the batch; a reader that needs the view of one
turn (the report's blocks in view, `harness show`) used to parse both files whole and keep
every conversation's messages, so a report's memory grew with the batch. Here a first pass
notes, per conversation, where its records lie in each file (byte offsets only); a view is
then read by parsing that conversation's records alone. The last conversation read is kept,
since callers ask for several turns of one conversation in a row.
"""

from __future__ import annotations

import json
from pathlib import Path

from harness.records import identity_key, record_key
from harness.views import ConversationViews

Key = tuple[str, str, str, int]
Spans = list[tuple[int, int]]  # (start offset, length) of a conversation's records, file order
FILES = ("messages.jsonl", "views.jsonl")


def conversation_spans(path: Path) -> dict[Key, Spans]:
    """Where each conversation's complete records lie in a JSON-lines results file, adjacent
    records joined into one span. A torn last line and lines that are no record are left out;
    bytes that are not UTF-8 are damage (InputError, as `read_records`)."""
    spans: dict[Key, Spans] = {}
    if not path.exists():
        return spans
    with path.open("rb") as handle:
        start = 0
        for number, line in enumerate(handle, start=1):
            if not line.endswith(b"\n"):
                break  # a torn last record
            key = record_key(line, False, path, number)
            if key is not None:
                found = spans.setdefault(key, [])
                if found and found[-1][0] + found[-1][1] == start:
                    found[-1] = (found[-1][0], found[-1][1] + len(line))
                else:
                    found.append((start, len(line)))
            start += len(line)
    return spans


def read_spans(path: Path, spans: Spans, key: Key) -> list[dict]:
    """The records of conversation `key` within `spans` of `path`, in file order."""
    records = []
    with path.open("rb") as handle:
        for start, length in spans:
            handle.seek(start)
            for line in handle.read(length).splitlines():
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if isinstance(record, dict) and record_key_of(record) == key:
                    records.append(record)
    return records


def record_key_of(record: dict) -> Key | None:
    try:
        return identity_key(record)
    except (KeyError, ValueError, TypeError):
        return None


class ViewIndex:
    """The views of a results directory, one conversation at a time."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._spans = {name: conversation_spans(directory / name) for name in FILES}
        self._last: tuple[Key, ConversationViews] | None = None

    def conversation(self, key: Key) -> ConversationViews | None:
        """The views of one conversation (None when it has no row in `views.jsonl`)."""
        if self._last is not None and self._last[0] == key:
            return self._last[1]
        if key not in self._spans["views.jsonl"]:
            return None
        messages, rows = (read_spans(self.directory / name, self._spans[name].get(key, []), key) for name in FILES)
        found = ConversationViews(messages, rows)
        self._last = (key, found)
        return found
