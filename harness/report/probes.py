"""Per chronology, at each probe: prohibition survival (pattern and judge), drift, and where each loss happened."""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from harness.report.cells import (
    APART,
    FORGOTTEN_PLACES,
    FREE,
    STALE_PLACES,
    Tally,
    refused_not_in_view,
    survival_cell,
    where_cell,
)
from harness.report.comparison import (
    OWNER,
    Column,
    Comparison,
    PerChronology,
    Record,
    Tables,
    flags,
    in_groups,
    in_order,
    owner_rows,
    ranks,
    unique,
)
from harness.report.controls import mark_words, marks_of, run_marks
from harness.report.glance import checks_something
from harness.report.markdown import Markup, code, table
from harness.results.rows import EXPECT, NOT_ASKED, PROBE

CHECK_ORDER = {"prohibition": 0, "current": 1, "stale": 2, "forgotten": 3, EXPECT: 4}


TALLIED = (
    PROBE.in_view,
    PROBE.in_answer,
    PROBE.in_retained,
    PROBE.passed,
    PROBE.judged_in_view,
    PROBE.judged_in_answer,
)
INT_KEYS = (PROBE.turn, PROBE.age, PROBE.repetition)
# Counted per cell: the fields, and the answers kept apart from their answer field (`APART`).
COUNTED = (*TALLIED, *APART.values(), *FREE.values())


POOLS = ("measured", "asked")


def count_checks(
    probes: pd.DataFrame, checks: Sequence[str], keys: Sequence[str], marks: pd.DataFrame | None = None
) -> PerChronology:
    """The probe rows of `checks` counted per cell (owner and `keys`) by one pandas group-by over
    every chronology, in first-seen order, made into `Tally`s one chronology at a time
    (`tallies_of`); with the run's control `marks` (harness.report.controls), how many are
    passable without memory."""
    frame = probes[flags(probes[PROBE.check].isin(list(checks)))]
    owner = [PROBE.chronology, PROBE.policy, PROBE.model]
    measured = flags(frame[PROBE.status] == "measured")
    asked = measured & ~flags(frame[PROBE.note] == NOT_ASKED)
    counts = {"rows": np.ones(len(frame), dtype=bool), "measured": measured, "asked": asked}
    for field in TALLIED:
        value, true = frame[field].notna().to_numpy(dtype=bool), flags(frame[field].astype("boolean"))
        if field in APART:  # a refusal without the prohibition in view: a verdict, but not a yes
            refused = refused_not_in_view(frame, field)
            value, true = value | refused, true & ~refused
            for pool, chosen in (("measured", measured), ("asked", asked)):
                counts[f"known {pool} {APART[field]}"] = counts[f"true {pool} {APART[field]}"] = chosen & refused
        for pool, chosen in (("measured", measured), ("asked", asked)):
            counts[f"known {pool} {field}"], counts[f"true {pool} {field}"] = chosen & value, chosen & true
    found = marks_of(frame, marks)
    for field, name in FREE.items():
        free = np.zeros(len(frame), dtype=bool) if found is None else found[field].to_numpy(dtype=bool)
        for pool, chosen in (("measured", measured), ("asked", asked)):
            counts[f"known {pool} {name}"] = counts[f"true {pool} {name}"] = chosen & free
    by = [frame[k] for k in (*owner, *keys)]
    summed = pd.DataFrame(counts, index=frame.index).groupby(by, observed=True, sort=False, dropna=False).sum()
    summed = summed.astype(np.int32)
    first = frame[PROBE.status].groupby(by, observed=True, sort=False, dropna=False).nth(0)
    # each cell's first row's status, in the same order (object: a missing one stays None, as the records say)
    summed[PROBE.status] = pd.Series(first.to_numpy(dtype=object, na_value=None), index=summed.index, dtype=object)
    return PerChronology(summed.reset_index(), lambda part: tallies_of(part, keys))


def tallies_of(part: pd.DataFrame, keys: Sequence[str]) -> dict[tuple, dict[tuple, Tally]]:
    """(chronology, policy, model) -> the values of `keys` -> its `Tally`, of these rows of `count_checks`."""
    fields = [(pool, f) for pool in POOLS for f in COUNTED]
    columns = [*OWNER, *keys, "rows", PROBE.status, "measured", "asked"]
    columns += [f"{part} {pool} {f}" for part in ("known", "true") for pool, f in fields]
    found: dict[tuple, dict[tuple, Tally]] = {}
    for row in part[columns].to_numpy(dtype=object).tolist():  # one conversion, then Python values per cell
        cell, counts = row[3 + len(keys) :], row[3 + len(keys) + 4 :]
        known, true = dict(zip(fields, counts[: len(fields)])), dict(zip(fields, counts[len(fields) :]))
        key = tuple(plain(k, v) for k, v in zip(keys, row[3 : 3 + len(keys)], strict=True))
        found.setdefault((str(row[0]), str(row[1]), str(row[2])), {})[key] = Tally(*cell[:4], known, true)
    return found


def plain(field: str, value: object) -> object:
    """A group-by key as the records give it: missing as None, whole numbers as int, else text."""
    if value is None or pd.isna(value):  # type: ignore[arg-type]
        return None
    return int(value) if field in INT_KEYS else str(value)  # type: ignore[call-overload]


def tallies(column: Column, chronology: str, checks: Sequence[str], keys: Sequence[str]) -> dict[tuple, Tally]:
    """The values of `keys` -> the `Tally` of this column's rows of `checks` in one chronology."""
    name = f"checks {'/'.join(checks)} by {'/'.join(keys)}"
    counted = column.tables.once(
        name, lambda tables: count_checks(tables.probes, checks, keys, run_marks(tables)), chronology
    )
    return counted.get(column.key(chronology), {})


def subjects(cmp: Comparison, chronology: str, checks: Sequence[str], keys: Sequence[str]) -> list[tuple]:
    """The distinct values of `keys` over every column's checks, in turn, check, subject order."""
    found = unique(key for c in cmp.columns for key in tallies(c, chronology, checks, keys))
    place = {k: n for n, k in enumerate(keys)}

    def order(key: tuple) -> tuple:
        check = key[place[PROBE.check]] if PROBE.check in place else checks[0]
        return key[place[PROBE.turn]], CHECK_ORDER[check], key[place[PROBE.subject]]

    return sorted(found, key=order)


def probe_table(
    cmp: Comparison,
    chronology: str,
    checks: Sequence[str],
    keys: Sequence[str],
    cell_of: Callable[[tuple, Tally], str],
) -> list[list[object]]:
    """One row per subject (`keys`: turn, probe, labels...), then `cell_of` for each column."""
    none = Tally(0, None, 0, 0, {}, {})
    columns = [tallies(c, chronology, checks, keys) for c in cmp.columns]
    return [
        [f"{key[1]} (turn {key[0]})", *key[2:]] + [cell_of(key, groups.get(key, none)) for groups in columns]
        for key in subjects(cmp, chronology, checks, keys)
    ]


def survival(cmp: Comparison, chronology: str) -> list[str]:
    body = probe_table(
        cmp,
        chronology,
        ["prohibition"],
        (PROBE.turn, PROBE.probe, PROBE.subject, PROBE.age),
        lambda key, tally: survival_cell(tally),
    )
    if not body:
        return ["No prohibition was in force at a probe of this chronology.", ""]
    return [
        "Each cell: is the prohibition kept in the request view or lost, then is it honoured by the answer "
        "or not; `not asked` where the probe's question does not ask about it (the answer is not judged "
        "and counts nowhere); `refused, not in view` where the answer refused although the prohibition was "
        "not in the view (another prohibition, or chance, refused: not counted as honoured). Age: turns "
        "since it was stated." + mark_words(cmp),
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
        lambda key, tally: where_cell(tally, places[key[2]]),
    )
    if not body:
        return ["No corrected or forgotten value existed at any probe of this chronology.", ""]
    return [
        "Where a stale value (replaced by a correction) or a forgotten value appears: in the request view, "
        "in the answer, or (forgotten values) in the kept state. It should appear nowhere." + mark_words(cmp),
        "",
        table(["probe", "check", "value"] + cmp.headers, body),
        "",
    ]


def losses(cmp: Comparison, chronology: str) -> list[str]:
    body = [row for c in cmp.columns for row in loss_rows(c, chronology)]
    if not body and not any(checks_something(c, chronology) for c in cmp.columns):
        return ["Nothing checked: no probe of this chronology checked a prohibition or a current value.", ""]
    if not body:
        return ["Nothing checked was missing from a request view at a probe.", ""]
    return [
        "Each prohibition or current value missing from a request view at a probe, where it left, and the "
        "cause category (window, reduction, summary, eviction, replaced, not-stored, tool-collapse, forget, tool-clear, other-session, stopped, "
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
    reps = column.repetitions(chronology)
    found = column.tables.once("losses", count_losses, chronology).get(column.key(chronology), [])
    return [
        [
            column.header,
            *loss.cells,
            ", ".join(loss.probes),
            f"{loss.repetitions} of {reps}",
            show_command(column, chronology, {PROBE.turn: loss.turn}),
        ]
        for loss in found
    ]


@dataclass(frozen=True)
class Loss:
    """The probe rows of one column where one check's subject was missing from the view, lost
    the same way: its cells (check, subject, cause, where), the probes (`probe (turn N)`, in
    turn order), in how many repetitions, and the turn of its first probe."""

    cells: tuple[object, object, object, object]
    probes: list[str]
    repetitions: int
    turn: object


LOSS_KEYS = (PROBE.check, PROBE.subject, PROBE.cause, PROBE.lost_at)


def count_losses(tables: Tables) -> PerChronology | dict:
    """(chronology, policy, model) -> its `Loss`es, in the order of their first probe row once
    each column's rows are sorted by turn, check, subject and repetition: counted over every
    chronology at once by NumPy and pandas, kept as one row per (loss, probe), made into `Loss`es
    one chronology at a time."""
    probes = tables.probes
    fields = [*LOSS_KEYS, PROBE.probe, PROBE.turn, PROBE.repetition]
    # An expectation's evidence is shown in its own section (harness.report.expectations).
    chosen = flags(probes[PROBE.lost_at].notna()) & ~flags(probes[PROBE.check] == EXPECT)
    lost = probes[[*OWNER, *fields]].take(np.flatnonzero(chosen))
    if lost.empty:
        return {}
    keys = [
        lost[PROBE.turn].to_numpy(dtype=np.float64, na_value=np.nan),
        ranks(lost[PROBE.check], CHECK_ORDER.__getitem__),
        ranks(lost[PROBE.subject]),
        lost[PROBE.repetition].to_numpy(dtype=np.float64, na_value=np.nan),
    ]
    ordered = in_order(lost, keys)
    grouped = in_groups(ordered, [*OWNER, *LOSS_KEYS])
    ordered = ordered.assign(
        group=grouped.ngroup(), repetitions=grouped[PROBE.repetition].transform("nunique", dropna=False)
    )
    return PerChronology(ordered.drop_duplicates([*OWNER, *LOSS_KEYS, PROBE.probe, PROBE.turn]), losses_of)


def losses_of(shown: pd.DataFrame) -> dict[tuple, list[Loss]]:
    """The `Loss`es of these rows of `count_losses`, by owner, in order."""
    found: dict[tuple, dict[int, Loss]] = {}
    for owner, (*cells, probe, turn, group, repetitions) in owner_rows(
        shown, [*LOSS_KEYS, PROBE.probe, PROBE.turn, "group", "repetitions"]
    ):
        losses = found.setdefault(owner, {})
        if group not in losses:
            losses[group] = Loss(tuple(cells), [], repetitions, turn)  # type: ignore[arg-type]
        # one row per probe and turn of a group (`count_losses`), so no label comes twice
        losses[group].probes.append(f"{probe} (turn {turn})")
    return {owner: list(losses.values()) for owner, losses in found.items()}
