"""Per chronology: token figures of the model calls made, each labelled with what it is, and the
retries those calls took.

A provider-reported total is a number only when every call reported a count; otherwise the cell
says the total is unknown and gives the sum over the calls that did report, with how many of how
many they are (never presented as the total). Retries are the requests beyond each call's first,
structured-output refusals aside (a negotiation, not a retry: as progress lines count them).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from harness.report.comparison import OWNER, Comparison, PerChronology, plain_column
from harness.report.markdown import table
from harness.report.totals import REPORTED, RETRIES, SUMMED, call_counts
from harness.results.rows import CALL

CALL_KINDS = ("answer", "summarizer", "writer", "judge")


def tokens(cmp: Comparison, chronology: str) -> list[str]:
    body: list[list[object]] = []
    for column in cmp.columns:
        reps = column.repetitions(chronology)
        tallies = column.tables.once(
            "call groups", lambda tables: call_groups(tables.calls, tables.usage()), chronology
        )
        found = tallies.get(column.key(chronology), [])
        if not found:
            body.append([column.header, "no model call" if reps else "not run", "", "", "", "", ""])
            continue
        sent, reused = [f for f in found if not f.cached], [f for f in found if f.cached]
        body += kind_rows(column.header, "", sent, reps) + kind_rows(column.header, "from cache, ", reused, reps)
    return [
        "Request tokens over the model calls, per repetition, split by call kind (answer, summarizer, writer, "
        "judge, and any role a policy names). `all` counts the calls sent in this run. Calls served from the "
        "response cache, or shared with an identical call in flight, sent no request: they are counted apart "
        "(`from cache` rows), and their provider-reported figures are the original response's, not spent in "
        "this run. Provider-reported figures say how many of the calls reported them; where some did not, the "
        "total is unknown and the cell gives the sum over those that did. Retries are the requests beyond each "
        "call's first (429, 5xx, timeouts), per repetition.",
        "",
        table(
            [
                "policy",
                "calls",
                RETRIES_HEADER,
                "estimate tokens (chars/4)",
                "tiktoken tokens (local count)",
                "provider-reported prompt tokens",
                "provider-reported completion tokens",
            ],
            body,
        ),
        "",
    ]


RETRIES_HEADER = "retries (requests beyond each call's first)"
EVERY_KIND = "every kind"  # the kind of a `Figures` over all kinds (the `all` row)


@dataclass(frozen=True)
class Figures:
    """The calls of one column in one chronology, sent or from the cache, of one kind or of every
    kind (`EVERY_KIND`), summed per repetition, then counted over repetitions: per repetition
    the least and largest number of calls (`low["calls"]`, `high["calls"]`) and of each summed
    field's sum of known values (valid counts, for provider-reported ones); how many
    repetitions have a call whose value is unknown (`unknown`); and over every repetition the
    calls, known values, the sum of known values and invalid provider-reported values (`total`)."""

    cached: bool
    kind: object
    low: dict[str, int]
    high: dict[str, int]
    unknown: dict[str, int]
    total: dict[str, int]


def call_groups(calls: pd.DataFrame, usage: pd.DataFrame | None = None) -> PerChronology:
    """These calls counted per (chronology, policy, model, cached, kind), kinds in first-seen order
    each after its `EVERY_KIND` row, by pandas group-bys over every chronology (first per column,
    cached, kind and repetition, then over repetitions, per kind and over every kind), made into
    `Figures` one chronology at a time (`figures_of`). `usage`: their `call_counts`, when made."""
    if calls.empty:
        return PerChronology(pd.DataFrame(), figures_of)
    cached = calls[CALL.cached].fillna(False).astype(bool).to_numpy(dtype=bool)
    keys = [calls[k] for k in (*OWNER, CALL.kind, CALL.repetition)]
    keys.insert(3, pd.Series(cached, index=calls.index))
    summed = (
        (call_counts(calls) if usage is None else usage).groupby(keys, observed=True, sort=False, dropna=False).sum()
    )
    over_kinds = summed.groupby(level=[0, 1, 2, 3, 5], observed=True, sort=False, dropna=False).sum()
    by_kind, every_kind = over_repetitions(summed, [0, 1, 2, 3, 4]), over_repetitions(over_kinds, [0, 1, 2, 3])
    every_kind.index = pd.MultiIndex.from_arrays(
        [*(every_kind.index.get_level_values(n) for n in range(4)), [EVERY_KIND] * len(every_kind)]
    )
    counted = pd.concat([every_kind, by_kind])
    counted.index.names = [*OWNER, "cached", CALL.kind]
    return PerChronology(counted.reset_index(), figures_of)


def over_repetitions(summed: pd.DataFrame, levels: list[int]) -> pd.DataFrame:
    """Per group of `levels` of per-repetition sums: the `Figures` columns (see there), from one
    minimum, one maximum and one sum per group (pandas costs per call, not per column)."""
    frame = summed.copy()
    for field in SUMMED:
        frame[f"unknown {field}"] = (frame[f"known {field}"] < frame["calls"]).astype(np.int64)
    grouped = frame.groupby(level=levels, observed=True, sort=False, dropna=False)
    low, high, total = grouped.min(), grouped.max(), grouped.sum()
    found = {"low calls": low["calls"], "high calls": high["calls"], "total calls": total["calls"]}
    for field in SUMMED:
        found |= {f"low {field}": low[f"sum {field}"], f"high {field}": high[f"sum {field}"]}
        found |= {f"unknown {field}": total[f"unknown {field}"], f"total known {field}": total[f"known {field}"]}
        found |= {f"total sum {field}": total[f"sum {field}"]}
    found |= {f"total invalid {field}": total[f"invalid {field}"] for field in REPORTED}
    return pd.DataFrame(found)


def figures_of(part: pd.DataFrame) -> dict[tuple, list[Figures]]:
    """(chronology, policy, model) -> its `Figures`, of these rows of `call_groups`: per cached
    flag (sent first), the one of every kind, then one per kind in first-seen order."""
    keys, counted = [*OWNER, "cached", CALL.kind], ("calls", *SUMMED)
    values = {str(c): part[c].to_numpy(dtype=np.int64).tolist() for c in part.columns if c not in keys}
    found: dict[tuple, list[Figures]] = {}
    for n, (*owner, cached, kind) in enumerate(zip(*(plain_column(part[k]) for k in keys), strict=True)):
        figures = Figures(
            bool(cached),
            kind,
            {f: values[f"low {f}"][n] for f in counted},
            {f: values[f"high {f}"][n] for f in counted},
            {f: values[f"unknown {f}"][n] for f in SUMMED},
            {f: values[f"total {f}"][n] for f in ("calls", *(f"{k} {f}" for f in SUMMED for k in ("known", "sum")))}
            | {f"invalid {f}": values[f"total invalid {f}"][n] for f in REPORTED},
        )
        found.setdefault(tuple(str(o) for o in owner), []).append(figures)
    for listed in found.values():
        listed.sort(key=lambda f: f.cached)  # stable: sent, then from the cache
    return found


def kind_rows(header: str, prefix: str, found: list[Figures], reps: int) -> list[list[object]]:
    """The `all` row of these calls, then one per call kind when there are several kinds."""
    if not found:
        return []
    every, per_kind = found[0], found[1:]
    seen = [f.kind for f in per_kind]
    kinds = [k for k in CALL_KINDS if k in seen] + sorted(k for k in seen if k not in CALL_KINDS)
    rows = [token_row(header, f"{prefix}all", every, reps)]
    if len(kinds) < 2:
        return rows
    return rows + [token_row(header, prefix + k, per_kind[seen.index(k)], reps) for k in kinds]


def span(figures: Figures, field: str) -> str:
    """One number, or `min–max` when repetitions differ (as `cells.spread` of the sums)."""
    low, high = figures.low[field], figures.high[field]
    return str(low) if low == high else f"{low}–{high}"


def token_row(header: str, kind: str, figures: Figures, reps: int) -> list[object]:
    count = span(figures, "calls") + (f" per repetition ×{reps}" if reps > 1 else "")
    return [
        header,
        f"{kind}: {count}",
        "unknown" if figures.unknown[RETRIES] else span(figures, RETRIES),
        "unknown" if figures.unknown[CALL.estimate_tokens] else span(figures, CALL.estimate_tokens),
        "unknown (tokenizer unavailable)"
        if figures.unknown[CALL.tiktoken_tokens]
        else span(figures, CALL.tiktoken_tokens),
        reported(figures, CALL.reported_prompt_tokens, reps),
        reported(figures, CALL.reported_completion_tokens, reps),
    ]


def reported(figures: Figures, field: str, reps: int = 1) -> str:
    """A provider-reported total with how many of the calls reported it; when some did not, the
    total is unknown and the sum over those that did is given as such (over every repetition)."""
    count, calls = figures.total[f"known {field}"], figures.total["calls"]
    across = f", across {reps} repetitions" if reps > 1 else ""
    total = span(figures, field) if count == calls else ""
    return reported_words(total, figures.total[f"sum {field}"], count, calls, figures.total[f"invalid {field}"], across)


def reported_words(total: str, summed: int, count: int, calls: int, invalid: int, across: str = "") -> str:
    """How a provider-reported figure reads: `total` (count == calls) with how many of the calls
    reported it; none reported: unknown; some: the total unknown and the sum over those that did
    (`summed`), named as such; `invalid` values that were not a count, said."""
    bad = f"; {invalid} reported invalid usage, counted as unknown" if invalid else ""
    if count == calls:
        return f"{total} ({count} of {calls} calls reported{bad})"
    if not count:
        return f"unknown ({count} of {calls} calls reported{bad})"
    return f"unknown total; {summed} over the {count} of {calls} calls that reported{across}{bad}"
