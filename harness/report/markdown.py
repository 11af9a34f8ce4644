"""Markdown building blocks that treat every piece of chronology text as data.

Every string the harness did not write itself (answers, an endpoint's errors, file names, a
chronology's title and description, policy notes) reaches a report through `cell`, or through
`link`, `image` and `code`, which use it: no tag, link or image it holds is rendered, and its
control characters are shown as escapes (`\\x1b`, `harness.base.text.visible`), never written
raw into the page.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from urllib.parse import quote

from harness.base.text import visible


class Markup(str):
    """Markdown the harness built itself (a link, an image): `cell()` keeps it as it is.

    Only `link()` and `image()` make one, from escaped text and a percent-encoded target.
    """


def plural(n: int, word: str, many: str | None = None) -> str:
    """`1 turn`, `2 turns`, `2 chronologies` (with `many`)."""
    return f"{n} {word if n == 1 else (many or word + 's')}"


def cell(value: object) -> str:
    """One table cell: no pipe, newline, backtick or HTML can break the table or inject markup."""
    if isinstance(value, Markup):
        return str(value)
    if value is None or value != value or str(value) == "<NA>":  # None, NaN and pandas' NA: blank
        return ""
    # Line breaks and runs of spaces become one space; the controls left are shown as escapes.
    text = html.escape(visible(" ".join(str(value).split())), quote=False)
    text = text.replace("\\", "\\\\").replace("|", "\\|").replace("`", "&#96;")
    return text.replace("*", "\\*").replace("_", "\\_").replace("[", "\\[").replace("]", "\\]")


def link(label: object, target: str) -> Markup:
    """A relative link (or `#anchor`); the label is escaped like a cell, the target percent-encoded."""
    return Markup(f"[{cell(label)}]({url(target)})")


def url(target: str) -> str:
    """A relative link's target, percent-encoded; a file name that is not UTF-8 (read with
    Python's `surrogateescape`) as its own bytes, any other lone surrogate as U+FFFD."""
    try:
        return quote(target, safe="/#", errors="surrogateescape")
    except UnicodeEncodeError:
        return quote(target, safe="/#", errors="replace")


def code(text: str) -> Markup | str:
    """Inline code for a command a reader can copy; escaped plain text if it could break a table."""
    if any(ch in text for ch in "`|") or visible(text) != text:
        return cell(text)
    return Markup(f"`{html.escape(text, quote=False)}`")


def anchor(heading: str) -> str:
    """The anchor a code host gives a heading: lower case, punctuation dropped, spaces as `-`."""
    return "".join(ch for ch in heading.lower() if ch.isalnum() or ch in "-_ ").replace(" ", "-")


def image(alt: object, target: str) -> Markup:
    """An image linked by a relative path, so the page renders on a code host."""
    return Markup(f"!{link(alt, target)}")


def table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """A GitHub-flavoured table; every row has exactly as many cells as the header."""
    lines = ["| " + " | ".join(cell(h) for h in header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        cells = list(row)
        if len(cells) != len(header):
            raise ValueError(f"row has {len(cells)} cells, header has {len(header)}")
        lines.append("| " + " | ".join(cell(c) for c in cells) + " |")
    return "\n".join(lines)
