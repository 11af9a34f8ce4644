"""The reference summarizer: the offline, deterministic summarizer the `reference` model writes
with, for the `summary` policy and every policy or emulated provider that summarises.

It reads only the request it is given (the cap its prompt states, `stated_cap`), the user's
text and a system message the exchange added mid-conversation (read as the user's is: an
operator's statement, not generated text): a lossy merge of the previous summary and what those
texts add, declarations deduplicated by key and the last statements kept, written within the cap
as a summarizer told its cap would (`fit_summary`). The answer is generated text and is never
summarized, nor is a tool's output.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from functools import cache

from harness.base.messages import Message
from harness.chronology.declarations import ALLOWED_KEYS, parse_declarations
from harness.chronology.questions import NEGATION_RE, clauses

# How the reference summarizer reads the cap back from a summarizer's instructions ("... in at
# most N characters"): the prompt sent is all it reads, as a real summarizer would.
CAP_RE = re.compile(r"\bin at most (\d+) characters\b")

STATEMENT_LINES_KEPT = 4  # older statement lines fall out of the summary: that is its loss
SHORTEST_CUT = 40  # a statement is shortened to fit only when this much room is left for it
ELLIPSIS = "…"


def stated_cap(messages: Sequence[Message]) -> int | None:
    """The cap a summarizer request's system message states (`in at most N characters`); None
    when it states none (a plug-in's own prompt)."""
    for message in messages:
        if message.role == "system":
            match = CAP_RE.search(message.content)
            if match:
                return int(match.group(1))
    return None


def reference_summary(
    previous: str | None,
    user_text: str,
    keys: Collection[str] = ALLOWED_KEYS,
    max_chars: int | None = None,
    system_text: str | None = None,
) -> str:
    """The previous summary merged with what the user's text adds, then what the exchange's
    system message adds (declarations of the chronology's key set `keys`); the answer is
    generated text and is never summarized, nor is a tool's output. With `max_chars` (the cap
    the prompt states), written within it (`fit_summary`)."""
    lines = [line.strip() for line in (previous or "").splitlines() if line.strip()]
    added = new_summary_lines(user_text, keys) + (new_summary_lines(system_text, keys) if system_text else [])
    merged = merge_summary(lines + added, keys)
    return merged if max_chars is None else fit_summary(merged, keys, max_chars)


def new_summary_lines(user_text: str, keys: Collection[str] = ALLOWED_KEYS) -> list[str]:
    """What the user's text adds: its declarations, else the statement itself; a question is
    noted as asked (so a session that opens with a question still gets a summary)."""
    declarations = parse_declarations(user_text, keys)
    if declarations:
        return [f"{d.key}={d.value}" for d in declarations.values()]
    collapsed = " ".join(user_text.split())
    if collapsed.endswith("?"):
        return [f"The user asked: {collapsed}"]
    return [collapsed] if collapsed else []


@cache
def _declaration_line(keys: frozenset[str]) -> re.Pattern[str]:
    """A summary line that is one declaration, as the reference summarizer itself writes them."""
    return re.compile(rf"^({'|'.join(map(re.escape, sorted(keys)))})=(.+)$")


def merge_summary(lines: Sequence[str], keys: Collection[str] = ALLOWED_KEYS) -> str:
    """Declarations deduplicated by key (value replaced in place), then the last 4 statements."""
    declarations: dict[str, str] = {}
    statements: list[str] = []
    declaration_line = _declaration_line(frozenset(keys))
    for line in lines:
        match = declaration_line.match(line)
        if match:
            declarations[match.group(1)] = line  # re-assigning keeps the first position
        else:
            statements.append(line)
    return "\n".join([*declarations.values(), *statements[-STATEMENT_LINES_KEPT:]])


def fit_summary(summary: str, keys: Collection[str], max_chars: int) -> str:
    """A merged summary within `max_chars`, as a summarizer told its cap writes it: unchanged when
    it fits; else its lines are kept by priority, declarations first, then statements that forbid
    something (a clause with a negation), then the others, the most recent first within each, and
    a statement too long for the room left is shortened (`shorten`). Kept lines stay in the
    summary's order. A declaration is dropped whole, never cut (a cut value would read as another
    value), unless no line fits whole: the first by priority is then cut, rather than no summary."""
    if len(summary) <= max_chars:
        return summary
    lines = summary.split("\n")
    declaration_line = _declaration_line(frozenset(keys))

    def rank(index: int) -> tuple[int, int]:
        line = lines[index]
        kind = 0 if declaration_line.match(line) else 1 if NEGATION_RE.search(line) else 2
        return kind, -index  # later is more recent (a declaration stands where its key was first declared)

    kept: dict[int, str] = {}
    room = max_chars
    for index in sorted(range(len(lines)), key=rank):
        line, room_left = lines[index], room - (1 if kept else 0)  # the line break before it
        if len(line) <= room_left:
            kept[index] = line
        elif not declaration_line.match(line) and room_left >= min(SHORTEST_CUT, max_chars):
            kept[index] = shorten(line, room_left)
        else:
            continue
        room = room_left - len(kept[index])
    if not kept:  # nothing fits whole: the first line by priority, cut, rather than no summary
        first = min(range(len(lines)), key=rank)
        kept[first] = cut_at_word(lines[first], max_chars)
    return "\n".join(kept[i] for i in sorted(kept))


def shorten(line: str, room: int) -> str:
    """A statement within `room` characters: its clauses that forbid something first, then the
    others in order, as many as fit whole, shown in their order; a first clause too long is cut
    at a word and marked `…`."""
    parts = clauses(line)
    ranked = sorted(range(len(parts)), key=lambda i: (not NEGATION_RE.search(parts[i].text), i))
    chosen: list[int] = []
    used = 0
    for i in ranked:
        cost = len(parts[i].text) + (1 if chosen else 0)
        if used + cost <= room:
            chosen.append(i)
            used += cost
    if chosen:
        return " ".join(parts[i].text for i in sorted(chosen))
    return cut_at_word(parts[ranked[0]].text if parts else line, room)


def cut_at_word(text: str, room: int) -> str:
    """`text` within `room` characters: cut at the last word that fits, marked `…`."""
    if len(text) <= room:
        return text
    if room <= len(ELLIPSIS):
        return text[:room]
    cut = text[: room - len(ELLIPSIS)]
    if " " in cut:
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip() + ELLIPSIS
