"""An annex to harness.results.conversations: where each conversation's records lie in a
JSON-lines results file, so that one conversation is read without parsing the others'.

What it buys: a plain scan parses a whole file per conversation read, and the report reads
many. Its blocks table reads the views of each conversation whose loss it puts down to a block
in view (18 on the shipped library, 61 at the million probe rows of benchmarks/report_scale.py);
its fact-store timeline reads the facts of every conversation that has any (26; 21,840). On the
shipped library, the report without charts spends about 0.3 CPU s less (0.8 against 1.1 s) and
`harness show` of every policy about half; at a million probe rows one conversation's views cost
the plain scan about 13 CPU s (1.85 GB of views and messages), the whole index of both files
3.6 s once, and the bisection a millisecond.

**The assumption.** harness.results.writer writes each record as `json.dumps` does, with its
identity first, in the order of the record types: `{"chronology": …, "policy": …, "model": …,
"repetition": N, ` (`IDENTITY`; tests/results/test_spans.py fails if the writer changes it).
Lines of one conversation then start with the same bytes, so the index is one pass over the
lines testing a prefix, parsing nothing: a line's identity is read (by `IDENTITY`) only where
the prefix changes. Where the assumption does not hold, the reading is the plain scan's: a line
that does not start so is parsed to find its conversation (slower, never wrong), and a record
read back from a span whose identity is not the one asked for makes the file fall back to the
plain scan (`Scan`) from then on. A torn last line is left out.

When the caller knows the file is in plan order (a batch that completed rewrote it so) and gives
that order (`plan_order`), one conversation is found by bisecting the file instead: a few small
reads, not a pass over gigabytes. What the bisection finds is checked (the lines just before
and after the run belong to conversations before and after it in the order); any contradiction
falls back to the whole index, so the answer is the same either way.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import BinaryIO

from harness.base.identity import RunKey
from harness.results.conversations import VIEW_FILES, Record, Scan, ViewReader, parsed

# The identity keys at the start of a record, as harness.results.writer writes them: three JSON
# strings and a whole number.
_VALUES = (rb'("(?:[^"\\]|\\.)*")',) * 3 + (rb"(\d+)",)
IDENTITY = re.compile(rb"\{" + b"".join(b'"%s": %s, ' % (name.encode(), v) for name, v in zip(RunKey._fields, _VALUES)))


def view_reader(directory: Path, in_plan_order: bool = False) -> ViewReader:
    """The views of a results directory, each file read through its span index.
    `in_plan_order`: the batch completed, so its files follow the order of `conversations.jsonl`."""
    order = plan_order(directory) if in_plan_order else None
    return ViewReader(*(SpanIndex(directory / name, order) for name in VIEW_FILES))


def plan_order(directory: Path) -> dict[RunKey, int] | None:
    """Each conversation's place in `conversations.jsonl` (one record each, in plan order once
    the batch completed); None when a line there is no record with an identity or a
    conversation has more than one. One parse per complete line (a regular expression over
    the file cost three times as much)."""
    path = directory / "conversations.jsonl"
    if not path.is_file():
        return None
    data = path.read_bytes()
    lines = data[: data.rfind(b"\n") + 1].split(b"\n")[:-1]  # a torn last line is left out
    order: dict[RunKey, int] = {}
    for line in lines:
        key = RunKey.written(parsed(line))
        if key is None:  # no JSON, no record, or no identity
            return None
        order.setdefault(key, len(order))
    return order if order and len(order) == len(lines) else None


class SpanIndex:
    """Byte spans of each conversation's records in one JSON-lines file, built on first use;
    read as `ConversationRecords`, or by the plain scan once the file broke the assumption."""

    def __init__(self, path: Path, order: dict[RunKey, int] | None = None) -> None:
        self.path = path
        self.order = order  # plan order of the conversations when the file is known to follow it
        self.scan: Scan | None = None  # the plain scan, once a record read back was another conversation's
        self._spans: dict[RunKey, list[tuple[int, int]]] | None = None

    @property
    def spans(self) -> dict[RunKey, list[tuple[int, int]]]:
        if self._spans is None:
            self._spans = index(self.path)
        return self._spans

    def spans_of(self, key: RunKey) -> list[tuple[int, int]]:
        """The byte spans of one conversation: by bisection when the order is known and holds
        where it was looked at, else (and for a conversation the order does not list) from the
        whole index."""
        if self._spans is None and self.order is not None and key in self.order and self.path.exists():
            found = bisect(self.path, key, self.order)
            if found is not None:
                return found
            self.order = None  # the file does not follow the order: index it whole from now on
        return self.spans.get(key, [])

    def conversation(self, key: RunKey) -> list[Record]:
        """The records of one conversation, in file order."""
        if self.scan is None:
            found = self.read(self.spans_of(key), key)
            if found is not None:
                return found
            self.scan = Scan(self.path)
        return self.scan.conversation(key)

    def bodies(self, key: RunKey, handle: BinaryIO | None = None) -> list[bytes]:
        """The runs of lines of one conversation, in file order, each without the identity every
        one of its lines starts with (those bytes are cut after each newline, in C, not line by
        line): equal bodies are equal records but for the identity, compared without parsing.
        A run that does not start with an identity is left whole, and so is every run once the
        file fell back to the plain scan: equal, they are the same records of the same
        conversation. `handle`: the file, open, when the caller reads many conversations."""
        if handle is None:
            with self.path.open("rb") as opened:
                return self.bodies(key, opened)
        found = []
        for start, length in self.spans_of(key):
            handle.seek(start)
            run = handle.read(length)
            match = IDENTITY.match(run) if self.scan is None else None
            found.append((b"\n" + run).replace(b"\n" + match.group(0), b"\n")[1:] if match else run)
        return found

    def read(self, spans: list[tuple[int, int]], key: RunKey) -> list[Record] | None:
        """The records of `key` at these byte spans (from `spans_of`), in order; a line that is no
        JSON is skipped, as the plain scan skips it. None when a record there belongs to another
        conversation: the identity its line starts with is not the one its JSON holds (a key
        written twice), so the index cannot be trusted."""
        found = []
        with self.path.open("rb") as handle:
            for start, length in spans:
                handle.seek(start)
                for line in handle.read(length).split(b"\n")[:-1]:
                    record = parsed(line)
                    if record is None:
                        continue
                    if RunKey.written(record) != key:
                        return None
                    found.append(record)
        return found


def index(path: Path) -> dict[RunKey, list[tuple[int, int]]]:
    """Conversation -> (start, length) of its runs of adjacent complete lines. Per line, only a
    prefix test: a run is recorded when the conversation changes (a line that does not start
    with an identity is a run of its own, its conversation found by `identity`)."""
    spans: dict[RunKey, list[tuple[int, int]]] = {}
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


class Disorder(Exception):
    """The file does not follow the order where the bisection looked."""


def bisect(path: Path, key: RunKey, order: dict[RunKey, int]) -> list[tuple[int, int]] | None:
    """The span of `key`'s records in a file whose conversations follow `order`, found in
    O(log size) small reads. None, so that the caller indexes the file whole, for a conversation
    the order does not list, when the key has no records where the order puts them, or when what
    was read contradicts the order (a line without an identity or of a conversation not in the
    order, the neighbours of the run out of order). The checks are local: that the whole file
    follows the order is the caller's knowledge."""
    wanted = order.get(key)
    if wanted is None:
        return None
    size = path.stat().st_size
    try:
        with path.open("rb") as handle:

            def place(line: bytes | None) -> int:
                """A line's position in the order; past every conversation for the end of the file."""
                if line is None:
                    return len(order)
                found = order.get(identity(line)[0])  # type: ignore[arg-type]
                if found is None:
                    raise Disorder
                return found

            low, high = 0, size
            while low < high:  # the first byte from which the next line is at or after `key`
                middle = (low + high) // 2
                if place(line_at(handle, middle)[1]) >= wanted:
                    high = middle
                else:
                    low = middle + 1
            start, line = line_at(handle, low)
            if line is None or place(line) != wanted:
                return None
            prefix = identity(line)[1]
            end = start
            while line is not None and line.startswith(prefix):
                end += len(line)
                line = line_at(handle, end)[1]
            if place(line) <= wanted or (start > 0 and place(line_before(handle, start)) >= wanted):
                return None
            return [(start, end - start)]
    except Disorder:
        return None


def line_at(handle: BinaryIO, at: int) -> tuple[int, bytes | None]:
    """The first complete line that starts at or after byte `at`, and where it starts; None for
    the line when there is none (the end of the file, or a torn last line)."""
    if at > 0:
        handle.seek(at - 1)
        skipped = handle.readline()  # up to the newline at or after `at - 1`
        at = at - 1 + len(skipped)
        if not skipped.endswith(b"\n"):
            return at, None
    else:
        handle.seek(0)
    line = handle.readline()
    return at, line if line.endswith(b"\n") else None


def line_before(handle: BinaryIO, start: int) -> bytes:
    """The line that ends just before byte `start` (a line start after the first)."""
    step = 1 << 12
    while True:
        begin = max(0, start - step)
        handle.seek(begin)
        block = handle.read(start - begin)
        cut = block.rfind(b"\n", 0, len(block) - 1)
        if cut >= 0 or begin == 0:
            return block[cut + 1 :]
        step *= 2


def identity(line: bytes) -> tuple[RunKey | None, bytes]:
    """A record's conversation and the bytes its identity takes at the start of the line (every
    line of that conversation starts with them). A line that does not start with an identity
    as the writer writes it is parsed, as the plain scan reads it: its conversation (None when
    it is no record), and a prefix no line has, so that the next line is read anew."""
    match = IDENTITY.match(line)
    if match is not None:
        try:
            return RunKey(*map(name, match.groups()[:3]), int(match.group(4))), match.group(0)
        except ValueError:  # a name that is not UTF-8, or no JSON string: the line decides below
            pass
    return RunKey.written(parsed(line)), b"\0"


def name(string: bytes) -> str:
    """A JSON string's value: its bytes between the quotes when it has no escape (most names;
    the JSON decoder costs more than the rest of the index), else decoded as JSON."""
    return string[1:-1].decode() if b"\\" not in string else json.loads(string)
