"""Where each conversation's records lie in a JSON-lines results file, so that one conversation
(or one chronology) is read without parsing the others.

A results file holds each conversation's records together (harness.records writes or rewrites
them in plan order), and every record starts with its identity keys in field order. The index
is one pass over the lines that parses a line's identity only where it differs from the line
before; reading a conversation then seeks to its byte spans. A torn last line is left out.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

Key = tuple[str, str, str, int]

# The identity keys at the start of a record, as `json.dumps` writes them.
_STRING = rb'"(?:[^"\\]|\\.)*"'
IDENTITY = re.compile(
    rb'\{"chronology": ('
    + _STRING
    + rb'), "policy": ('
    + _STRING
    + rb'), "model": ('
    + _STRING
    + rb'), "repetition": (\d+), '
)


class SpanIndex:
    """Byte spans of each conversation's records in one JSON-lines file, built on first use."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._spans: dict[Key, list[tuple[int, int]]] | None = None

    @property
    def spans(self) -> dict[Key, list[tuple[int, int]]]:
        if self._spans is None:
            self._spans = index(self.path)
        return self._spans

    def conversation(self, key: Key) -> list[dict[str, Any]]:
        """The records of one conversation, in file order."""
        return self._read(self.spans.get(key, []))

    def records(self, chronology: str) -> list[dict[str, Any]]:
        """The records of every conversation of one chronology, in file order."""
        found = sorted(span for key, spans in self.spans.items() if key[0] == chronology for span in spans)
        return self._read(found)

    def bodies(self, key: Key) -> list[bytes]:
        """The lines of one conversation, in file order, each without its identity (the bytes
        every line of its run starts with) and its newline: equal bodies are equal records but
        for the identity, compared without parsing."""
        found = []
        with self.path.open("rb") as handle:
            for start, length in self.spans.get(key, []):
                handle.seek(start)
                lines = handle.read(length).splitlines()
                match = IDENTITY.match(lines[0]) if lines else None
                found += [line[match.end() :] for line in lines] if match else lines
        return found

    def _read(self, spans: list[tuple[int, int]]) -> list[dict[str, Any]]:
        import orjson  # fast JSON parsing for large results

        found = []
        with self.path.open("rb") as handle:
            for start, length in spans:
                handle.seek(start)
                for line in handle.read(length).splitlines():
                    try:
                        found.append(orjson.loads(line))
                    except orjson.JSONDecodeError:
                        continue
        return found


def index(path: Path) -> dict[Key, list[tuple[int, int]]]:
    """Conversation -> (start, length) of its runs of adjacent complete lines. Per line, only a
    prefix test: a run is recorded when the conversation changes."""
    spans: dict[Key, list[tuple[int, int]]] = {}
    if not path.exists():
        return spans
    prefix, key, start, position = b"\0", None, 0, 0
    with path.open("rb") as handle:
        for line in handle:
            if not line.endswith(b"\n"):
                break  # a torn last record
            if not line.startswith(prefix):
                if key is not None and position > start:
                    spans.setdefault(key, []).append((start, position - start))
                (key, prefix), start = identity(line), position
            position += len(line)
    if key is not None and position > start:
        spans.setdefault(key, []).append((start, position - start))
    return spans


def identity(line: bytes) -> tuple[Key | None, bytes]:
    """A record's conversation and the bytes its identity takes at the start of the line
    (every line of that conversation starts with them); (None, a prefix no line has) when the
    line does not start with an identity."""
    match = IDENTITY.match(line)
    if match is None:
        return None, b"\0"
    names = [name(group) for group in match.groups()[:3]]
    return (names[0], names[1], names[2], int(match.group(4))), match.group(0)


def name(string: bytes) -> str:
    """A JSON string's value: its bytes between the quotes when it has no escape (most names;
    the JSON decoder costs more than the rest of the index), else decoded as JSON."""
    return string[1:-1].decode() if b"\\" not in string else json.loads(string)
