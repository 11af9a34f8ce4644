"""Chronology patterns (`present`, `violated_by`, `required`): compiled once, matched in linear time.

A pattern comes from a user's file and is matched against answers of any length, so it runs on
RE2 (the `google-re2` binding): matching takes time linear in the text, whatever the pattern,
so `(a+)+$` cannot hang a run the way it hangs a backtracking engine. RE2 has no
backreferences or lookarounds; such a pattern is refused when the chronology loads, with what
to write instead. This is the only module that imports `re2`: the rest of the harness sees a
`Pattern` with `.pattern` and `.search(text)` and does not care which engine runs.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Protocol

import re2  # type: ignore[import-untyped]  # google-re2 ships no type information

__all__ = ["MAX_LENGTH", "MAX_NESTING", "MAX_PROGRAM_SIZE", "MAX_REPEAT", "Pattern", "PatternError", "compile_pattern"]

MAX_LENGTH = 1000  # characters of pattern text: a recognizer, not a document
MAX_NESTING = 100  # groups inside groups
MAX_REPEAT = 1000  # largest count in {n}, {n,} or {n,m}, RE2's own limit
# Matching time is linear in the text; the factor is small while RE2's DFA copes and grows with
# the compiled program's size when it gives up (`(.*a){300}`: 3,300 instructions, 37 s per MB).
# 2,000 instructions keeps the worst case near 15 s per MB of text on a busy 2-core machine,
# milliseconds for the KB-sized answers of a run, and admits Unicode classes (`\pL` is 1,200).
# The shipped patterns compile to 11-42.
MAX_PROGRAM_SIZE = 2000

# RE2's error texts (re2/regexp.cc), each with what to write instead; the first match applies.
_HINTS: tuple[tuple[str, str], ...] = (
    (
        r"invalid escape sequence: \\[1-9]",
        "backreferences (\\1 ...) are not supported; repeat the group's text instead",
    ),
    (r"invalid escape sequence: \\Z", "write \\z (end of text) instead of \\Z"),
    (r"invalid escape sequence", "escape only punctuation, or use a known class (\\d \\s \\w \\b \\pL)"),
    (r"invalid perl operator: \(\?=", "lookahead (?=...) is not supported; match the text itself"),
    (
        r"invalid perl operator: \(\?!",
        "negative lookahead (?!...) is not supported; say what must be there with required: instead",
    ),
    (r"invalid perl operator: \(\?<=", "lookbehind (?<=...) is not supported; match the preceding text too"),
    (
        r"invalid perl operator: \(\?<!",
        "negative lookbehind (?<!...) is not supported; use \\b or a class such as [^x] before it",
    ),
    (
        r"invalid perl operator: \(\?P",
        "named backreferences (?P=name) are not supported; repeat the group's text instead",
    ),
    (r"invalid perl operator: \(\?>", "atomic groups are not needed, matching never backtracks: write (?:...)"),
    (r"invalid perl operator: \(\?\(", "conditionals (?(1)...) are not supported; write the alternatives with |"),
    (r"invalid perl operator", "the flags RE2 knows are i, m, s and U, as in (?i) or (?im:...)"),
    (
        r"bad repetition operator",
        "possessive (a*+) and doubled (a**) repetitions are not supported; write a* or (?:a*)*",
    ),
    (r"invalid repetition size", f"a count is at most {MAX_REPEAT}, nested counts multiply; use + or * instead"),
    (r"pattern too large", "it compiles too large; use + or * instead of large counts, and fewer alternatives"),
    (r"missing \)", "a group is not closed; add ) or escape the ( as \\("),
    (r"unexpected \)", "a ) closes no group; remove it or escape it as \\)"),
    (r"missing \]", "a character class is not closed; add ] or escape the [ as \\["),
    (
        r"no argument for repetition operator",
        "*, + and ? repeat what comes before them; write \\* (or \\+, \\?) for the character",
    ),
    (r"trailing \\", "the pattern ends with a lone \\; write \\\\ for a backslash"),
    (
        r"invalid character class range",
        "a range runs from low to high ([a-z]); classes are written [[:alpha:]], \\pL or \\p{Greek}",
    ),
)


class PatternError(ValueError):
    """A pattern the harness cannot run; the message says why and what to write instead."""


class Compiled(Protocol):
    """What the harness uses of a compiled RE2 pattern."""

    def search(self, text: str) -> object: ...


@dataclass(frozen=True)
class Pattern:
    """A compiled chronology pattern. Two patterns are equal when their texts are."""

    pattern: str
    _compiled: Compiled = field(repr=False, compare=False)

    def search(self, text: str) -> bool:
        """Does the pattern match anywhere in `text` (unless anchored with ^ or $)?"""
        try:
            return self._compiled.search(text) is not None
        except UnicodeEncodeError:  # a lone surrogate (e.g. an answer's JSON "\\ud800") has no UTF-8 form
            return self._compiled.search(text.encode("utf-8", "replace").decode("utf-8")) is not None


@functools.lru_cache(maxsize=512)
def compile_pattern(text: str) -> Pattern:
    """Compile `text` for RE2; raise `PatternError` saying what to write instead when it cannot run."""
    _check_shape(text)
    _check_encodable(text)
    options = re2.Options()
    options.log_errors = False  # RE2 would print each refusal on stderr beside our own message
    try:
        compiled = re2.compile(text, options)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else str(exc)
        reason = reason.decode("utf-8", "replace") if isinstance(reason, bytes) else str(reason)
        hint = next((f"; {hint}" for start, hint in _HINTS if re.match(start, reason)), "")
        raise PatternError(f"RE2 cannot run it ({reason}){hint}") from None
    size = max(compiled.programsize, compiled.reverseprogramsize)
    if size > MAX_PROGRAM_SIZE:
        raise PatternError(
            f"it compiles to {size} instructions, more than {MAX_PROGRAM_SIZE}, and could take seconds "
            "per answer; use + or * instead of large counts, and fewer alternatives"
        )
    return Pattern(text, compiled)


def _check_encodable(text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        message = "it holds half a character (a lone surrogate, e.g. from \\ud800); write the character itself"
        raise PatternError(message) from None


# Outside a character class: an escape, a class, a group opening or closing, or a counted repetition.
_TOKEN = re.compile(r"\\.|\[|\(|\)|\{(\d+)(?:,(\d*))?\}", re.DOTALL)
_CLASS_BODY = re.compile(r"\^?\]?(?:\\.|\[:\^?[a-z]+:\]|[^\]\\])*\]?", re.DOTALL)


def _check_shape(text: str) -> None:
    """Refuse what RE2 would accept but should not run here: huge texts, deep nesting, and counts
    RE2 silently reads as literal text (`a{4294967296}` matches the characters "a{4294967296}")."""
    if len(text) > MAX_LENGTH:
        raise PatternError(
            f"{len(text)} characters, more than {MAX_LENGTH}; a pattern should recognise a phrase: shorten it"
        )
    depth, position = 0, 0
    while (token := _TOKEN.search(text, position)) is not None:
        position = token.end()
        kind = token.group()
        if kind == "[":
            position = _CLASS_BODY.match(text, position).end()  # type: ignore[union-attr]  # always matches
        elif kind == "(":
            depth += 1
            if depth > MAX_NESTING:
                raise PatternError(f"groups nest more than {MAX_NESTING} deep; flatten it")
        elif kind == ")":
            depth = max(depth - 1, 0)  # an unbalanced ) is RE2's to report
        elif kind.startswith("{"):
            _check_counts(kind, token.group(1), token.group(2))


def _check_counts(written: str, low: str, high: str | None) -> None:
    counts = [low] + ([high] if high else [])
    if any(len(count) > 6 or int(count) > MAX_REPEAT for count in counts):
        raise PatternError(
            f"the repetition {written} counts beyond {MAX_REPEAT}; use + or * (or {{1,{MAX_REPEAT}}}) instead"
        )
    if high and int(high) < int(low):
        raise PatternError(f"the repetition {written} counts down; write the smaller count first, {{{high},{low}}}")
