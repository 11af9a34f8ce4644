"""RE2 patterns made of a piece of text: what an importer derives from a dataset's words.

A pattern is the text itself (every RE2 metacharacter escaped), its runs of whitespace matching any
run of whitespace, so a quotation re-wrapped by a summary still matches; nothing else is widened.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from harness.chronology.patterns import MAX_LENGTH, PatternError, compile_pattern

__all__ = ["MAX_SPAN", "alternatives", "distinctive_span", "literal"]

_META = frozenset("\\.+*?()|[]{}^$")
MAX_SPAN = 80  # characters of an instruction quoted as a `present` pattern: distinctive, still short
_SPACES = "\t\n\f\r "  # what RE2's `\s` matches (Perl's class; Python's `\s` holds more)
_SPACE = re.compile(f"([{_SPACES}]+)")
_SENTENCE_END = re.compile(r"(?<=[.!?;:])\s+|\n+")


def literal(text: str) -> str:
    """An RE2 pattern matching exactly `text`, any run of whitespace matching any other."""
    out: list[str] = []
    for part in _SPACE.split(text.strip(_SPACES)):
        if not part:
            continue
        if _SPACE.fullmatch(part):
            out.append(r"\s+")
        else:
            out.append("".join("\\" + c if c in _META else c for c in part))
    return "".join(out)


def alternatives(texts: Sequence[str], ignore_case: bool = True) -> str | None:
    """One pattern matching any of `texts` as a whole word or phrase (`\\b` on a side that is a word
    character), case folded when `ignore_case`; None when it would exceed what a pattern may be."""
    parts = []
    for text in dict.fromkeys(t.strip() for t in texts if t.strip()):
        body = literal(text)
        left = r"\b" if _word(text[0]) else ""
        right = r"\b" if _word(text[-1]) else ""
        parts.append(f"{left}{body}{right}")
    if not parts:
        return None
    pattern = ("(?i)" if ignore_case else "") + (parts[0] if len(parts) == 1 else "(?:" + "|".join(parts) + ")")
    if len(pattern) > MAX_LENGTH:
        return None
    try:
        compile_pattern(pattern)
    except PatternError:
        return None
    return pattern


def distinctive_span(text: str) -> str:
    """The span of `text` a `present` pattern quotes: its longest sentence (a line or a run ending
    in `.`, `!`, `?`, `;` or `:`), cut to at most MAX_SPAN characters at a word boundary."""
    sentences = [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]
    longest = max(sentences, key=len) if sentences else text.strip()
    if len(longest) <= MAX_SPAN:
        return longest
    cut = longest[:MAX_SPAN]
    space = cut.rfind(" ")
    return cut[:space] if space > MAX_SPAN // 2 else cut


def _word(char: str) -> bool:
    """An ASCII word character: RE2's `\\b` knows only these."""
    return char.isascii() and (char.isalnum() or char == "_")
