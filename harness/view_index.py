"""One conversation's views read from disk on demand, never every conversation's at once.

`views.jsonl` and `messages.jsonl` grow with the batch; a reader that needs the view of one
turn (the report's blocks in view, `harness show`) reads only that conversation's records,
through the byte spans of harness.spans. The last conversation read is kept, since callers
ask for several turns of one conversation in a row.
"""

from __future__ import annotations

from pathlib import Path

from harness.spans import Key, SpanIndex
from harness.views import ConversationViews

FILES = ("messages.jsonl", "views.jsonl")


class ViewIndex:
    """The views of a results directory, one conversation at a time."""

    def __init__(self, directory: Path) -> None:
        self._messages, self._views = (SpanIndex(directory / name) for name in FILES)
        self._last: tuple[Key, ConversationViews] | None = None

    def conversation(self, key: Key) -> ConversationViews | None:
        """The views of one conversation (None when it has no row in `views.jsonl`)."""
        if self._last is not None and self._last[0] == key:
            return self._last[1]
        if key not in self._views.spans:
            return None
        found = ConversationViews(self._messages.conversation(key), self._views.conversation(key))
        self._last = (key, found)
        return found
