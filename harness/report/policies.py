"""Policies side by side: one row per column (a policy under a model in a run), counted over every
chronology and repetition of the run, first in the report after its header; the same counts as
`policies.csv` beside the report, for a notebook. What each cell and CSV column counts is in
docs/reports.md, "Policies side by side".

Counts, not a winner: rows in the order the run declared its policies, nothing ranked or marked.
Each count is k/n of measured probe rows with the field known: a row unknown behind an opaque
compaction item is said apart, never counted absent, and another session's prohibition or value
(`other-session`) counts nowhere, as it is not a loss.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from harness.report import controls
from harness.report.call_kinds import by_call_kind, kinds_of, known_sum, own_tokens
from harness.report.comparison import Column, Comparison, flags
from harness.report.cost_section import WAY_WORDS, basis_text, money, policy_costs
from harness.report.markdown import table
from harness.report.prices import PriceList
from harness.report.pricing import WAYS, Costs
from harness.report.residue import CHECK_WORDS, CHECKS, NOT_RECORDED, Kept, column_episodes, kept_counts
from harness.report.spread import interval_text, wilson
from harness.report.totals import REPORTED, RETRIES, STATUSES, SUMMED, TOKEN_FIELDS, KindFigures
from harness.results.rows import (
    EXPECT,
    JUDGED_EXPECT,
    NEEDS_JUDGE,
    NOT_ASKED,
    PROBE,
    REFUSED_NOT_IN_VIEW,
    UNKNOWN_VIEW,
    expect_kind,
)

CSV_NAME = "policies.csv"


@dataclass(frozen=True)
class Count:
    """k of n (n: rows with a verdict)."""

    k: int
    n: int
    waiting: int = 0  # rows not measured for want of a judge (`needs --judge`)
    unknown: int = 0  # rows whose field is unknown behind an opaque compaction item (not in n)
    free: int | None = None  # of the k, passable without memory (harness.report.controls); None: no control


@dataclass(frozen=True)
class PolicyRow:
    """What one column's row shows."""

    header: str
    run_id: str
    policy: str
    model: str
    counts: dict[str, Count]
    conversations: dict[str, int]
    cached_calls: int
    kinds: dict[str, KindFigures] = field(default_factory=dict)
    residue: dict[str, Kept] | None = None  # per check; None: the run recorded no residue
    control: bool = False  # the control's own row (`none`): shown as the control, not a contender
    passed: Count = Count(0, 0)  # checks passed, of those with a verdict; `free`: of them passable without memory
    # with prices (`--prices`): the policy's own calls' three costs (harness.report.cost_section)
    costs: Costs | None = None


# (key, markdown header): the probe counts, in table order
COUNTS = (
    ("prohibitions_in_view", "prohibitions in view at probes"),
    ("honoured_asked_in_view", "honoured where asked and in view"),
    ("refused_not_in_view", "refused, not in view"),
    ("current_in_view", "current values in view at probes"),
    ("current_in_answer", "current values in answers"),
    ("stale_in_view", "stale values in view"),
    ("stale_in_answer", "stale values in answers"),
    ("forgotten_in_view", "forgotten values back in view"),
    ("forgotten_in_answer", "forgotten values back in answers"),
    ("forgotten_in_retained", "forgotten values back in kept state"),
)
# The expectation counts, shown after the residue columns (offline and judged apart)
EXPECT_COUNTS = (
    ("expect_offline", "expectations met (offline)"),
    ("expect_judged", "expectations met (judged)"),
)
WITH_INTERVAL = ("prohibitions_in_view", "honoured_asked_in_view", "current_in_view", "current_in_answer")
# The retention figures whose k the control can pass too, and the place that says so (`controls.PLACES`)
FREE_PLACE = {
    "prohibitions_in_view": PROBE.in_view,
    "honoured_asked_in_view": PROBE.in_answer,
    "current_in_view": PROBE.in_view,
    "current_in_answer": PROBE.in_answer,
    "expect_offline": PROBE.passed,
    "expect_judged": PROBE.passed,
    "passed": PROBE.passed,  # the checks passed (`PolicyRow.passed`)
}


def figures(probes: pd.DataFrame, marks: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per probe row, whether it counts in each figure's k, n, `unknown`, `waiting` and, with the
    run's control `marks` (harness.report.controls), `free`: columns `<figure> <part>` (the
    figures of `COUNTS`, `EXPECT_COUNTS` and `passed`; see the module's docstring), whose sums
    over some rows (a column's, by a group-by) are those rows' counts (`counted`)."""
    measured = flags(probes[PROBE.status] == "measured")
    # Another session's prohibition or value is not the policy's to keep: left out, as everywhere (not a loss).
    own = measured & ~flags(probes[PROBE.cause] == "other-session")
    check, note = probes[PROBE.check], probes[PROBE.note]
    places = (PROBE.in_view, PROBE.in_answer, PROBE.in_retained, PROBE.passed)
    known = {p: probes[p].notna().to_numpy(dtype=bool) for p in places}
    true = {p: flags(probes[p].astype("boolean")) for p in places}
    # unknown behind an opaque compaction item, or messages a provider's report put in dispute
    opaque = flags(note.isin(UNKNOWN_VIEW))
    free = controls.marks_of(probes, marks)
    parts: dict[str, np.ndarray] = {}

    def figure(
        name: str, rows: np.ndarray, place: str, k: object = None, n: object = None, unknown: bool = False
    ) -> None:
        parts[f"{name} k"] = rows & (true[place] if k is None else k)
        parts[f"{name} n"] = rows & (known[place] if n is None else n)
        if unknown:
            parts[f"{name} unknown"] = rows & ~known[place] & opaque
        if free is not None and name in FREE_PLACE:
            parts[f"{name} free"] = parts[f"{name} k"] & free[FREE_PLACE[name]].to_numpy(dtype=bool)

    prohibitions = own & flags(check == "prohibition")
    figure("prohibitions_in_view", prohibitions, PROBE.in_view, unknown=True)
    asked = prohibitions & ~flags(note == NOT_ASKED)
    figure("honoured_asked_in_view", asked & true[PROBE.in_view], PROBE.in_answer)
    out_of_view = asked & known[PROBE.in_view] & ~true[PROBE.in_view]
    figure("refused_not_in_view", out_of_view, PROBE.in_view, k=flags(note == REFUSED_NOT_IN_VIEW), n=True)
    for kind, rows, shown in (
        ("current", own, (PROBE.in_view, PROBE.in_answer)),
        ("stale", measured, (PROBE.in_view, PROBE.in_answer)),
        ("forgotten", measured, (PROBE.in_view, PROBE.in_answer, PROBE.in_retained)),
    ):
        for place in shown:
            figure(f"{kind}_{place}", rows & flags(check == kind), place, unknown=True)
    expected = measured & flags(check == EXPECT)
    judged = np.zeros(len(probes), dtype=bool)
    judged[expected] = probes[PROBE.subject][expected].astype(object).map(expect_kind).isin(JUDGED_EXPECT)
    figure("expect_offline", expected & ~judged, PROBE.passed)
    figure("expect_judged", expected & judged, PROBE.passed)
    parts["expect_judged waiting"] = expected & judged & flags(note == NEEDS_JUDGE)  # rubrics without --judge
    figure(PROBE.passed, own, PROBE.passed)
    return pd.DataFrame(parts, index=probes.index)


def counted(sums: Mapping[str, int], marked: bool) -> dict[str, Count]:
    """The `Count`s of summed `figures` (a figure no row counted in: 0); `marked` False: no
    control to mark against, so `free` is unknown (None, never 0)."""

    def count(name: str) -> Count:
        k, n, waiting, unknown, free = (
            int(sums.get(f"{name} {p}", 0)) for p in ("k", "n", "waiting", "unknown", "free")
        )
        return Count(k, n, waiting, unknown, free if marked and name in FREE_PLACE else None)

    return {name: count(name) for name, _ in (*COUNTS, *EXPECT_COUNTS, (PROBE.passed, ""))}


def probe_counts(probes: pd.DataFrame, marks: pd.DataFrame | None = None) -> dict[str, Count]:
    """The counts of some probe rows (`counted`); with the run's control `marks`, each of
    `FREE_PLACE`'s figures says how many of its k are passable without memory."""
    return counted(figures(probes, marks).sum(), marks is not None)


def column_counts(column: Column) -> dict[str, Count]:
    """A column's counts, of its probe rows of every chronology: every column's summed by one
    pandas group-by over the run's probes.csv, once per run. The control's own row is not
    compared with itself (its `free` is unknown)."""
    whole, marks = column.tables.whole, controls.run_marks(column.tables)
    if "probe counts" not in whole:
        probes = column.tables.whole_probes
        summed = figures(probes, marks).groupby([probes[PROBE.policy], probes[PROBE.model]], observed=True).sum()
        whole["probe counts"] = {(str(p), str(m)): sums for (p, m), sums in summed.to_dict("index").items()}
    sums = whole["probe counts"].get((column.policy, column.model), {})
    return counted(sums, marks is not None and not controls.is_control(column))


def policy_rows(cmp: Comparison) -> list[PolicyRow]:
    """One `PolicyRow` per column, in the comparison's order."""
    return [policy_row(c, cmp.prices) for c in cmp.columns]


def policy_row(column: Column, prices: PriceList | None = None) -> PolicyRow:
    """One column's row: its probe rows counted (probes.csv, read whole), its calls and
    conversations from the run's totals, added up block by block (harness.report.totals)."""
    totals, key = column.tables.run_totals(), (column.policy, column.model)
    found = column_episodes(column)
    counts = column_counts(column)
    return PolicyRow(
        column.header,
        column.run.run_id,
        column.policy,
        column.model,
        counts,
        totals.statuses.get(key, dict.fromkeys(STATUSES, 0)),
        totals.cached.get(key, 0),
        totals.kinds.get(key, {}),
        None if found is None else kept_counts(found),
        controls.is_control(column),
        counts[PROBE.passed],
        None if prices is None else policy_costs(column, prices),
    )


def count_text(name: str, count: Count) -> str:
    """A count with its interval (`WITH_INTERVAL`) and, where the control passes some of it, how many."""
    waiting = f"{count.waiting} {NEEDS_JUDGE}" if count.waiting else ""
    if not count.n:
        unknown = f"{count.unknown} unknown (opaque compaction item)" if count.unknown else ""
        return waiting or unknown or "none measured"
    interval = f" {interval_text(count.k, count.n)}" if name in WITH_INTERVAL else ""
    free = f" ({count.free} {controls.WORDS})" if count.free else ""
    unknown = f" · {count.unknown} unknown (opaque compaction item)" if count.unknown else ""
    return f"{count.k}/{count.n}{free}{interval}" + (f" · {waiting}" if waiting else "") + unknown


def short_count(name: str, count: Count) -> str:
    """A side-by-side cell: `k/n`, with its interval for `WITH_INTERVAL`; what the control passes
    too is in `policies.csv` and, overall, in the column `passable without memory`. Rows unknown
    behind an opaque compaction item are said, never counted absent."""
    unknown = f"{count.unknown} unknown" if count.unknown else ""
    if not count.n:
        return unknown or "none measured"
    interval = f" {interval_text(count.k, count.n)}" if name in WITH_INTERVAL else ""
    return f"{count.k}/{count.n}{interval}" + (f" · {unknown}" if unknown else "")


def pair_text(row: PolicyRow, *names: str) -> str:
    """Several counts of one row in one cell, in the header's order, ` · ` between them."""
    return " · ".join(short_count(name, row.counts[name]) for name in names)


def expect_text(row: PolicyRow) -> str:
    """Expectations met: the offline ones, then the judged ones and those waiting for a judge when any."""
    offline, judged = row.counts["expect_offline"], row.counts["expect_judged"]
    parts = [short_count("expect_offline", offline)] if offline.n or not (judged.n or judged.waiting) else []
    parts += [f"judged {judged.k}/{judged.n}"] if judged.n else []
    parts += [f"{judged.waiting} {NEEDS_JUDGE}"] if judged.waiting else []
    return " · ".join(parts)


def passable_text(row: PolicyRow) -> str:
    """The column `passable without memory`: of the checks passed, those the control passed too."""
    if row.control:
        return f"the control ({row.passed.k}/{row.passed.n} passed)"
    if row.passed.free is None:
        return "unknown: no control in this run"
    return f"{row.passed.free} of {row.passed.k} passed"


def kept_short(row: PolicyRow) -> str:
    """Old values still kept: per check the distinct values and the places (see `policies.csv`)."""
    if row.residue is None:
        return NOT_RECORDED
    parts = [
        f"{kept.values} {CHECK_WORDS[c]} ({', '.join(kept.places)})" for c in CHECKS if (kept := row.residue[c]).values
    ]
    return " · ".join(parts) or "none"


def stopped_text(row: PolicyRow) -> str:
    """Conversations stopped and in error, of all the column's conversations."""
    counts = [row.conversations[s] for s in STATUSES]  # completed, stopped, error
    return f"{counts[1]} · {counts[2]} of {sum(counts)}"


def cost_text(row: PolicyRow) -> str:
    """The one cost cell: with prices, the policy's own calls without a cache (the currency is in
    the header); else their prompt tokens, the counter named."""
    if row.costs is not None:
        return money(row.costs.of(WAYS[0]))
    return own_tokens(row.kinds)


def side_by_side(cmp: Comparison, rows: list[PolicyRow] | None = None) -> list[str]:
    """The section's markdown: one row per column, over every chronology and repetition, at most
    12 short columns; the long figures in `policies.csv` and the table by call kind below it."""
    rows = policy_rows(cmp) if rows is None else rows
    if not rows:
        return []
    marking = any(r.control for r in rows)  # a control ran: its column is shown
    expecting = expected(rows)  # none when no probe expects an answer
    currency = cmp.prices.currency if cmp.prices else ""
    header = [
        "policy",
        "prohibitions in view",
        "honoured (asked, in view)",
        "current values in view",
        "current values in answers",
        "stale in view · in answer",
        "forgotten back in view · answer · kept state",
        "old values still kept",
        *(["expectations met"] if expecting else []),
        *([controls.WORDS] if marking else []),
        "stopped · error",
        f"{WAY_WORDS[WAYS[0]]}, {currency}" if cmp.prices else "prompt tokens sent",
    ]
    body = [
        [
            f"{r.header} (control)" if r.control else r.header,
            *(short_count(name, r.counts[name]) for name in WITH_INTERVAL),
            pair_text(r, "stale_in_view", "stale_in_answer"),
            pair_text(r, "forgotten_in_view", "forgotten_in_answer", "forgotten_in_retained"),
            kept_short(r),
            *([expect_text(r)] if expecting else []),
            *([passable_text(r)] if marking else []),
            stopped_text(r),
            cost_text(r),
        ]
        for r in rows
    ]
    return [
        "## Policies side by side",
        "",
        "Every chronology and repetition of the run counted together, one row per policy in the order the run "
        "declared them: counts side by side, nothing scored. k/n counts probe rows (one per check, probe and "
        "repetition) with a verdict, with the 95% Wilson interval where shown. A prohibition or value stated in "
        "another session, whose history the policy never shares, counts in none of them (not a loss). Honoured: "
        "the asked prohibitions that were in view (a refusal of one out of view is counted apart in "
        f"`{CSV_NAME}`). Current values are the latest declared for each key, which should survive; stale and "
        "forgotten values should appear nowhere. Old values still kept: the distinct corrected or forgotten values "
        "the retained state held after their correction or forget, and where (a history or index keeps a "
        "corrected value by design). "
        f"{EXPECT_WORDS if expecting else ''}"
        "Stopped · error: conversations that ended so, of all. "
        + (
            f"Cost: the policy's own calls (not the judge's) {WAY_WORDS[WAYS[0]]}; the other two ways and "
            "the cost by call kind are in the cost section. "
            if cmp.prices
            else "Prompt tokens sent: over the policy's own calls (not the judge's), tiktoken where every call "
            "has a count, else the characters/4 estimate, as named. "
        )
        + f"Every figure, with the counts behind each cell, is in `{CSV_NAME}` in the report's folder.",
        "",
        control_words(cmp),
        "",
        table(header, body),
        "",
        *by_call_kind((r.header, r.kinds, r.cached_calls) for r in rows),
    ]


def control_words(cmp: Comparison) -> str:
    """What the table says of the control: how its marks are counted, or why nothing is marked."""
    missing = controls.without_control(cmp)
    if len(missing) == len(cmp.runs):
        return controls.no_control_line(missing)
    some = f" Nothing of {', '.join(missing)} is marked: the control did not run there." if missing else ""
    return (
        f"The control `{controls.CONTROL}` (the system message and the current turn, nothing kept) is shown as the "
        f"control, not as a contender: a check it passes needs no memory (the answer's silence honours a "
        f"prohibition, the question or the system message carries a value, a stale value cannot come back from "
        f"nothing). Of another policy's figure, `(k {controls.WORDS})` counts the rows the control also had true "
        f"in the same place (same chronology, model, repetition, probe, check and subject); the column "
        f"`{controls.WORDS}` counts, of the checks the policy passed, those the control passed too. "
        f"Retention is what is left.{some}"
    )


EXPECT_WORDS = (
    "Expectations met: the probes' `expect:` entries whose answer met them, offline ones (value, pattern, not, "
    "abstain), then rubrics the judge decided (`judged k/n`); a rubric in a run without `--judge` is not measured "
    "(`needs --judge`). "
)


def expected(rows: list[PolicyRow]) -> bool:
    """Whether any probe of the run expects an answer (the table then shows the expectation counts)."""
    return any(r.counts[name].n or r.counts[name].waiting for r in rows for name, _ in EXPECT_COUNTS)


FIRST_COLUMNS = ("policy", "model", "run_id")  # every policies.csv starts so: how a report's folder is known


def csv_header(kinds: list[str], places: list[str], priced: bool = False) -> list[str]:
    names = list(FIRST_COLUMNS)
    for name, _ in COUNTS:
        names += [f"{name}_k", f"{name}_n"] + ([f"{name}_low", f"{name}_high"] if name in WITH_INTERVAL else [])
        names += [f"{name}_passable"] if name in FREE_PLACE else []
    for check in CHECKS:
        names += [f"{check}_kept", f"{check}_kept_at_end"] + [f"{check}_kept_in_{'_'.join(p.split())}" for p in places]
    names += ["expect_offline_k", "expect_offline_n", "expect_judged_k", "expect_judged_n", "expect_judged_needs_judge"]
    names += ["expect_offline_passable", "expect_judged_passable"]
    names += ["control", "passed_checks_k", "passed_checks_n", "passed_checks_passable"]
    names += [f"conversations_{s}" for s in STATUSES] + ["calls_from_cache", "retries"]
    for kind in kinds:
        names += [f"{kind}_calls", f"{kind}_estimate_tokens", f"{kind}_tiktoken_tokens"]
        for name in REPORTED:
            names += [f"{kind}_{name}", f"{kind}_{name}_calls"]
    if priced:  # with --prices: the policy's own calls' costs, three ways, and what they priced
        names += [f"cost_{way}" for way in WAYS] + ["cost_currency", "cost_basis"]
    return names


def _blank(value: int | None) -> object:
    """A count, or an empty cell where it is unknown (no control in the run, or the control's own row)."""
    return "" if value is None else value


def csv_row(row: PolicyRow, kinds: list[str], places: list[str], currency: str | None = None) -> list[object]:
    cells: list[object] = [row.policy, row.model, row.run_id]
    for name, _ in COUNTS:
        count = row.counts[name]
        cells += [count.k, count.n]
        if name in WITH_INTERVAL:
            cells += [f"{b:.6f}" for b in wilson(count.k, count.n)] if count.n else ["", ""]
        if name in FREE_PLACE:
            cells.append(_blank(count.free))
    for check in CHECKS:
        kept = row.residue[check] if row.residue else None
        if kept is None:  # not recorded: empty cells, never 0
            cells += [""] * (2 + len(places))
        else:
            cells += [kept.values, kept.at_end, *(kept.places.get(p, 0) for p in places)]
    offline, judged = row.counts["expect_offline"], row.counts["expect_judged"]
    cells += [offline.k, offline.n, judged.k, judged.n, judged.waiting]
    cells += [_blank(offline.free), _blank(judged.free)]
    cells += [int(row.control), row.passed.k, row.passed.n, _blank(row.passed.free)]
    cells += [row.conversations[s] for s in STATUSES] + [row.cached_calls]
    retried = [known_sum(f, RETRIES) for f in row.kinds.values()]
    cells.append("" if any(r is None for r in retried) else sum(r for r in retried if r is not None))
    zeros = {f: 0 for f in SUMMED}
    empty = KindFigures(0, zeros, zeros, zeros)
    for kind in kinds:
        figures = row.kinds.get(kind, empty)
        cells.append(figures.calls)
        cells += ["" if known_sum(figures, f) is None else known_sum(figures, f) for f in TOKEN_FIELDS[:2]]
        for name in REPORTED:
            known = figures.known[name]
            cells += [figures.sums[name] if known or not figures.calls else "", known]
    if currency is not None and row.costs is not None:
        cells += ["" if row.costs.of(w).amount is None else f"{row.costs.of(w).amount:.6f}" for w in WAYS]
        cells += [currency, basis_text(row.costs)]
    return cells


def policies_csv(cmp: Comparison, rows: list[PolicyRow] | None = None) -> str:
    """`policies.csv`: the side-by-side table's counts as plain numbers, unknown as an empty cell."""
    rows = policy_rows(cmp) if rows is None else rows
    kinds = kinds_of(r.kinds for r in rows)
    # The places any row kept an old value in: a column per place.
    places = sorted({p for r in rows if r.residue for kept in r.residue.values() for p in kept.places})
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    currency = cmp.prices.currency if cmp.prices else None
    writer.writerow(csv_header(kinds, places, currency is not None))
    writer.writerows(csv_row(r, kinds, places, currency) for r in rows)
    return out.getvalue()
