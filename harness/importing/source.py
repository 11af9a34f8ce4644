"""The input file of an import: its bytes within a cap, their SHA-256, the records it holds, and the
licence its data is used under.

Every problem is an `ImportRefused` (exit status 2) naming the file, the line or item, the field
and what to do.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.base.errors import InputError
from harness.base.files import FileRefused, kind_of_mode, read_regular_file
from harness.base.text import valid_unicode, visible

__all__ = [
    "MAX_INPUT_BYTES",
    "ImportRefused",
    "Located",
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


class ImportRefused(InputError):
    """An input the importer cannot turn into chronologies; the message says where and what to do."""


@dataclass(frozen=True)
class Source:
    """The input file as read: its path as given, its text and the SHA-256 of its bytes."""

    path: Path
    text: str
    sha256: str

    def refuse(self, where: str, field: str, message: str) -> ImportRefused:
        """`FILE:WHERE: FIELD: message`, the one shape of every problem with an item."""
        place = f"{visible(str(self.path))}:{where}"
        return ImportRefused(f"{place}: {visible(field)}: {message}" if field else f"{place}: {message}")


@dataclass(frozen=True)
class Located:
    """One record of the input and where it is: `where` is `LINE` in a JSONL file, `item N` in a JSON list."""

    where: str
    value: Any


def read_source(path: Path, limit: int = MAX_INPUT_BYTES) -> Source:
    """Read `path` whole (a regular file of at most `limit` bytes, UTF-8 text)."""
    shown = visible(str(path))
    try:
        status = os.stat(path)
        if not stat.S_ISREG(status.st_mode):
            raise ImportRefused(f"{shown}: {kind_of_mode(status.st_mode)}, not a regular file; give the dataset's file")
        if status.st_size > limit:
            raise ImportRefused(
                f"{shown}: {status.st_size:,} bytes, over the {limit:,} an import reads; "
                "raise it with --max-input-bytes, or split the file"
            )
        data = read_regular_file(str(path), limit)
    except FileNotFoundError:
        raise ImportRefused(f"{shown}: no such file; give the path of the dataset's file") from None
    except FileRefused as exc:
        raise ImportRefused(f"{shown}: {exc}") from None
    except OSError as exc:
        raise ImportRefused(f"{shown}: cannot read it: {exc.strerror}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ImportRefused(
            f"{shown}:{line}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}); save it as UTF-8"
        ) from None
    return Source(path, text, hashlib.sha256(data).hexdigest())


def json_lines(source: Source) -> Iterator[Located]:
    """Each non-blank line of a JSONL file, decoded; a line that is not a JSON object is refused."""
    for number, line in enumerate(source.text.splitlines(), start=1):
        if not line.strip():
            continue
        yield Located(str(number), _object(source, str(number), line))


def json_list(source: Source) -> Iterator[Located]:
    """Each object of a file holding one JSON list (`item 1` is its first), decoded one at a time:
    the file's text is held once, never all of its items at once."""
    text, decoder = source.text, json.JSONDecoder()
    position = _skip(text, 0)
    if text[position : position + 1] != "[":
        raise source.refuse("1", "", "not a JSON list of items; give the dataset's file as published")
    position, index = _skip(text, position + 1), 0
    while text[position : position + 1] != "]":
        if index:
            if text[position : position + 1] != ",":
                raise _not_json(source, text, position, "expected ',' or ']' between items")
            position = _skip(text, position + 1)
        index += 1
        try:
            item, position = decoder.raw_decode(text, position)
        except json.JSONDecodeError as exc:
            raise _not_json(source, text, exc.pos, exc.msg) from None
        except RecursionError:
            raise source.refuse(
                f"item {index}", "", "JSON nested too deeply; give the dataset's file as published"
            ) from None
        if not isinstance(item, dict):
            raise source.refuse(f"item {index}", "", f"a JSON {json_type(item)}, not an object; each item is one")
        yield Located(f"item {index}", item)
        position = _skip(text, position)
    if text[_skip(text, position + 1) :]:
        raise _not_json(source, text, _skip(text, position + 1), "text after the list")


def _skip(text: str, position: int) -> int:
    """The first position at or after `position` that is not JSON whitespace."""
    while position < len(text) and text[position] in " \t\r\n":
        position += 1
    return position


def _not_json(source: Source, text: str, position: int, what: str) -> ImportRefused:
    line = text.count("\n", 0, position) + 1
    return source.refuse(str(line), "", f"not JSON ({what}); give the dataset's file as published")


def json_records(source: Source) -> Iterator[Located]:
    """A JSON list (the file starts with `[`) or JSONL: both are how these datasets are passed around."""
    return json_list(source) if source.text.lstrip().startswith("[") else json_lines(source)


def _object(source: Source, where: str, line: str) -> dict[str, Any]:
    try:
        value = json.loads(line)
    except json.JSONDecodeError as exc:
        raise source.refuse(where, "", f"not JSON ({exc.msg} at column {exc.colno}); one JSON object a line") from None
    except RecursionError:
        raise source.refuse(where, "", "JSON nested too deeply; one JSON object a line") from None
    if not isinstance(value, dict):
        raise source.refuse(where, "", f"a JSON {json_type(value)}, not an object; one JSON object a line")
    return value


def json_type(value: object) -> str:
    """The JSON name of a decoded value's type, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    names: dict[type, str] = {str: "string", list: "array", dict: "object"}
    return names.get(type(value), type(value).__name__)


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
        raise source.refuse(where, f"{field}.role", f"{role!r} is not {', '.join(roles[:-1])} or {roles[-1]}")
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
# when no licence could be confirmed. Logs are the user's own and carry none.
KNOWN_LICENCES: dict[str, str | None] = {
    "openai-chat": None,
    "multichallenge": None,
    "longmemeval": "MIT",  # github.com/xiaowu0162/LongMemEval LICENSE; the Hugging Face dataset card
    "factconsolidation": "MIT",  # MemoryAgentBench (Hugging Face ai-hyz/MemoryAgentBench)
}
_NON_COMMERCIAL = ("-nc", "noncommercial", "non-commercial", "research only", "research-only")


def is_non_commercial(licence: str) -> bool:
    folded = licence.lower().replace("_", "-")
    return any(mark in folded for mark in _NON_COMMERCIAL)


def licence_for(format_name: str, accepted: str | None) -> str:
    """The licence recorded in every chronology's `source:`.

    The format's known licence when it is one that allows any use; a missing or non-commercial one
    is refused unless `--accept-licence` names it (for a missing one, the name given is recorded).
    """
    known = KNOWN_LICENCES[format_name]
    if known is None:
        if accepted is None:
            raise ImportRefused(
                f"{format_name}: no licence is known for this source; if you may use it, name the licence "
                f"it is yours under with --accept-licence NAME (recorded in every chronology's source:)"
            )
        return accepted
    if is_non_commercial(known) and accepted != known:
        raise ImportRefused(
            f"{format_name}: the data is licensed {known}, a non-commercial licence; "
            f"if your use complies, accept it by name: --accept-licence {known}"
        )
    if accepted is not None and accepted != known:
        raise ImportRefused(
            f"{format_name}: --accept-licence {accepted}: this source's licence is {known}; drop the option"
        )
    return known
