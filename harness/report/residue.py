"""What each policy keeps of old values (residue.csv, `harness.run.residue`), apart from what its
answers said: a corrected (stale) value or a forgotten one that its retained state still holds,
where (history, summary, fact store, or a policy's own name for its history, such as retrieval's
index) and from which turn to which.

A history, or an index over it, keeps a corrected value beside its correction by design: the
report says so and does not call it a failure. A corrected value kept in a summary or a fact
store, and any forgotten value kept anywhere (the seed's `forget` clears every history, summary
and fact store), is a finding. A value that outside text (a tool's result, a recorded reply)
repeated after the correction or forget re-entered from it: shown as a re-entry, and counted in
no "kept" figure (the policy's memory did not keep it).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from harness.report.comparison import Column, Comparison, Record, records
from harness.report.markdown import cell, table
from harness.results.rows import RESIDUE, RESIDUE_KEPT, RESIDUE_REENTERED

CHECKS = ("stale", "forgotten")
CHECK_WORDS = {"stale": "corrected", "forgotten": "forgotten"}
BY_DESIGN = frozenset({"history", "index"})  # where a history keeps what it was told, corrections included
NOT_RECORDED = "not recorded"  # a run of a format version before residue.csv


@dataclass(frozen=True)
class Episode:
    """One old value held in one place of one conversation, from a turn to a turn (None: to the end)."""

    chronology: str
    repetition: int
    subject: str
    check: str
    since: int
    where: str
    start: int
    end: int | None
    ended: str | None  # gone | cleared by a forget | current again; None: kept to the end

    @property
    def value(self) -> tuple[str, int, str, int]:
        """The old value this episode is of: (chronology, repetition, key=value, its turn)."""
        return (self.chronology, self.repetition, self.subject, self.since)


def is_re_entry(where: str) -> bool:
    """Whether a residue.csv `where` names outside text the value re-entered from."""
    return where.startswith(RESIDUE_REENTERED)


def reading(check: str, where: str) -> str:
    """What a residue row means: by design, a finding, or a re-entry from outside text."""
    if is_re_entry(where):
        return "re-entry: outside text repeated it, not kept"
    if check == "stale" and where in BY_DESIGN:
        return "by design: a history keeps what it was told"
    return "finding"


def episodes(records: Iterable[Record]) -> list[Episode]:
    """residue.csv rows (of one policy under one model, in file order) as episodes."""
    open_: dict[tuple, tuple[Record, int]] = {}
    found: list[Episode] = []
    for record in records:
        key = (
            record[RESIDUE.chronology],
            int(record[RESIDUE.repetition]),
            record[RESIDUE.subject],
            record[RESIDUE.since],
            record[RESIDUE.where],
        )
        if record[RESIDUE.change] == RESIDUE_KEPT:
            open_[key] = (record, int(record[RESIDUE.turn]))
        elif key in open_:
            kept, start = open_.pop(key)
            found.append(_episode(kept, start, int(record[RESIDUE.turn]), str(record[RESIDUE.change])))
    found += [_episode(kept, start, None, None) for kept, start in open_.values()]
    return sorted(found, key=lambda e: (e.chronology, e.repetition, e.since, e.subject, e.where, e.start))


def _episode(record: Record, start: int, end: int | None, ended: str | None) -> Episode:
    return Episode(
        str(record[RESIDUE.chronology]),
        int(record[RESIDUE.repetition]),
        str(record[RESIDUE.subject]),
        str(record[RESIDUE.check]),
        int(record[RESIDUE.since]),
        str(record[RESIDUE.where]),
        start,
        end,
        ended,
    )


@dataclass(frozen=True)
class Kept:
    """One check's old values a column kept: how many values, per place, and how many to the end."""

    values: int
    places: dict[str, int]
    at_end: int


def kept_counts(found: list[Episode]) -> dict[str, Kept]:
    """Per check (`CHECKS`), the distinct old values kept anywhere, per place and to the end;
    re-entries from outside text are not kept (`is_re_entry`)."""
    counts = {}
    for check in CHECKS:
        mine = [e for e in found if e.check == check and not is_re_entry(e.where)]
        places: dict[str, set[tuple]] = {}
        for e in mine:
            places.setdefault(e.where, set()).add(e.value)
        at_end = {e.value for e in mine if e.end is None}
        counts[check] = Kept(len({e.value for e in mine}), {p: len(v) for p, v in sorted(places.items())}, len(at_end))
    return counts


def column_episodes(column: Column) -> list[Episode] | None:
    """Every episode of a column, over every chronology; None when the run recorded no residue."""
    return None if column.tables.whole_residue is None else episodes(records(column.frame("residue")))


def section(cmp: Comparison, chronology: str) -> list[str]:
    """This chronology's old values each policy kept, one row per value, place and span, with
    the policies that kept it so (how many repetitions, when the run has several)."""
    columns = cmp.columns
    if any(c.tables.whole_residue is None for c in columns):
        return [
            f"Residue is {NOT_RECORDED}: the run was written before the harness recorded it (results format 3).",
            "",
        ]
    rows: dict[tuple, list[str]] = {}
    repetitions = max((c.repetitions(chronology) for c in columns), default=1)
    for column in columns:
        found = episodes(column.rows("residue", chronology))
        per = Counter((e.since, e.subject, e.check, e.where, e.start, e.end, e.ended) for e in found)
        for key, times in per.items():
            shown = column.header if repetitions == 1 else f"{column.header} ({times} of {repetitions})"
            rows.setdefault(key, []).append(shown)
    if not rows:
        return ["No policy kept a corrected or forgotten value after its correction or forget.", ""]
    body = []
    for (since, subject, check, where, start, end, ended), policies in sorted(rows.items(), key=_order):
        until = "the end" if end is None else f"turn {end} ({ended})"
        body.append(
            [
                cell(subject),
                f"{CHECK_WORDS[check]} at turn {since}",
                cell(where),
                f"turn {start} to {until}",
                reading(check, where),
                cell(", ".join(policies)),
            ]
        )
    return [
        "What each policy's retained state still holds of a value after a correction replaced it or a `forget` "
        "removed it (residue.csv), apart from what the answers said. A history, or an index over it, keeps a "
        "corrected value beside its correction by design; a corrected value kept in a summary or a fact store, "
        "and a forgotten value kept anywhere (the seed's forget clears every history, summary and fact store), "
        "is a finding.",
        "",
        table(["value", "made old", "kept in", "kept from", "reading", "policies"], body),
        "",
    ]


def _order(item: tuple[tuple, list[str]]) -> tuple:
    since, subject, check, where, start, end, _ = item[0]
    return (since, subject, check, where, start, end if end is not None else 1 << 62)
