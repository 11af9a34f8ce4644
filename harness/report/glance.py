"""The report's first section: which policy lost which prohibition or current value, where, and why.

One table, chronologies × policies in declared order: each cell lists the probes where a
prohibition or a current value was missing from the request view, with the cause in words, or
says that nothing was lost. No score, no ranking; the chronology's name links to its section.
"""

from __future__ import annotations

from harness.markdown import anchor, link, table
from harness.report.comparison import Column, Comparison, Record, split, unique
from harness.rows import PROBE

CAUSE_WORDS = {
    "window": "left the window",
    "reduction": "reduced out of the history",
    "summary": "absent from the summary",
    "eviction": "evicted from the fact store",
    "not-stored": "never stored",
    "forget": "cleared by a forget",
    "other-session": "stated in another session",
    "stopped": "policy stopped",
    "error": "model error",
    "untraced": "dropped, no reason reported",
}
LOST_CHECKS = ("prohibition", "current")


def glance_row(cmp: Comparison, chronology: str) -> list[object]:
    """One chronology's row: its name, linked, then a cell per column."""
    return [link(chronology, f"#{anchor(chronology)}")] + [glance_cell(c, chronology) for c in cmp.columns]


def at_a_glance(cmp: Comparison, rows: list[list[object]] | None = None) -> list[str]:
    """The section; `rows` are the chronologies' rows when the caller has made them."""
    rows = [glance_row(cmp, name) for name in cmp.chronologies] if rows is None else rows
    intro = (
        "Which prohibition or current value each policy no longer had in its request view at a probe, and "
        "why (the cause category in words). Probes are named with their turn; `k/n` counts repetitions. "
        "Nothing is scored: the sections below give the detail, and each chronology's own expectation."
    )
    return ["## At a glance", "", intro, "", table(["chronology"] + cmp.headers, rows), ""]


def glance_cell(column: Column, chronology: str) -> str:
    """`probe (turn), probe (turn): subjects — cause; ...`, probes with the same losses together."""
    if not column.has("turns", chronology):
        return "not run"
    rows = column.records(
        "probes",
        chronology,
        "losses at a glance",
        lambda f: f[PROBE.check].isin(LOST_CHECKS) & f[PROBE.cause].notna(),
        (PROBE.probe, PROBE.turn, PROBE.check, PROBE.subject, PROBE.cause, PROBE.repetition),
    )
    if not rows:
        return "nothing lost"
    reps = column.repetitions(chronology)
    rows.sort(key=lambda r: (r[PROBE.turn], r[PROBE.check] != "prohibition", r[PROBE.subject]))
    by_losses: dict[str, list[str]] = {}
    for (probe, turn), group in split(rows, [PROBE.probe, PROBE.turn]).items():
        by_losses.setdefault(probe_losses(group, reps), []).append(f"{probe} ({turn})")
    return "; ".join(f"{', '.join(probes)}: {losses}" for losses, probes in by_losses.items())


def probe_losses(rows: list[Record], reps: int) -> str:
    """`no-restart, database — left the window; module — never stored` for one probe."""
    parts = []
    for (cause,), group in split(rows, [PROBE.cause]).items():
        repetitions: dict[str, set[int]] = {}
        for r in group:
            repetitions.setdefault(r[PROBE.subject], set()).add(r[PROBE.repetition])
        names = unique(short(subject) + share(len(found), reps) for subject, found in repetitions.items())
        parts.append(f"{', '.join(names)} — {CAUSE_WORDS.get(cause, cause)}")
    return "; ".join(parts)


def short(subject: str) -> str:
    """A prohibition's id, or a value's key (its value is in the sections below)."""
    return subject.split("=", 1)[0]


def share(count: int, reps: int) -> str:
    """` k/n`: in how many of the repetitions a subject was lost; nothing with one repetition."""
    return "" if reps == 1 else f" {count}/{reps}"
