"""The one reader of `key=value` declarations: the fact store, the checks and the reference
model all call it, so the model, the memory and the checks can never disagree about what the
user declared.

The rule is the seed's, exactly: a declaration is a whole segment of a message, segments being
separated by `;` or line breaks; the key is one of ten; a segment ending with `?` is a question,
never a declaration; the last declaration of a repeated key wins. `version=4.2.1` at the end of
the sentence `Sorry, I misread the tag. version=4.2.1` is therefore *not* a declaration (its
segment's key would be `Sorry, I misread the tag. version`). `near_misses` finds such text, so
`harness validate` can warn about it and say what would be read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

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

# `key=` for an allowed key anywhere in a text, not inside a longer word (`my-module=x`).
_KEY_ANYWHERE = re.compile(rf"(?<![\w-])({'|'.join(ALLOWED_KEYS)})\s*=\s*\S")


@dataclass(frozen=True)
class Declaration:
    """One explicit `key=value` assertion; `evidence` is the segment as written, stripped."""

    key: str
    value: str
    evidence: str  # always an ordinal substring of the parsed text


def parse_declarations(text: str) -> dict[str, Declaration]:
    """Explicit key=value assertions of one text; the last declaration of a repeated key wins.

    The dict follows the order of each key's last declaration.
    """
    declarations: dict[str, Declaration] = {}
    for segment in _SEPARATORS.split(text):
        declaration = _parse_segment(segment)
        if declaration is not None:
            # Re-insert rather than overwrite, so the order is that of the winning declarations.
            declarations.pop(declaration.key, None)
            declarations[declaration.key] = declaration
    return declarations


def _parse_segment(segment: str) -> Declaration | None:
    """The declaration a segment makes, or None for prose, questions and unknown keys."""
    evidence = segment.strip()
    key, equals, value = evidence.partition("=")
    key, value = key.strip(), value.strip()
    # A question is never a declaration, even when it is shaped like one.
    if not equals or key not in ALLOWED_KEYS or not value or evidence.endswith("?"):
        return None
    return Declaration(key, value, evidence)


@dataclass(frozen=True)
class NearMiss:
    """`key=value` text of an allowed key that `parse_declarations` does not read as a declaration."""

    key: str
    segment: str  # the whole segment it sits in, stripped
    before: str  # the text before `key=` in that segment, which keeps it from being read

    def advice(self) -> str:
        """What the reader makes of it, and what would be read, in words."""
        return (
            f"{self.segment!r} declares nothing: a declaration fills a whole segment (between ';' "
            f"or line breaks) and {self.before!r} comes before {self.key}=; put {self.key}=... "
            f"after a ';' or on its own line so that the fact store, the checks and the reference "
            f"model read it, or, if the prose is on purpose, tell the checks with sets: {{{self.key}: ...}}"
        )


def near_misses(text: str) -> list[NearMiss]:
    """`key=value` text of an allowed key inside a segment that does not declare it.

    Questions are left out: a question may quote a declaration, and is never one.
    """
    found = []
    for segment in _SEPARATORS.split(text):
        if segment.strip().endswith("?"):
            continue
        declared = _parse_segment(segment)
        leading = len(segment) - len(segment.lstrip())
        for match in _KEY_ANYWHERE.finditer(segment):
            if declared is not None and match.start() == leading:
                continue  # the segment's own declaration
            key = match.group(1)
            before = segment[leading : match.start()].strip()
            found.append(NearMiss(key, segment.strip(), before))
    return found
