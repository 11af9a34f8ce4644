"""The input file of an import: its bytes within a cap, their SHA-256, the records it holds, and the
licence its data is used under. The file is read a piece at a time (`CHUNK_BYTES`), once to check
and hash it and once for its records: an import holds one record, never the whole file.

The records are the objects of JSON Lines, of a top-level JSON array, or a single JSON object (or
several, one after another): every format reads all three (`json_records`), as published files
come in each. Every problem is an `ImportRefused` (exit status 2) naming the file, the line or
item, the field and what to do; under `--skip-invalid` a problem with one record is listed in the
source's `Skips` and the record passed over instead.
"""

from __future__ import annotations

import codecs
import hashlib
import json
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from harness.base import json_bounded
from harness.base.errors import InputError
from harness.base.files import FileRefused, kind_of_mode, read_regular_chunks
from harness.base.json_bounded import JsonBounded, json_type
from harness.base.text import shown, valid_unicode, visible

__all__ = [
    "MAX_INPUT_BYTES",
    "MAX_RECORD_CHARS",
    "CHUNK_BYTES",
    "ImportRefused",
    "Located",
    "Skips",
    "Source",
    "checked_text",
    "json_lines",
    "json_list",
    "json_records",
    "json_type",
    "licence_for",
    "read_source",
    "text_field",
]

# LongMemEval's `_s` file is about 280 MB; its `_m` (2.7 GB) is beyond what one JSON parse should hold.
MAX_INPUT_BYTES = 1024 * 1024 * 1024  # 1 GiB; `--max-input-bytes` raises it

# Characters of one record's raw text (a JSONL line, an item of a JSON array, an object of the
# file) before it is decoded: 16 times the 1 MiB a chronology may hold (harness.base.files
# MAX_FILE_BYTES). A record is not its chronology: JSON escapes shrink when decoded (`\u0041`, six
# characters, is one) and fields an importer ignores are dropped, so the bound is a safe multiple:
# a record this long of text that is kept could only become a chronology over 1 MiB, and parsing,
# converting and writing it as YAML first cost 35 s and 641 MB for 24 MB. The record is refused as
# soon as its text passes the bound, holding about the bound (never the rest of a file without
# line breaks).
MAX_RECORD_CHARS = 16 * 1024 * 1024


class ImportRefused(InputError):
    """An input the importer cannot turn into chronologies; the message says where and what to do."""


class Skips:
    """What `--skip-invalid` passed over: each bad record's refusal, in file order. Without it
    (`enabled` False) the first refusal is raised: one bad item refuses the whole import."""

    def __init__(self, enabled: bool = False) -> None:
        self.enabled = enabled
        self.reasons: list[str] = []  # each refusal's message: file, line or item, field, what to do

    def take(self, refused: ImportRefused) -> None:
        """Pass over the record `refused` is about, or refuse the import when not skipping."""
        if not self.enabled:
            raise refused
        self.reasons.append(str(refused))


@dataclass(frozen=True)
class Source:
    """The input file as checked: its path as given, its size and the SHA-256 of its bytes.

    Its text is never held whole: `pieces` reads it again, `CHUNK_BYTES` at a time, and the records
    are decoded from a buffer of a few pieces and the record being decoded.
    """

    path: Path
    sha256: str
    size: int
    limit: int = MAX_INPUT_BYTES
    skips: Skips = field(default_factory=Skips, compare=False)  # --skip-invalid: what was passed over

    def refuse(self, where: str, field: str, message: str) -> ImportRefused:
        """`FILE:WHERE: FIELD: message`, the one shape of every problem with an item."""
        place = f"{visible(str(self.path))}:{where}"
        return ImportRefused(f"{place}: {visible(field)}: {message}" if field else f"{place}: {message}")

    def pieces(self) -> Iterator[str]:
        """The file's text, a piece at a time; once the last is read, refused if the bytes are no
        longer the ones hashed (the file changed during the import: nothing is written)."""
        digest, size = hashlib.sha256(), 0
        decoder = codecs.getincrementaldecoder("utf-8")()
        try:
            for data in _chunks(self.path, self.limit):
                digest.update(data)
                size += len(data)
                yield decoder.decode(data)
            decoder.decode(b"", final=True)
        except (UnicodeDecodeError, ImportRefused):
            raise self._changed() from None
        if size != self.size or digest.hexdigest() != self.sha256:
            raise self._changed()

    def whole_text(self) -> str:
        """The file's text at once: for a small file read whole (an `--expect` mapping)."""
        return "".join(self.pieces())

    def _changed(self) -> ImportRefused:
        return ImportRefused(
            f"{visible(str(self.path))}: changed while it was being imported (its bytes are no longer those "
            "hashed first); nothing is written: import it again once nothing writes to it"
        )


@dataclass(frozen=True)
class Located:
    """One record of the input and where it is: `where` is `LINE` in JSONL (or where a JSON object
    of the file starts), `item N` in a JSON array; `ordinal` its place among the file's records,
    counting those skipped, so a record passed over never renumbers the ones after it."""

    where: str
    value: Any
    ordinal: int = 1

    @property
    def name(self) -> str:
        """The record's name where its item has no id of its own: `line-N`, or `item-N` in an array."""
        return self.where.replace(" ", "-") if self.where.startswith("item ") else f"line-{self.where}"


# Bytes read at a time; the buffer a JSON list is decoded from holds a few pieces and one item.
CHUNK_BYTES = 1024 * 1024


DATASET = "the dataset's file"  # what SRC is, in a message asking for it


def _chunks(path: Path, limit: int, shown: str = "", wanted: str = DATASET) -> Iterator[bytes]:
    shown = shown or visible(str(path))
    try:
        yield from read_regular_chunks(str(path), limit, CHUNK_BYTES)
    except FileNotFoundError:
        raise ImportRefused(f"{shown}: no such file; give the path of {wanted}") from None
    except FileRefused as exc:
        raise ImportRefused(f"{shown}: {exc}") from None
    except OSError as exc:
        raise ImportRefused(f"{shown}: cannot read it: {exc.strerror}") from None


def read_source(
    path: Path, limit: int = MAX_INPUT_BYTES, skips: Skips | None = None, option: str = "", wanted: str = DATASET
) -> Source:
    """Check `path` (a regular file of at most `limit` bytes, UTF-8 text) and hash it, reading it a
    piece at a time: the records are read in a second pass (`Source.pieces`). `skips`: where a bad
    record is listed and passed over under `--skip-invalid` (by default each refuses the import).
    `option` and `wanted`: the option the path came from (none for SRC) and what it names, for a
    message refusing the path itself (`--expect x: a named pipe (FIFO), ...; give the expectations file`)."""
    plain = visible(str(path))  # a line of the file: `FILE:LINE`
    shown = f"{option} {plain}" if option else plain  # the path itself
    try:
        status = os.stat(path)
    except FileNotFoundError:
        raise ImportRefused(f"{shown}: no such file; give the path of {wanted}") from None
    except OSError as exc:
        raise ImportRefused(f"{shown}: cannot read it: {exc.strerror}") from None
    if not stat.S_ISREG(status.st_mode):
        raise ImportRefused(f"{shown}: {kind_of_mode(status.st_mode)}, not a regular file; give {wanted}")
    if status.st_size > limit:
        raise ImportRefused(
            f"{shown}: {status.st_size:,} bytes, over the {limit:,} an import reads; "
            "raise it with --max-input-bytes, or split the file"
        )
    digest, size, lines = hashlib.sha256(), 0, 0
    decoder = codecs.getincrementaldecoder("utf-8")()
    for data in _chunks(path, limit, shown, wanted):
        held = len(decoder.getstate()[0])  # bytes of a character the previous piece cut
        try:
            decoder.decode(data)
        except UnicodeDecodeError as exc:
            _not_utf8(plain, exc, size - held, lines)
        digest.update(data)
        size += len(data)
        lines += data.count(b"\n")
    held = len(decoder.getstate()[0])
    try:
        decoder.decode(b"", final=True)
    except UnicodeDecodeError as exc:
        _not_utf8(plain, exc, size - held, lines)
    return Source(path, digest.hexdigest(), size, limit, skips or Skips())


def _not_utf8(shown: str, exc: UnicodeDecodeError, offset: int, lines: int) -> NoReturn:
    """`exc.object` starts at byte `offset` of the file, after `lines` line breaks (the bytes of a
    cut character it starts with hold none)."""
    data = exc.object
    line = lines + data[: exc.start].count(b"\n") + 1
    raise ImportRefused(
        f"{shown}:{line}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {offset + exc.start}); save it as UTF-8"
    ) from None


def json_lines(source: Source) -> Iterator[Located]:
    """Each non-blank line of a JSONL file, decoded; a line that is not a JSON object is refused
    (or passed over, `--skip-invalid`). Lines end at `\n`, `\r\n` or `\r`, read a piece at a time."""
    ordinal = 0
    for number, line in enumerate(_lines(source), start=1):
        if not line.strip():
            continue
        ordinal += 1
        try:
            value = _object(source, str(number), line)
        except ImportRefused as refused:
            source.skips.take(refused)
            continue
        yield Located(str(number), value, ordinal)


def _lines(source: Source) -> Iterator[str]:
    """The lines of `"".join(source.pieces())`, ended by `\n`, `\r\n` or `\r` only, holding one piece
    and one line at a time; a line longer than MAX_RECORD_CHARS is refused as soon as its text passes
    it. Not `str.splitlines`: it also cuts at U+2028, U+2029 and U+0085, which a JSON string may hold
    raw, so a valid JSON Lines record holding one was cut in two and refused.

    Each piece is split once: the parts of a line not yet ended are kept as they come and joined
    once, when its end arrives, so a line of many pieces costs its length, not its length per piece."""
    held: list[str] = []  # the parts of the line read so far; a last `\r` may yet begin a `\r\n`
    size, number = 0, 1  # characters in `held`; the number of the line they begin
    for piece in source.pieces():
        if not piece:  # a piece of bytes that cut a character holds no text
            continue
        if held and held[-1].endswith("\r"):  # that line ended; a `\n` starting this piece is its own
            yield "".join(held)[:-1]
            held, size, number = [], 0, number + 1
            piece = piece.removeprefix("\n")
        parts = _split(piece)
        for part in parts[:-1]:  # each ends a line
            yield _without_break("".join((*held, part)))
            held, size, number = [], 0, number + 1
        if parts:
            held.append(parts[-1])
            size += len(parts[-1])
            if parts[-1][-1] in _BREAKS and parts[-1][-1] != "\r":
                yield _without_break("".join(held))
                held, size, number = [], 0, number + 1
            elif size > MAX_RECORD_CHARS:
                raise _too_long(source, str(number), "line")
    if held:
        last = "".join(held)  # one line, ended by nothing or by a `\r` that began no `\r\n`
        yield last.removesuffix("\r")


def _too_long(source: Source, where: str, what: str) -> ImportRefused:
    return source.refuse(
        where,
        "",
        f"a {what} of more than {MAX_RECORD_CHARS:,} characters, refused before it is decoded: no item this long "
        "fits a chronology of at most 1,048,576 bytes; split the item, or drop the fields it does not need",
    )


_BREAKS = frozenset("\n\r")  # the line ends JSON never holds raw: only JSON whitespace may
_LINE = re.compile(r"[^\r\n]*(?:\r\n?|\n)|[^\r\n]+")  # a line and its break (the last may have none)


def _without_break(line: str) -> str:
    """A line without the line break it ends with."""
    return line[:-2] if line.endswith("\r\n") else line[:-1]


def _split(text: str) -> list[str]:
    """`text`'s lines with their line breaks: the one place the splitter scans text."""
    return _LINE.findall(text)


class _Buffer:
    """The text of a JSON list between what was decoded and what is read next: `text[at:]` is
    still to decode, `lines` the line breaks before `text[0]`."""

    def __init__(self, source: Source) -> None:
        self.source, self.pieces = source, source.pieces()
        self.text, self.at, self.lines, self.ended = "", 0, 0, False

    def more(self) -> bool:
        """Read at least as much again as is undecoded (so a long item is decoded a few times,
        never once per piece); False at the end of the file."""
        if self.ended:
            return False
        self.lines += self.text.count("\n", 0, self.at)
        if len(self.text) - self.at > MAX_RECORD_CHARS:  # the value begun at `at` is still undecoded
            raise _too_long(self.source, str(self.line(self.at)), "JSON value")
        rest, self.at = self.text[self.at :], 0
        added: list[str] = []
        wanted = max(min(len(rest), MAX_RECORD_CHARS + 1 - len(rest)), 1)  # never read far past the bound
        while sum(map(len, added)) < wanted:
            piece = next(self.pieces, None)
            if piece is None:
                self.ended = True
                break
            added.append(piece)
        self.text = rest + "".join(added)
        return bool(added)

    def next_char(self) -> str:
        """The next character that is not JSON whitespace ('' at the end), `at` moved to it."""
        while True:
            self.at = _skip(self.text, self.at)
            if self.at < len(self.text):
                return self.text[self.at]
            if not self.more():
                return ""

    def line(self, position: int) -> int:
        return self.lines + self.text.count("\n", 0, position) + 1


def json_list(source: Source) -> Iterator[Located]:
    """Each object of a file holding one JSON list (`item 1` is its first), decoded one at a time:
    the file is read a piece at a time, never all of its items (nor all of its text) at once."""
    buffer = _Buffer(source)
    if buffer.next_char() != "[":
        raise source.refuse("1", "", "not a JSON list of items; give the dataset's file as published")
    buffer.at += 1
    index = 0
    while buffer.next_char() != "]":
        if index:
            if buffer.next_char() != ",":
                raise _not_json(source, buffer, buffer.at, "expected ',' or ']' between items")
            buffer.at += 1
            buffer.next_char()
        index += 1
        item = _decoded(source, buffer, f"item {index}")
        if not isinstance(item, dict):
            source.skips.take(
                source.refuse(
                    f"item {index}", "", f"a JSON {json_type(item)}, not an object; each item of the array is one"
                )
            )
            continue
        yield Located(f"item {index}", item, index)
    buffer.at += 1
    if buffer.next_char():
        raise _not_json(source, buffer, buffer.at, "text after the list")


def _decoded(source: Source, buffer: _Buffer, where: str) -> Any:
    """The value at `buffer.at`, read on until it is whole (a value ends before the buffer does,
    or at the end of the file), within the bounds of `json_bounded` (even in fields no importer reads)."""
    while True:
        try:
            value, end = json_bounded.raw_decode(buffer.text, buffer.at, what=f"{where}")
        except JsonBounded as exc:  # a number too long or nesting too deep: more text changes nothing
            raise source.refuse(str(buffer.line(exc.pos)), "", f"{exc.msg}") from None
        except json.JSONDecodeError as exc:
            if _cut(buffer.text, exc) and buffer.more():
                continue
            raise _not_json(source, buffer, exc.pos, exc.msg) from None
        if end < len(buffer.text) or not buffer.more():
            buffer.at = end
            return value


def _cut(text: str, exc: json.JSONDecodeError) -> bool:
    """Whether the error may be the buffer's end cutting a value short: a string that runs to it,
    or an error within a few characters of it (a number, `true`, an escape cut). Any other error is
    the file's, said without reading further."""
    return exc.msg.startswith("Unterminated string") or exc.pos >= len(text) - _CUT


_CUT = 16  # characters before the buffer's end where a cut value fails (`\uXXXX`, `false`, `1e-`)


def _skip(text: str, position: int) -> int:
    """The first position at or after `position` that is not JSON whitespace."""
    while position < len(text) and text[position] in " \t\r\n":
        position += 1
    return position


def _not_json(source: Source, buffer: _Buffer, position: int, what: str) -> ImportRefused:
    return source.refuse(str(buffer.line(position)), "", f"not JSON ({what}); give the dataset's file as published")


def json_records(source: Source) -> Iterator[Located]:
    """The file's records, whichever of the shapes datasets are passed around in it holds: a JSON
    array of objects (the file starts with `[`), JSON Lines (its first line is JSON, or a broken
    object followed by a line that is one), or a JSON object written over several lines (or several,
    one after another). Any other shape is refused, naming the shape found."""
    first = next((piece.lstrip()[:1] for piece in source.pieces() if piece.lstrip()), "")
    if first == "[":
        return json_list(source)
    number, line = next(((n, text) for n, text in enumerate(_lines(source), 1) if text.strip()), (0, ""))
    if not number:
        return iter(())  # an empty file holds no item: the import says so
    try:
        value = json_bounded.loads(line, what=f"line {number}")
    except JsonBounded as exc:
        raise source.refuse(str(number), "", exc.msg) from None
    except json.JSONDecodeError as exc:
        if first == "{" and not _next_line_is_object(source, number):
            return json_objects(source)  # an object over several lines: decoded as one value
        if first == "{":
            return json_lines(source)  # JSONL whose first line is broken: refused, or passed over
        raise source.refuse(str(number), "", f"not JSON ({exc.msg}); {_SHAPES}") from None
    # An object, or a non-blank line follows: the file is meant as JSONL.
    if isinstance(value, dict) or any(n > number and text.strip() for n, text in enumerate(_lines(source), 1)):
        return json_lines(source)  # a first line that is no object is refused there, or passed over
    raise source.refuse(str(number), "", f"a JSON {json_type(value)}, not an object; {_SHAPES}")


_SHAPES = "give JSON Lines (one JSON object a line), a JSON array of objects, or one JSON object"


def _next_line_is_object(source: Source, number: int) -> bool:
    """Whether the next non-blank line after line `number` is a JSON object by itself: JSONL, not
    the second line of an object written over several (`"a": 1,` is no JSON value)."""
    lines = ((n, text) for n, text in enumerate(_lines(source), 1) if n > number and text.strip())
    _, line = next(lines, (0, ""))
    try:
        return isinstance(json_bounded.loads(line, what="the next line"), dict)
    except json.JSONDecodeError:  # JsonBounded too: that line is refused where it is decoded as a record
        return False


def json_objects(source: Source) -> Iterator[Located]:
    """Each JSON object of a file holding one (or several, one after another), at the line it
    starts on, decoded one at a time."""
    buffer, ordinal = _Buffer(source), 0
    while buffer.next_char():
        ordinal += 1
        line = buffer.line(buffer.at)
        value = _decoded(source, buffer, f"the object at line {line}")
        if not isinstance(value, dict):
            source.skips.take(
                source.refuse(str(line), "", f"a JSON {json_type(value)} after the object before it; {_SHAPES}")
            )
            continue
        yield Located(str(line), value, ordinal)


def _object(source: Source, where: str, line: str) -> dict[str, Any]:
    try:
        value = json_bounded.loads(line, what=f"line {where}")
    except JsonBounded as exc:
        raise source.refuse(where, "", f"{exc.msg} (column {exc.colno})") from None
    except json.JSONDecodeError as exc:
        raise source.refuse(
            where, "", f"not JSON ({exc.msg} at column {exc.colno}); JSONL holds one JSON object a line: fix the line"
        ) from None
    if not isinstance(value, dict):
        raise source.refuse(
            where,
            "",
            f"JSONL whose line {where} is a JSON {json_type(value)}, not an object; one JSON object a line: fix the line",
        )
    return value


def text_field(source: Source, where: str, record: dict[str, Any], *names: str) -> tuple[str, str]:
    """(the field's name, its text): the first of `names` the record has, a non-empty string of
    valid Unicode; anything else refused naming the field."""
    name = next((n for n in names if n in record), names[0])
    if name not in record:
        raise source.refuse(where, name, "missing; every item needs it (" + " or ".join(names) + ")")
    return name, checked_text(source, where, name, record[name])


def message_role(source: Source, where: str, field: str, message: object, roles: tuple[str, ...]) -> str:
    """The role of one recorded message (an object with `role` and `content`), one of `roles`;
    anything else refused naming the field."""
    if not isinstance(message, dict):
        raise source.refuse(where, field, f"a {json_type(message)}, not an object with role and content")
    role = message.get("role")
    if role not in roles:
        raise source.refuse(where, f"{field}.role", f"{shown(role)} is not {', '.join(roles[:-1])} or {roles[-1]}")
    return str(role)


def checked_text(source: Source, where: str, field: str, value: object) -> str:
    """`value` if it is a non-empty string of valid Unicode; else refused naming `field`."""
    if not isinstance(value, str):
        raise source.refuse(where, field, f"a {json_type(value)}, not a string; give text")
    if not value.strip():
        raise source.refuse(where, field, "empty; a chronology message holds text")
    if valid_unicode(value)[1]:
        raise source.refuse(where, field, "holds a lone UTF-16 surrogate (\\ud800-\\udfff), not text; fix the item")
    return value


# What each format's data is published under, as its publisher names it (docs/importing.md): None
# when no licence could be confirmed; OWN_LOGS for a user's own chat logs, which need no --accept-licence.
OWN_LOGS = "own logs, no licence named"
KNOWN_LICENCES: dict[str, str | None] = {
    "openai-chat": OWN_LOGS,
    "sharegpt": OWN_LOGS,
    "compactbench": "Apache-2.0",  # github.com/compactbench/compactbench LICENSE: its templates and generated cases
    "multichallenge": None,
    "longmemeval": "MIT",  # github.com/xiaowu0162/LongMemEval LICENSE; the Hugging Face dataset card
    "factconsolidation": "MIT",  # MemoryAgentBench (Hugging Face ai-hyz/MemoryAgentBench)
    "locomo": "CC BY-NC 4.0",  # github.com/snap-research/LoCoMo LICENSE.txt (Attribution-NonCommercial 4.0)
    "mrcr": "MIT",  # the Hugging Face dataset card of openai/mrcr
}
_NON_COMMERCIAL = ("-nc", "noncommercial", "non-commercial", "research only", "research-only")


def licence_for(format_name: str, accepted: str | None) -> str:
    """The licence recorded in every chronology's `source:`.

    The format's known licence when it is one that allows any use; a missing or non-commercial one
    is refused unless `--accept-licence` names it (for a missing one, the name given is recorded).
    A chat log is the user's own: the name given, if any, is recorded, else `OWN_LOGS`.
    """
    known = KNOWN_LICENCES[format_name]
    if accepted is not None and not accepted.strip():  # a blank name would record no licence and pass the gate
        raise ImportRefused(
            f"--accept-licence {shown(accepted)}: a blank name; name the licence the data is yours under "
            "(e.g. --accept-licence CC-BY-4.0), or leave the option out"
        )
    if known == OWN_LOGS:  # the user's own logs: a name given is recorded (a published set's licence), none needed
        return accepted if accepted is not None else OWN_LOGS
    if known is None:
        if accepted is None:
            raise ImportRefused(
                f"{format_name}: no licence is known for this source; if you may use it, name the licence "
                f"it is yours under with --accept-licence NAME (recorded in every chronology's source:)"
            )
        return accepted
    if any(mark in known.lower().replace("_", "-") for mark in _NON_COMMERCIAL) and accepted != known:
        raise ImportRefused(
            f"{format_name}: the data is licensed {known}, a non-commercial licence; "
            f"if your use complies, accept it by name: --accept-licence {known}"
        )
    if accepted is not None and accepted != known:
        raise ImportRefused(
            f"{format_name}: --accept-licence {shown(accepted)}: this source's licence is {known}; drop the option"
        )
    return known
