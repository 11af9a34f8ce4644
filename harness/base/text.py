"""Text from outside (an endpoint, a chronology, a file name) made safe to show and to store.

Two dangers, two kinds of function:

- **Shown**: a terminal obeys what it is sent. An answer or an endpoint's error holding
  `ESC [ 2 J` clears the screen, `ESC ] 52 ; c ; ...` writes the user's clipboard,
  `ESC ] 8 ; ; URL` hides a link under innocent words, a carriage return or a backspace writes
  over what came before, and the bidirectional controls (U+202E and its kin) show text in
  another order than it is stored. `visible` shows each such character as an escape
  (`\\x1b`, `\\u202e`), never as itself; `terminal` does the same for a message of several
  lines, keeping its line breaks and tabs. Every print of text the harness did not write
  itself goes through one of them.
- **Stored**: a JSON reply may carry half of a UTF-16 pair alone (`"\\ud800"`); Python reads
  it into a `str` that no UTF-8 file, SQLite row or terminal can take. `valid_unicode`
  replaces each such lone surrogate by U+FFFD (a pair split into halves is joined again) and
  says how many it replaced, for the caller to record. A name from the system (a file name, a
  command-line argument) that is not UTF-8 arrives with its bad bytes as lone surrogates too
  (Python's `surrogateescape`); `not_utf8` says which, for a message that refuses it.
"""

from __future__ import annotations

import re

__all__ = [
    "MAX_SHOWN",
    "REPLACEMENT",
    "clipped",
    "excerpt",
    "not_utf8",
    "path_shown",
    "shown",
    "terminal",
    "valid_unicode",
    "visible",
]

REPLACEMENT = "\ufffd"  # what a lone surrogate becomes

# Characters never shown as themselves: C0 and C1 controls (ESC, BEL, CR, BS, NEL, the 8-bit
# CSI \x9b...), DEL, the line and paragraph separators, the bidirectional controls, and lone
# surrogates (which no UTF-8 stream can even carry).
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str, keep: str = "") -> str:
    """`text` with every character that could drive a terminal shown as an escape (`\\x1b`,
    `\\u2028`, `\\ud800`), never obeyed; the characters of `keep` (say `"\\n"`) stay as they are."""
    if _UNSAFE.search(text) is None:  # the usual case: nothing to change
        return text
    return _UNSAFE.sub(lambda m: m.group() if m.group() in keep else _escape(m.group()), text)


def terminal(text: str) -> str:
    """A message of one or more lines, as `visible` shows it, its line breaks and tabs kept."""
    return visible(text, keep="\n\t")


def valid_unicode(text: str) -> tuple[str, int]:
    """`text` as valid Unicode, and how many lone surrogates it held: each is replaced by
    U+FFFD; two halves of a pair, side by side, become the character they encode."""
    if _SURROGATE.search(text) is None:
        return text, 0
    fixed = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return fixed, fixed.count(REPLACEMENT) - text.count(REPLACEMENT)


def not_utf8(text: str) -> str | None:
    """What in `text` is not UTF-8 text: `byte 0xe9` for a byte a system name held (read with
    `surrogateescape`), `U+D800` for any other lone surrogate; None when all of it is text."""
    found = _SURROGATE.search(text)
    if found is None:
        return None
    code = ord(found.group())
    return f"byte 0x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"U+{code:04X}"


MAX_SHOWN = 40  # characters of a file's text quoted whole in a message; longer text is cut to half


def shown(text: object) -> str:
    """Text read from outside (a file, an option, a JSON value), as a message may quote it: short
    (`MAX_SHOWN` characters, else its first half of that and its length) and printable, quoted as
    Python's `repr` quotes, which escapes every character that is not printable (controls, escape
    sequences, bidi and zero-width marks, line separators). A message never quotes more of its
    input than this; a value that is not text (a number, a list from JSON) is cut the same way."""
    if isinstance(text, str):
        if len(text) <= MAX_SHOWN:
            return repr(text)
        return f"{text[: MAX_SHOWN // 2]!r}... ({len(text):,} characters)"
    if isinstance(text, int) and not isinstance(text, bool) and text.bit_length() > 4 * MAX_SHOWN:
        return f"a whole number of about {int(text.bit_length() * 0.30103):,} digits"  # repr() may refuse it
    try:
        written = repr(text)
    except ValueError:  # a list holding an integer too long for Python to print
        return f"a {type(text).__name__} too long to show"
    return written if len(written) <= MAX_SHOWN else f"{written[: MAX_SHOWN // 2]}... ({len(written):,} characters)"


def excerpt(text: str) -> str:
    """Text read from a file, where a message names it unquoted (a field's path, a list's entry):
    as it is when short and printable, else `shown`."""
    return text if len(text) <= MAX_SHOWN and text.isprintable() else shown(text)


def path_shown(path: object) -> str:
    """A path the user gave (an argument, an option, a file an OS error names), as a message names
    it: as it is when short and printable; else quoted as `shown` quotes, a long one cut to its
    first and last `MAX_SHOWN // 2` characters (the folder it starts from, the file it names)
    and its length. A path may be as long as the system allows (4,096 bytes on Linux)."""
    text = str(path)
    if len(text) <= MAX_SHOWN:
        return text if text.isprintable() else repr(text)
    half = MAX_SHOWN // 2
    return f"{text[:half]!r}...{text[-half:]!r} ({len(text):,} characters)"


MAX_PARSER_TEXT = 120  # characters of a parser's own message, which may quote the file (an alias's name)


def clipped(message: str) -> str:
    """A parser's message, which may quote the file: cut to `MAX_PARSER_TEXT` characters, every
    character that is not printable escaped."""
    cut = message[:MAX_PARSER_TEXT]
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in cut)
    return text + ("..." if len(message) > MAX_PARSER_TEXT else "")
