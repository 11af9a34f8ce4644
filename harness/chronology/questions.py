"""How the reference reader finds the question in a user's message: one home for the rules,
used by the reference model to answer and by `harness validate` to warn about probes it would
not read as intended.

- A message is cut into **sentences**: a sentence ends at a line break, or at `.`, `!`, `?` or
  `…` followed by white space or the end of the text (so `4.2.1` stays whole).
- A **permission request** is a sentence that starts (after white space and an opening quote or
  bracket) with `Can I`, `Can we`, `May I`, `May we`, `Could I`, `Could we`, `Should I`,
  `Should we`, `Is it ok to`, `Is it okay to` or `Am I allowed to`, optionally followed by
  `please`, `just`, `also`, `now` or `safely`, then a verb: the verb is the action asked about.
  It may stand anywhere in the message; when several do, the last one is the question.
- Any other **question** is the last sentence that ends with `?`, or starts with what, which,
  where, who, when, how or why.
- A **clause** is a sentence cut further at `;`: the unit the reader quotes as a prohibition.
- A clause **forbids** when it holds a negation (`NEGATION_RE`: never, not, no, don't, must not,
  cannot, forbidden, prohibited...): the reader quotes such a clause, and the reference summarizer
  keeps such clauses first when it must shorten.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# One sentence from where the last one ended: text (closing marks not followed by white space
# included), then its end: the closing marks, or a line break or the end of the text ahead.
# Possessive (`++`, `*+`): each character is looked at once, so the time is linear in the text.
# A lazy prefix (`[^\n]*?[.!?…]+`) would scan the rest of a run of closing marks again at each of
# its characters: quadratic in a run not followed by white space (a 1 MB word of dots).
_SENTENCE = re.compile(r"(?:[^\n.!?…]++|[.!?…]++(?!\s|$))*+(?:[.!?…]++|(?=\n)|$)")

_PERMISSION = re.compile(
    r"[\"'“‘(\[]*(?:(?:can|may|could|should)\s+(?:I|we)|is\s+it\s+ok(?:ay)?\s+to|am\s+I\s+allowed\s+to)"
    r"\s+(?:(?:please|just|also|now|safely)\s+)*(?P<verb>[A-Za-z]+)",
    re.IGNORECASE,
)

NEGATION_RE = re.compile(
    r"\b(?:never|not|no|don['’]t|do\s+not|must\s+not|mustn['’]t|cannot|can['’]t"
    r"|forbidden|prohibited)\b",
    re.IGNORECASE,
)

_WH = re.compile(r"(?:what|which|where|who|when|how|why)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Span:
    """A piece of a text: `text[start:end]`, stripped of surrounding white space."""

    start: int
    end: int
    text: str


@dataclass(frozen=True)
class Permission:
    """A permission request: the sentence that asks, and the verb of the action asked about."""

    sentence: Span
    verb: str


def sentences(text: str) -> list[Span]:
    """The text's sentences in order, each stripped; empty pieces are left out."""
    found = []
    for match in _SENTENCE.finditer(text):
        piece = match.group()
        stripped = piece.strip()
        if stripped:
            start = match.start() + (len(piece) - len(piece.lstrip()))
            found.append(Span(start, start + len(stripped), stripped))
    return found


def clauses(text: str) -> list[Span]:
    """Sentences cut further at `;`, each stripped: what the reader quotes."""
    found = []
    for sentence in sentences(text):
        offset = sentence.start
        for part in sentence.text.split(";"):
            stripped = part.strip()
            if stripped:
                start = offset + (len(part) - len(part.lstrip()))
                found.append(Span(start, start + len(stripped), stripped))
            offset += len(part) + 1
    return found


def permission_request(text: str) -> Permission | None:
    """The last sentence of `text` that asks for permission, with its verb; None if none does."""
    for sentence in reversed(sentences(text)):
        match = _PERMISSION.match(sentence.text)
        if match:
            return Permission(sentence, match.group("verb"))
    return None


def question(text: str) -> Span | None:
    """The last sentence that is a question (ends with `?`, or starts with a wh-word)."""
    for sentence in reversed(sentences(text)):
        if sentence.text.endswith("?") or _WH.match(sentence.text):
            return sentence
    return None
