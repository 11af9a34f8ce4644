"""Per chronology, at each probe: prohibition survival (pattern and judge), drift, and where each loss happened."""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence

from harness.markdown import Markup, code, table
from harness.report.cells import FORGOTTEN_PLACES, STALE_PLACES, survival_cell, where_cell
from harness.report.comparison import Column, Comparison, Record, split, unique
from harness.rows import PROBE

CHECK_ORDER = {"prohibition": 0, "current": 1, "stale": 2, "forgotten": 3}


def subjects(cmp: Comparison, chronology: str, checks: Sequence[str], keys: Sequence[str]) -> list[tuple]:
    """The distinct values of `keys` over every column's checks, in turn, check, subject order."""
    found = {
        tuple(r[k] for k in keys): (r[PROBE.turn], CHECK_ORDER[r[PROBE.check]], r[PROBE.subject])
        for c in cmp.columns
        for r in c.rows("probes", chronology)
        if r[PROBE.check] in checks
    }
    return sorted(found, key=lambda key: found[key])


def probe_table(
    cmp: Comparison,
    chronology: str,
    checks: Sequence[str],
    keys: Sequence[str],
    cell_of: Callable[[tuple, list[Record]], str],
) -> list[list[object]]:
    """One row per subject (`keys`: turn, probe, labels...), then `cell_of` for each column."""
    columns = [split((r for r in c.rows("probes", chronology) if r[PROBE.check] in checks), keys) for c in cmp.columns]
    return [
        [f"{key[1]} (turn {key[0]})", *key[2:]] + [cell_of(key, groups.get(key, [])) for groups in columns]
        for key in subjects(cmp, chronology, checks, keys)
    ]


def survival(cmp: Comparison, chronology: str) -> list[str]:
    body = probe_table(
        cmp,
        chronology,
        ["prohibition"],
        (PROBE.turn, PROBE.probe, PROBE.subject, PROBE.age),
        lambda key, rows: survival_cell(rows),
    )
    if not body:
        return ["No prohibition was in force at a probe of this chronology.", ""]
    return [
        "Each cell: is the prohibition kept in the request view or lost, then is it honoured by the answer "
        "or not; `not asked` where the probe's question does not ask about it (the answer is not judged "
        "and counts nowhere). Age: turns since it was stated.",
        "",
        table(["probe", "prohibition", "age (turns)"] + cmp.headers, body),
        "",
    ]


def drift(cmp: Comparison, chronology: str) -> list[str]:
    places = {"stale": STALE_PLACES, "forgotten": FORGOTTEN_PLACES}
    body = probe_table(
        cmp,
        chronology,
        ["stale", "forgotten"],
        (PROBE.turn, PROBE.probe, PROBE.check, PROBE.subject),
        lambda key, rows: where_cell(rows, places[key[2]]),
    )
    if not body:
        return ["No corrected or forgotten value existed at any probe of this chronology.", ""]
    return [
        "Where a stale value (replaced by a correction) or a forgotten value appears: in the request view, "
        "in the answer, or (forgotten values) in the kept state. It should appear nowhere.",
        "",
        table(["probe", "check", "value"] + cmp.headers, body),
        "",
    ]


def losses(cmp: Comparison, chronology: str) -> list[str]:
    body = [row for c in cmp.columns for row in loss_rows(c, chronology)]
    if not body:
        return ["Nothing checked was missing from a request view at a probe.", ""]
    return [
        "Each prohibition or current value missing from a request view at a probe, where it left, and the "
        "cause category (window, reduction, summary, eviction, not-stored, forget, other-session, stopped, "
        "error, untraced). The last column prints the view at the first of those probes (run from the folder "
        "the run started in, with the default `--out`).",
        "",
        table(
            ["policy", "check", "subject", "cause", "where it was lost", "probes", "repetitions", "see the view"], body
        ),
        "",
    ]


def show_command(column: Column, chronology: str, row: Record) -> Markup | str:
    """The one-line `harness show` that prints this policy's view at the probe."""
    args = [
        "harness",
        "show",
        f"results/{column.run.run_id}",
        "--chronology",
        chronology,
        "--turn",
        str(row[PROBE.turn]),
        "--policy",
        column.policy,
    ]
    return code(shlex.join(args))


def loss_rows(column: Column, chronology: str) -> list[list[object]]:
    """One row per (check, subject, where) of a column, with the probes where it was missing."""
    lost = column.records("probes", chronology, lambda f: f[PROBE.lost_at].notna())
    lost.sort(key=lambda r: (r[PROBE.turn], CHECK_ORDER[r[PROBE.check]], r[PROBE.subject], r[PROBE.repetition]))
    reps = column.repetitions(chronology)
    body = []
    for (check, subject, cause, where), group in split(
        lost, [PROBE.check, PROBE.subject, PROBE.cause, PROBE.lost_at]
    ).items():
        probes = unique(f"{r[PROBE.probe]} (turn {r[PROBE.turn]})" for r in group)
        body.append(
            [
                column.header,
                check,
                subject,
                cause,
                where,
                ", ".join(probes),
                f"{len({r[PROBE.repetition] for r in group})} of {reps}",
                show_command(column, chronology, group[0]),
            ]
        )
    return body
