r"""Redaction of the API key from everything an endpoint sends back, before the harness keeps it.

An endpoint can echo the key anywhere: in an error body ("Incorrect API key provided: sk-...",
a proxy quoting the Authorization header) or inside a successful answer. Whatever comes back
is redacted before it is parsed further, shortened, cached, recorded or put into the next
request, so no file (calls, views, facts, report, response cache) can hold the key, nor a
prefix of it cut off by a shortened message. Each occurrence becomes `[redacted:VARIABLE]`,
naming the environment variable the key came from, so a reader sees that the text was changed.

An echo does not always give the key back as it was sent. A key of `MIN_SUBSTRING_CHARS` or
more is redacted wherever it occurs, also inside a longer word, in any case (upper, lower,
mixed), and in the forms encoders and wrappers give it, each character on its own (so a form
that escapes some characters and not others is found too):

- percent-encoded (`%2F` or `%2f`, once or twice: `%252F`), a `+` read back as a space by form
  decoding; JSON and JavaScript escapes (`\u002f`, `\/`, `\x2f`, a backslash before any
  punctuation); HTML entities (`&#47;`, `&#x2F;`, `&sol;`);
- split by what a wrap or a copy inserts between two characters: white space (a line break and
  its indentation, spaces), its escapes (`\n`, `\r`, `\t`), zero-width and other invisible
  characters (U+200B-U+200F, U+2060, U+FEFF, U+00AD, U+180E);
- in base64 (standard or URL-safe alphabet, line-wrapped or not), wherever the key starts in a
  group of three bytes: the characters that depend on the key's bytes alone are found for each of
  the three alignments (`base64(KEY)`, `base64("Bearer " + KEY)`, `base64("user:" + KEY)`), and
  only the one or two characters at each edge, shared with the text around it, are kept;
- in hexadecimal, as a dump of its bytes (`736b2d...`, spaced or not).

A shorter key (a local server's `local`, `ollama`) is redacted only where it stands as a whole
word, as written or in the escaped forms, in its own case, so that answers mentioning
"locally" or "Local" stay readable. A key the endpoint cut into pieces placed apart (one per
answer, or in two fields) cannot be told from text and is not redacted: an endpoint holds the
key, and the harness can only undo the echoes it recognises.
"""

from __future__ import annotations

import base64
import functools
import html.entities
import json
import re
from typing import Any

from harness.base import json_bounded

MIN_SUBSTRING_CHARS = 8
MAX_DEPTH = 64  # a chat-completions body nests about 5 levels; deeper values are not kept
TOO_DEEP = f"[not kept: nested deeper than {MAX_DEPTH} levels]"

# What a wrap or a copy may put between two characters of an echoed key: white space, its
# escapes in a JSON or C string, and the invisible characters (soft hyphen, Mongolian vowel
# separator, zero-width space, non-joiner and joiner, direction marks, word joiner, byte-order
# mark). Written as alternatives, not as a character class: a class of characters beyond Latin-1
# costs the compiler a table per copy, and the pattern holds a copy per character of the key.
INVISIBLE = ("\u00ad", "\u180e", "\u200b", "\u200c", "\u200d", "\u200e", "\u200f", "\u2060", "\ufeff")
SEPARATOR = "(?:" + "|".join([r"\s", r"\\[nrt]", *INVISIBLE]) + ")*"
WRAP = r"\s*"  # base64 and hex dumps are wrapped in lines or spaced, never split by anything else
# The two base64 alphabets differ in two characters: standard `+` and `/`, URL-safe `-` and `_`.
URL_SAFE = {"+": "-", "/": "_"}


class Redactor:
    """Replaces a secret in texts and in parsed JSON; with no secret, returns them unchanged."""

    def __init__(self, secret: str | None, label: str) -> None:
        self.marker = f"[redacted:{label}]"
        self._pattern = _pattern(secret) if secret else None

    def text(self, value: str) -> str:
        """`value` with every occurrence of the secret replaced by the marker."""
        return self._pattern.sub(self.marker, value) if self._pattern else value

    def json(self, value: Any, depth: int = 0) -> Any:
        """A parsed JSON value with the secret redacted from every string in it, keys included.

        A list or object nested deeper than MAX_DEPTH is replaced by a note: a hostile body
        must not exhaust the interpreter's recursion, and what is not checked is not kept.
        """
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, (list, dict)) and depth >= MAX_DEPTH:
            return TOO_DEEP
        if isinstance(value, list):
            return [self.json(v, depth + 1) for v in value]
        if isinstance(value, dict):
            return {self.text(str(k)): self.json(v, depth + 1) for k, v in value.items()}
        return value

    def loads(self, content: bytes) -> Any:
        """A JSON body parsed, with the secret redacted as `json` does (ValueError or
        RecursionError when it is not JSON). A body whose text holds no backslash (so each of
        its strings is its raw text), no match of the secret, and fewer brackets than MAX_DEPTH
        (so nothing nests that deep) is returned as parsed: walking it would change nothing.
        That is every ordinary answer, and the walk cost a tenth of a call's own work.
        The body is decoded once, as `json.loads` decodes bytes (UTF-8, -16 or -32, by their
        first bytes), and that one text is both parsed and searched: a UTF-16 body read as UTF-8
        would hide the secret between its NUL bytes."""
        text = content.decode(json.detect_encoding(content), "surrogatepass")  # a ValueError when it cannot
        # A number beyond the bounds (a usage figure of 5,000 digits) is kept as its text, no count:
        # the answer is not lost for it. Nesting beyond them is refused (a ValueError).
        value = json_bounded.loads(text, what="the response body", keep_long_numbers=True, max_depth=None)
        plain = "\\" not in text and text.count("{") + text.count("[") < MAX_DEPTH
        if plain and (self._pattern is None or self._pattern.search(text) is None):
            return value
        return self.json(value)


@functools.lru_cache(maxsize=8)
def _pattern(secret: str) -> re.Pattern[str]:
    """The secret in every form named in the module's docstring; a short one as a whole word.
    Compiled once per key (about 50 ms for a key of 164 characters): the pattern holds each form."""
    data = secret.encode("utf-8", "surrogatepass")
    if len(secret) < MIN_SUBSTRING_CHARS:
        word = "".join(_character(c, any_case=False) for c in secret)
        return re.compile(rf"(?<!\w){_opening(secret[0], [])}(?:{word})(?!\w)")
    cores = _base64_cores(data)
    forms = [SEPARATOR.join(_character(c, any_case=True) for c in secret)]
    for core in cores:  # base64 is case-sensitive: a case-folded match is no copy
        forms.append("(?-i:" + WRAP.join(_base64_character(c) for c in core) + ")")
    forms.append(WRAP.join(f"{byte:02x}" for byte in data))
    opening = _opening(secret[0], [core[0] for core in cores] + [f"{data[0]:02x}"[0]])
    return re.compile(f"{opening}(?:{'|'.join(forms)})", re.IGNORECASE)


def _opening(first: str, others: list[str]) -> str:
    """A lookahead for the characters a match can start with: the secret's first character, the
    first character of its base64 and hex forms (`others`), and what starts an escape. Tried at
    every position of a text, one class is about four times as fast as every form's first step."""
    opening = {first, *others, "%", "\\", "&", *(URL_SAFE.get(c, c) for c in others)}
    if "+" in opening:
        opening.add(" ")  # form decoding reads a + as a space
    if " " in opening:
        opening.add("+")
    return f"(?=[{''.join(sorted(re.escape(c) for c in opening))}])"


def _character(c: str, any_case: bool) -> str:
    """One character of the secret: as it is (in any case with `any_case`), or escaped."""
    escapes = "|".join(_escapes(c))
    if any_case:  # the pattern ignores case as a whole
        return f"(?:{re.escape(c)}|{escapes})"
    return f"(?:{re.escape(c)}|(?i:{escapes}))"  # hexadecimal digits in either case


def _base64_character(c: str) -> str:
    """One character of a base64 core, from either alphabet, as it is or escaped."""
    if c in URL_SAFE:
        return f"(?:{re.escape(c)}|{re.escape(URL_SAFE[c])}|(?i:{'|'.join(_escapes(c))}))"
    return c  # a letter or a digit: base64 writes no other


def _escapes(c: str) -> list[str]:
    """Regular expressions for `c` as encoders escape it, hexadecimal digits written lower-case
    (the caller ignores their case): percent-encoded once or twice, JSON's `\\u`, C's `\\x`, an
    HTML character reference; a backslash or an HTML entity name before punctuation; `+` and a space
    for each other, as form encoding writes them."""
    code = ord(c)
    if code < 0x80:  # one byte: the three hexadecimal escapes share its two digits
        forms = [f"(?:%(?:25)?|\\\\u00|\\\\x){code:02x}"]
    else:
        utf8 = c.encode("utf-8", "surrogatepass")
        units = [code] if code <= 0xFFFF else [0xD800 + ((code - 0x10000) >> 10), 0xDC00 + (code & 0x3FF)]
        forms = [
            "".join(f"%(?:25)?{b:02x}" for b in utf8),
            "".join(f"\\\\u{unit:04x}" for unit in units),  # beyond U+FFFF: a surrogate pair
            "".join(f"\\\\x{b:02x}" for b in utf8),
        ]
    forms.append(f"&#(?:x0*{code:x}|0*{code});?")
    if not c.isalnum():
        forms.append("\\\\" + re.escape(c))  # JSON's \/, a regular expression's \+
        forms += [re.escape(f"&{name}") for name in _entities().get(c, ())]
    if c == "+":
        forms.append(" ")  # form decoding reads a + as a space
    elif c == " ":
        forms.append(r"\+")  # form encoding writes a space as +
    return forms


@functools.cache
def _entities() -> dict[str, list[str]]:
    """HTML's named entities of each single character (`/`: `sol;`), longest first."""
    names: dict[str, list[str]] = {}
    for name, value in html.entities.html5.items():
        if len(value) == 1:
            names.setdefault(value, []).append(name)
    return {c: sorted(found, key=len, reverse=True) for c, found in names.items()}


def _base64_cores(data: bytes) -> list[str]:
    """The base64 characters that depend on `data`'s bits alone, for each of the three places in a
    group of three bytes where `data` may start: the characters at the edges also carry bits of the
    bytes around it, and differ with them."""
    cores = []
    for offset in range(3):
        encoded = base64.b64encode(bytes(offset) + data).decode("ascii")
        first = -(-8 * offset // 6)  # the first character after the bits of the bytes before
        end = 8 * (offset + len(data)) // 6  # past the last character made of the data's bits only
        cores.append(encoded[first:end])
    return cores
