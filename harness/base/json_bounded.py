"""The one reader of JSON the harness did not write itself: an import file, an endpoint's reply,
a chronology's tool arguments, an `--expect` file, a writer's or judge's answer.

Python's own reader has two ways to end in a traceback instead of a message: an integer of more
than 4,300 digits (a plain `ValueError` from `int`) and nesting deeper than the interpreter's
recursion limit (`RecursionError`). Text nested a few hundred deep that Python does read then
breaks the recursive code that walks the value afterwards. So every outside value is read here,
within three bounds:

- **digits**: a number of more than `MAX_DIGITS` characters is refused before it is converted
  (no count, id or score needs more; the conversion of a long integer is quadratic);
- **depth**: arrays and objects nested more than `MAX_DEPTH` deep are refused (no message, tool
  argument or dataset record the harness reads comes near it);
- **size**: `limit`, when the caller gives one, bounds the characters read at all.

Every refusal is a `JsonBounded`, a `json.JSONDecodeError`: each caller already turns that
into its own located message (file, line, field), and its `msg` says which bound and what to do.
"""

from __future__ import annotations

import json
import re
from itertools import accumulate
from typing import Any

__all__ = ["MAX_DEPTH", "MAX_DIGITS", "JsonBounded", "LongNumber", "json_type", "loads", "raw_decode"]

MAX_DIGITS = 100  # characters of one number, sign, point and exponent included
MAX_DEPTH = 200  # arrays and objects, one inside another


class JsonBounded(json.JSONDecodeError):
    """JSON the harness will not read whole: a number too long, nesting too deep, text too large.
    `msg` names the bound and what to do; `pos`, `lineno` and `colno` where it was met."""


class LongNumber(str):
    """A number longer than `MAX_DIGITS`, kept as its text by `loads(..., keep_long_numbers=True)`:
    an endpoint's reply is not lost for one absurd usage figure, which is then no count (not an
    `int`) and recorded as unknown, its text kept as the note."""


class _LongNumber(Exception):
    """Raised from inside the decoder's number hooks, with the number's text."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


def _int(text: str) -> int:
    if len(text) > MAX_DIGITS:
        raise _LongNumber(text)
    return int(text)


def _float(text: str) -> float:
    if len(text) > MAX_DIGITS:
        raise _LongNumber(text)
    return float(text)


def _kept(text: str) -> int | float | LongNumber:
    if len(text) > MAX_DIGITS:
        return LongNumber(text)
    return float(text) if any(c in text for c in ".eE") else int(text)


_DECODER = json.JSONDecoder(parse_int=_int, parse_float=_float)
_KEEPING = json.JSONDecoder(parse_int=_kept, parse_float=_kept)

# A JSON string (escapes included) or a bracket: strings are skipped whole, so a bracket quoted in
# a string is never counted.
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_BRACKET = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def loads(
    text: str | bytes,
    *,
    what: str,
    limit: int | None = None,
    keep_long_numbers: bool = False,
    max_depth: int | None = MAX_DEPTH,
) -> Any:
    """The value `text` holds, read within the bounds; `what` names it in a refusal (`"the tool
    arguments"`, `"the endpoint's reply"`). Any other fault is the usual `json.JSONDecodeError`.
    With `keep_long_numbers` a number over `MAX_DIGITS` is read as a `LongNumber`, not refused;
    `max_depth` None leaves the depth to the interpreter's limit (still refused as a `JsonBounded`,
    never a `RecursionError`), for a caller whose own walk of the value is bounded (an endpoint's
    reply: a deep field beside the answer is dropped there, the answer kept)."""
    if isinstance(text, bytes | bytearray):
        text = bytes(text).decode(json.detect_encoding(text), "surrogatepass")  # as `json.loads` decodes bytes
    if limit is not None and len(text) > limit:
        raise JsonBounded(f"{what} is {len(text):,} characters, over the {limit:,} read; give a smaller one", text, 0)
    value, end = raw_decode(
        text, 0, what=what, whitespace=True, keep_long_numbers=keep_long_numbers, max_depth=max_depth
    )
    end = _skip_space(text, end)
    if end != len(text):
        raise json.JSONDecodeError("Extra data", text, end)
    return value


def raw_decode(
    text: str,
    at: int = 0,
    *,
    what: str,
    whitespace: bool = False,
    keep_long_numbers: bool = False,
    max_depth: int | None = MAX_DEPTH,
) -> tuple[Any, int]:
    """The value starting at `at` and where it ends, as `json.JSONDecoder.raw_decode`, within
    the bounds (the depth is checked over the value's own text, so a long buffer costs nothing
    more)."""
    start = _skip_space(text, at) if whitespace else at
    try:
        value, end = (_KEEPING if keep_long_numbers else _DECODER).raw_decode(text, start)
    except _LongNumber as exc:
        where = text.find(exc.text, start)
        raise JsonBounded(
            f"{what}: a number of {len(exc.text):,} characters, over the {MAX_DIGITS} read; no count or id needs "
            "more: give the number as a string or fix the input",
            text,
            max(where, start),
        ) from None
    except RecursionError:
        raise _too_deep(text, start, len(text), what, max_depth or MAX_DEPTH) from None
    if max_depth is not None and text.count("[", start, end) + text.count("{", start, end) > max_depth:
        if _depth(text[start:end]) > max_depth:
            raise _too_deep(text, start, end, what, max_depth)
    return value, end


def _skip_space(text: str, at: int) -> int:
    while at < len(text) and text[at] in " \t\r\n":
        at += 1
    return at


def _depth(text: str) -> int:
    """How deep the arrays and objects of `text` nest (valid JSON; strings are skipped)."""
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0)


def _too_deep(text: str, start: int, end: int, what: str, bound: int) -> JsonBounded:
    """The refusal of nesting deeper than `bound`, at the bracket that goes past it."""
    depth, position = 0, start
    for match in _BRACKET.finditer(text, start, end):
        step = _STEP.get(match.group(), 0)
        depth += step
        if depth > bound:
            position = match.start()
            break
    return JsonBounded(
        f"{what}: arrays or objects nested more than {bound} deep, the most read; flatten it or fix the input",
        text,
        position,
    )


def json_type(value: object) -> str:
    """The JSON name of a decoded value's type, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):  # before int: bool is an int subclass
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    names: dict[type, str] = {str: "string", list: "array", dict: "object"}
    return names.get(type(value), type(value).__name__)
