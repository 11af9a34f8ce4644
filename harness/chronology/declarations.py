"""The one reader of `key=value` declarations: the fact store, the checks and the reference
model all call it, so the model, the memory and the checks can never disagree about what the
user declared.

The rule is the seed's, exactly: a declaration is a whole segment of a message, segments being
separated by `;` or line breaks; the key is one of the key set (the seed's ten, `ALLOWED_KEYS`,
unless a chronology names its own with `keys:`); a segment ending with `?` is a question, never
a declaration; the last declaration of a repeated key wins. `version=4.2.1` at the end of
the sentence `Sorry, I misread the tag. version=4.2.1` is therefore *not* a declaration (its
segment's key would be `Sorry, I misread the tag. version`). `near_misses` finds such text, and
`outside_keys` the segments shaped like a declaration whose key is not in the set, so `harness
validate` can warn about both and say what would be read.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Collection
from dataclasses import dataclass
from functools import cache

from harness.base.text import excerpt, shown

ALLOWED_KEYS: tuple[str, ...] = (
    "product",
    "module",
    "priority",
    "database",
    "constraint",
    "customer",
    "version",
    "environment",
    "symptom",
    "log",
)

# Exactly the seed's separators. Other line breaks (\v, \x85, \u2028) stay inside a segment:
# widening the set would admit declarations the seed's parser does not.
_SEPARATORS = re.compile(r"[;\n\r]")

# What a key may be: the pattern of a session name (`keys:` is validated against it), so a
# key never holds a separator, `=`, `?` or space and is read back exactly as written.
KEY_PATTERN = r"^[A-Za-z0-9_-]+$"

# A segment shaped like a declaration (`word=value`), whatever its key.
_SHAPED = re.compile(r"([A-Za-z0-9_-]+)\s*=\s*\S")

# The longest value a declaration or `sets:` may state: what the fact store admits
# (`harness.policy.facts`). The checks look for every value in every text that names its key;
# a megabyte-long value would make each look quadratic in the text (validation refuses it).
MAX_VALUE_CHARS = 256


@cache
def _key_anywhere(keys: frozenset[str]) -> re.Pattern[str]:
    """`key=` for a key of the set anywhere in a text, not inside a longer word (`my-module=x`)."""
    # Longest first, so that of two keys where one begins the other the longer is tried first.
    alternatives = "|".join(re.escape(key) for key in sorted(keys, key=lambda k: (-len(k), k)))
    return re.compile(rf"(?<![\w-])({alternatives})\s*=\s*\S")


@dataclass(frozen=True)
class Declaration:
    """One explicit `key=value` assertion; `evidence` is the segment as written, stripped."""

    key: str
    value: str
    evidence: str  # always an ordinal substring of the parsed text


@cache
def key_name(key: str) -> re.Pattern[str]:
    """A key named in prose: the key as a whole word (not inside `my-module` or `modules2`), its
    plural with -s or -es, and -y made -ies (`priorities`, `allergies`), in any case. The one
    reading of a key's name: the reference model finds the keys a question asks about with it,
    the checks the key a sentence pairs with a value."""
    forms = [re.escape(key) + "(?:e?s)?"]
    if key.endswith("y"):
        forms.append(re.escape(key[:-1]) + "ies")
    return re.compile(rf"(?<![\w-])(?:{'|'.join(forms)})(?![\w-])", re.IGNORECASE)


def parse_declarations(text: str, keys: Collection[str] = ALLOWED_KEYS) -> dict[str, Declaration]:
    """Explicit key=value assertions of one text for the key set `keys` (a chronology's
    `keys`, by default the seed's ten); the last declaration of a repeated key wins.

    The dict follows the order of each key's last declaration.
    """
    declarations: dict[str, Declaration] = {}
    for segment in _SEPARATORS.split(text):
        declaration = _parse_segment(segment, keys)
        if declaration is not None:
            # Re-insert rather than overwrite, so the order is that of the winning declarations.
            declarations.pop(declaration.key, None)
            declarations[declaration.key] = declaration
    return declarations


@dataclass(frozen=True)
class Written:
    """`key=value` written anywhere in a text (a declaring segment, or quoted in prose): the key,
    and where its value runs in the text (`text[start:end]`)."""

    key: str
    begins: int  # where `key=` begins
    start: int
    end: int


_CLOSING_QUOTES = {'"': '"', "'": "'", "“": "”", "‘": "’"}


def written_values(text: str, keys: Collection[str] = ALLOWED_KEYS) -> list[Written]:
    """Every `key=value` of a key of `keys` written in a text, in order: what a text a policy or
    a model wrote shows the model (a summary holding `database=MySQL; database=PostgreSQL`
    shows both; `parse_declarations` is what the user declared, the last winning).

    A value runs to the end of its segment, as the seed's reader reads it, or to its closing
    quote when the key follows an opening one (`user wrote "module=Billing" at turn 1`). A
    `key=` inside another key's value is part of that value: a declaring segment states its own
    key's value and nothing else, so a value inside another key's declared value
    (`constraint=never drop the PostgreSQL replica`) is not that key's value (SPEC section 10)."""
    found: list[Written] = []
    reached = 0
    for match in _key_anywhere(frozenset(keys)).finditer(text):
        if match.start() < reached:
            continue  # inside the value of an earlier key
        start = match.end() - 1  # the value's first character (the pattern ends on it)
        separator = _SEPARATORS.search(text, start)
        end = separator.start() if separator is not None else len(text)
        closing = _CLOSING_QUOTES.get(text[match.start() - 1]) if match.start() else None
        if closing is not None and (quote := text.find(closing, start, end)) >= 0:
            end = quote
        found.append(Written(match.group(1), match.start(), start, end))
        reached = end
    return found


def without_declarations(text: str, keys: Collection[str] = ALLOWED_KEYS) -> str:
    """The text with every `key=value` written in it (`written_values`) left out: the prose
    around them, where a clause may still pair a key with its value."""
    kept, last = [], 0
    for written in written_values(text, keys):
        kept += [text[last : written.begins], " "]
        last = written.end
    return "".join([*kept, text[last:]])


def _parse_segment(segment: str, keys: Collection[str]) -> Declaration | None:
    """The declaration a segment makes, or None for prose, questions and keys not in `keys`."""
    evidence = segment.strip()
    key, equals, value = evidence.partition("=")
    key, value = key.strip(), value.strip()
    # A question is never a declaration, even when it is shaped like one.
    if not equals or key not in keys or not value or evidence.endswith("?"):
        return None
    return Declaration(key, value, evidence)


@dataclass(frozen=True)
class NearMiss:
    """`key=value` text of a key of the set that `parse_declarations` does not read as a declaration."""

    key: str
    segment: str  # the whole segment it sits in, stripped
    end: int  # where `before` ends in `segment`: `key=` starts there, after white space

    @property
    def before(self) -> str:
        """The text before `key=` in the segment, which keeps it from being read."""
        return self.segment[: self.end]

    def advice(self) -> str:
        """What the reader makes of it, and what would be read, in words (long text cut, `shown`)."""
        return (
            f"{shown(self.segment)} declares nothing: a declaration fills a whole segment (between ';' "
            f"or line breaks) and {shown(self.segment[: self.end])} comes before {excerpt(self.key)}=; put {excerpt(self.key)}=... "
            f"after a ';' or on its own line so that the fact store, the checks and the reference "
            f"model read it, or, if the prose is on purpose, tell the checks with sets: {{{self.key}: ...}}"
        )


def near_misses(text: str, keys: Collection[str] = ALLOWED_KEYS) -> list[NearMiss]:
    """`key=value` text of a key of `keys` inside a segment that does not declare it: the first
    of each key in a segment (its advice holds for the others), in the order they appear.

    Questions are left out: a question may quote a declaration, and is never one.
    """
    found = []
    key_anywhere = _key_anywhere(frozenset(keys))
    for segment in _SEPARATORS.split(text):
        stripped = segment.strip()  # once: every near miss of the segment shares it
        if stripped.endswith("?"):
            continue
        declared = _parse_segment(stripped, keys)
        seen: set[str] = set()
        for match in key_anywhere.finditer(stripped):
            key = match.group(1)
            if (declared is not None and match.start() == 0) or key in seen:
                continue  # the segment's own declaration, or a key already found in it
            seen.add(key)
            found.append(NearMiss(key, stripped, len(stripped[: match.start()].rstrip())))
    return found


@dataclass(frozen=True)
class OutsideKey:
    """A segment shaped like a declaration (`word=value`) whose key is not in the key set."""

    key: str
    segment: str  # stripped

    def advice(self, keys: Collection[str]) -> str:
        """What the reader makes of it, and the two ways to go on, in words."""
        close = difflib.get_close_matches(self.key, list(keys), n=1, cutoff=0.75)
        hint = f" (did you mean {close[0]}?)" if close else ""
        return (
            f"{shown(self.segment)} declares nothing: {shown(self.key)} is not one of this chronology's keys "
            f"({', '.join(keys)}){hint}; add it to keys: to have it declared, or leave it as prose "
            "(the fact store, the checks and the reference model then read nothing in it)"
        )


def outside_keys(text: str, keys: Collection[str] = ALLOWED_KEYS) -> list[OutsideKey]:
    """Segments written as `word=value` whose word is not a key of `keys`; questions left out."""
    found = []
    for segment in _SEPARATORS.split(text):
        stripped = segment.strip()
        # `match`: the word starts the segment, so no prose comes before it (that is a near miss).
        shaped = _SHAPED.match(stripped)
        if shaped is not None and not stripped.endswith("?") and shaped.group(1) not in keys:
            found.append(OutsideKey(shaped.group(1), stripped))
    return found
