"""The one definition of a value as a whole (SPEC section 10, "A value is a whole";
docs/chronologies.md, "When something is in view").

Two things, used by every reader that compares or finds a value (the ledger's corrections,
presence in views, stored state and answers, `expect: {value: ...}`, the residue, abstention;
where a key's value runs in a text is the declarations reader's, `declarations.written_values`):

- **Identity**: when two spellings are the same value. Both sides are NFC-normalised, case is
  folded (matching ignores case), runs of white space count as one space, and sentence
  punctuation at the end (`.,;:!?…`: `database=SQL Server 2022.` ends a sentence, the value
  does not end in a full stop) is no part of it, as a whole value may be followed by it in a
  text. The declarations reader still records the value as written (the seed's rule). The ledger asks
  the same question to decide what a correction is, so `ACME Corp` -> `Acme Corp` corrects
  nothing: a case the match ignores can never make a "stale" value that every answer states.
- **Whole**: where a text states a value. It stands bounded by white space, the text's start or
  end, an opening bracket or quote, or a key's `=` (`log=/var/log/erp.log`) before it, and after
  it by white space or the end, possibly after sentence punctuation (`.,;:!?…`, closing brackets
  and quotes, a possessive `'s`) that ends the token there; a dash between words (`—`, `–`)
  parts them like white space. So `alice` is not in
  `alice@example.com`, `C` not in `C++`, `4.2` not in `4.2~rc1` nor `4.2.1`, `db1` not in
  `db1:5432`, `ERP` not in `/var/log/erp.log`, `example.com` not in an address.

Of several values that start at the same place the longest is taken (`SQL Server 2022` before
`SQL Server`), so a value is never found inside another value of the same set that contains it.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable, Iterator

# What may open a token before a value (besides white space and the text's start), and what
# sentence punctuation may close it after one. Markdown emphasis and code marks (`*`, a
# backtick) wrap values in generated answers. `_` is left out: it is part of identifiers.
_OPENING = "([{\"'«“‘*`"
_CLOSING = ".,;:!?…)]}\"'»”’*`"

# A dash between words (`last year—nothing like it`) parts them as white space does; a hyphen
# does not (`4.2-beta`, `my-module`).
_DASHES = "—–"

_BEFORE = rf"(?<![^\s{re.escape(_OPENING)}{_DASHES}=])"
_AFTER = rf"(?=(?:['’]s)?[{re.escape(_CLOSING)}]*(?:[\s{_DASHES}]|\Z))"

# A value right after `=` stands whole only when what comes before the `=` is a key-shaped word
# that itself starts a token (`log=/var/log/erp.log`), never inside a URL's query (`?user=alice`).
_KEY_BEFORE = re.compile(rf"(?:^|(?<=[\s{re.escape(_OPENING)}]))[\w-]+=\Z")
_LONGEST_KEY = 100  # how far back a key before `=` is looked for

_SPACES = re.compile(r"\s+")

# Sentence punctuation that may end a value's token in a text (`_CLOSING` less brackets and
# quotes, which may belong to a value: `f(x)`): no part of a value's identity at its end.
_SENTENCE_END = ".,;:!?…"


def nfc(text: str) -> str:
    """The text NFC-normalised: how the ledger records a declared value."""
    return unicodedata.normalize("NFC", text)


@functools.lru_cache(maxsize=4096)
def identity(text: str) -> str:
    """What every spelling of one value shares: NFC, case folded, white space runs as one space,
    sentence punctuation at its end left out (unless the value is nothing else). Two values are
    the same value exactly when their identities are equal (`same`)."""
    spaced = _SPACES.sub(" ", fold(text)).strip()
    return spaced.rstrip(_SENTENCE_END).rstrip() or spaced


def same(a: str, b: str) -> bool:
    """Whether two spellings are one value (a change between them is no correction)."""
    return identity(a) == identity(b)


def fold(text: str) -> str:
    """A text folded as values are (`identity`: NFC, case folded), its white space kept, so that
    positions in it stay readable: what `WholeValues.spans` reads."""
    return unicodedata.normalize("NFC", unicodedata.normalize("NFD", text).casefold())


class WholeValues:
    """A set of values, found in a text only where one stands whole (module docstring)."""

    def __init__(self, values: Iterable[str]) -> None:
        self.by_identity: dict[str, list[str]] = {}
        for text in values:
            spellings = self.by_identity.setdefault(identity(text), [])
            if text not in spellings:
                spellings.append(text)
        self.by_identity.pop("", None)  # an empty value states nothing
        ordered = sorted(self.by_identity, key=len, reverse=True)
        literals = (r"\s+".join(re.escape(part) for part in text.split(" ")) for text in ordered)
        alternatives = "|".join(literals) or r"(?!)"
        self.pattern = re.compile(f"{_BEFORE}(?:{alternatives}){_AFTER}")

    def spans(self, folded: str) -> Iterator[tuple[int, int, str]]:
        """(start, end, identity) of each whole value in a text already folded (`fold`), from the start."""
        position = 0
        while (match := self.pattern.search(folded, position)) is not None:
            start, end = match.span()
            if (
                start > 0
                and folded[start - 1] == "="
                and not _KEY_BEFORE.search(folded, max(0, start - _LONGEST_KEY), start)
            ):
                position = start + 1  # not whole here; a value may still start further on
                continue
            yield start, end, _SPACES.sub(" ", match.group(0))
            position = end

    def found(self, text: str) -> set[str]:
        """The values (as given) that `text` states whole, every spelling of each."""
        return {value for _, _, found in self.spans(fold(text)) for value in self.by_identity[found]}

    def without(self, text: str) -> str:
        """The text folded, with every whole value in it blanked: what is left when the values a
        text quotes are set aside (an abstention's phrase must stand outside them)."""
        folded = fold(text)
        kept, last = [], 0
        for start, end, _ in self.spans(folded):
            kept += [folded[last:start], " "]
            last = end
        return "".join([*kept, folded[last:]])


@functools.lru_cache(maxsize=1024)
def _one(value: str) -> WholeValues:
    return WholeValues((value,))


def holds(text: str, value: str) -> bool:
    """Whether `text` states `value` whole (no key: an `expect: {value: ...}`)."""
    return bool(_one(value).found(text))
