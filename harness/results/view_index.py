"""One conversation's views read from disk on demand, never every conversation's at once.

`views.jsonl` and `messages.jsonl` grow with the batch; a reader that needs the view of one
turn (the report's blocks in view, `harness show`) reads only that conversation's records,
through the byte spans of harness.results.spans. The last conversation read is kept, since callers
ask for several turns of one conversation in a row.

A batch that completed rewrote its files in plan order (harness.run.batch), the order of
`conversations.jsonl`; for its results a conversation is found by bisecting each file on that
order (harness.results.spans.bisect), so a report that shows a few views reads kilobytes, not the whole
files. Otherwise, or when a file contradicts the order, each file is indexed whole.
"""

from __future__ import annotations

from pathlib import Path

from harness.results.spans import Key, SpanIndex
from harness.results.views import ConversationViews

FILES = ("messages.jsonl", "views.jsonl")


class ViewIndex:
    """The views of a results directory, one conversation at a time."""

    def __init__(self, directory: Path, in_plan_order: bool = False) -> None:
        """`in_plan_order`: the batch completed, so its files follow the order of `conversations.jsonl`."""
        order = plan_order(directory) if in_plan_order else None
        self._messages, self._views = (SpanIndex(directory / name, order) for name in FILES)
        self._last: tuple[Key, ConversationViews] | None = None

    def conversation(self, key: Key) -> ConversationViews | None:
        """The views of one conversation (None when it has no row in `views.jsonl`)."""
        if self._last is not None and self._last[0] == key:
            return self._last[1]
        spans = self._views.spans_of(key)  # found once: a lookup may bisect the file
        if not spans:
            return None
        found = ConversationViews(self._messages.conversation(key), self._views.read(spans))
        self._last = (key, found)
        return found


def plan_order(directory: Path) -> dict[Key, int] | None:
    """Each conversation's place in `conversations.jsonl` (one record each, in plan order once
    the batch completed); None when a line there is no record with an identity or a
    conversation has more than one. One orjson parse per complete line (a regular expression
    over the file cost three times as much)."""
    import orjson  # fast JSON parsing

    path = directory / "conversations.jsonl"
    if not path.is_file():
        return None
    data = path.read_bytes()
    lines = data[: data.rfind(b"\n") + 1].split(b"\n")[:-1]  # a torn last line is left out
    order: dict[Key, int] = {}
    try:
        for line in lines:
            record = orjson.loads(line)
            key = (record["chronology"], record["policy"], record["model"], record["repetition"])
            if not all(isinstance(name, str) for name in key[:3]) or type(key[3]) is not int:
                return None
            order.setdefault(key, len(order))
    except (orjson.JSONDecodeError, KeyError, TypeError):  # no JSON, no record, or no identity
        return None
    return order if order and len(order) == len(lines) else None
