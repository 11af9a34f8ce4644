"""The glance's short tags: each way a column lost a prohibition or current value in a chronology,
as the cause's tag and the turns of the probes that found it missing from the request view
(`window@5,9`: missing at the probes of turns 5 and 9, having left the window), in a cell of at
most `LIMIT` characters, with a legend naming each tag used. The tags are the `cause` column of
probes.csv (the checks' own categories), one tag per category; the full wording of each loss,
where and why, stays in each chronology's *Where each loss happened* (harness.report.probes).

A subject stated in another session, whose history the policy never shares, is tagged
`other session` and is not counted as lost, as everywhere in the report.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

LIMIT = 100  # a glance cell's most characters: a table of many policies stays readable
NOT_A_LOSS = "other-session"
TAGS = {
    "window": "window",
    "reduction": "reduced",
    "summary": "summary",
    "eviction": "evicted",
    "replaced": "replaced",
    "not-stored": "not-stored",
    "tool-collapse": "tool-collapse",
    "forget": "forget",
    "tool-clear": "tool-clear",
    "other-session": "other session",
    "stopped": "stopped",
    "error": "error",
    "untraced": "untraced",
}
Subjects = Mapping[object, Mapping[tuple, int]]  # cause -> (check, subject) -> repetitions it was lost in


@dataclass
class Tag:
    """One cause of a column's losses in a chronology: the probes' turns, the subjects, and the
    most repetitions any of them was lost in so."""

    cause: str
    turns: list[int] = field(default_factory=list)
    subjects: set[tuple] = field(default_factory=set)  # (check, prohibition id or value key)
    most: int = 0


def tag_word(cause: str) -> str:
    """The tag of a cause category (an unknown category is its own tag)."""
    return TAGS.get(cause, cause)


def tags_of(found: Mapping[tuple, Subjects]) -> list[Tag]:
    """(probe, turn) -> its losses (in turn order) as one `Tag` per cause, by first turn."""
    tags: dict[str, Tag] = {}
    for (_, turn), causes in found.items():
        for cause, subjects in causes.items():
            tag = tags.setdefault(str(cause), Tag(str(cause)))
            if turn not in tag.turns:
                tag.turns.append(turn)
            tag.subjects.update((check, str(subject).split("=", 1)[0]) for check, subject in subjects)
            tag.most = max(tag.most, *subjects.values())
    return list(tags.values())


def tag_text(tag: Tag, reps: int, compact: bool = False) -> str:
    """`window@5,9` (`compact`: `window@5–201 (7 probes)` when more than two), ` k/n` with several
    repetitions; another session's subjects without turns (they were never in view)."""
    share = "" if reps == 1 else f" {tag.most}/{reps}"
    if tag.cause == NOT_A_LOSS:
        return tag_word(tag.cause) + share
    turns = [str(t) for t in tag.turns]
    at = f"{turns[0]}–{turns[-1]} ({len(turns)} probes)" if compact and len(turns) > 2 else ",".join(turns)
    return f"{tag_word(tag.cause)}@{at}{share}"


def lost_words(tags: list[Tag]) -> str:
    """`1 prohibition, 3 values lost`: the distinct subjects lost (another session's are not)."""
    lost = {s for t in tags if t.cause != NOT_A_LOSS for s in t.subjects}
    prohibitions = sum(1 for check, _ in lost if check == "prohibition")
    values = len(lost) - prohibitions
    parts = [
        f"{n} {word}{'' if n == 1 else 's'}" for n, word in ((prohibitions, "prohibition"), (values, "value")) if n
    ]
    return f"{', '.join(parts)} lost" if parts else ""


def tags_cell(found: Mapping[tuple, Subjects], reps: int) -> str:
    """A glance cell: what was lost, then the tags; shortened (turn ranges, then the first tags and
    how many more) until it fits in `LIMIT` characters."""
    tags = tags_of(found)
    lost = lost_words(tags)
    for compact in (False, True):
        text = " · ".join(tag_text(t, reps, compact) for t in tags)
        cell = f"{lost}: {text}" if lost else text
        if len(cell) <= LIMIT:
            return cell
    for kept in range(len(tags) - 1, 0, -1):
        text = " · ".join(tag_text(t, reps, True) for t in tags[:kept])
        cell = f"{lost}: {text} · {len(tags) - kept} more causes"
        if len(cell) <= LIMIT:
            return cell
    return f"{lost}: {len(tags)} causes (see the chronology)"[:LIMIT]
