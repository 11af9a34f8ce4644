"""Per chronology: token figures of the model calls made, each labelled with what it is."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from harness.markdown import table
from harness.report.cells import spread
from harness.report.comparison import Comparison, Record, plain_column
from harness.rows import CALL
from harness.usage import recorded_count

CALL_KINDS = ("answer", "summarizer", "writer", "judge")


def tokens(cmp: Comparison, chronology: str) -> list[str]:
    body: list[list[object]] = []
    for column in cmp.columns:
        calls, reps = column.part("calls", chronology), column.repetitions(chronology)
        if calls.empty:
            body.append([column.header, "no model call" if reps else "not run", "", "", "", ""])
            continue
        figures = call_figures(calls)
        sent, reused = figures[~figures[CALL.cached]], figures[figures[CALL.cached]]
        body += kind_rows(column.header, "", sent, reps) + kind_rows(column.header, "from cache, ", reused, reps)
    return [
        "Request tokens over the model calls, per repetition, split by call kind (answer, summarizer, writer, "
        "judge, and any role a policy names). `all` counts the calls sent in this run. Calls served from the "
        "response cache, or shared with an identical call in flight, sent no request: they are counted apart "
        "(`from cache` rows), and their provider-reported figures are the original response's, not spent in "
        "this run. Provider-reported figures say how many of the calls reported them.",
        "",
        table(
            [
                "policy",
                "calls",
                "estimate tokens (chars/4)",
                "tiktoken tokens (local count)",
                "provider-reported prompt tokens",
                "provider-reported completion tokens",
            ],
            body,
        ),
        "",
    ]


REPORTED = (CALL.reported_prompt_tokens, CALL.reported_completion_tokens)


def call_figures(calls: pd.DataFrame) -> pd.DataFrame:
    """Per call, what the token table counts: its repetition and kind, whether it came from the
    cache, its local counts, and per provider-reported field the valid count (NaN when none) and
    whether it is invalid (`invalid_count`). Judged per value in Python only where a provider
    reported something; the table then counts by repetition with pandas."""
    cached = calls[CALL.cached]
    figures = pd.DataFrame(
        {
            CALL.repetition: calls[CALL.repetition],
            CALL.kind: calls[CALL.kind],
            CALL.cached: cached.fillna(False).astype(bool).to_numpy(dtype=bool),
            CALL.estimate_tokens: calls[CALL.estimate_tokens],
            CALL.tiktoken_tokens: calls[CALL.tiktoken_tokens],
        },
        index=calls.index,
    )
    raw = calls[CALL.invalid_reported_usage] if CALL.invalid_reported_usage in calls else None
    for field in REPORTED:
        count = pd.Series(float("nan"), index=calls.index)
        invalid = pd.Series(False, index=calls.index)
        given = calls[field].notna()
        if given.any():
            picked = plain_column(calls[field][given])
            counts = [recorded_count(v) for v in picked]
            count[given] = [float("nan") if c is None else float(c) for c in counts]
            invalid[given] = [c is None for c in counts]
        if raw is not None and raw.notna().any():
            flagged = raw.notna()
            name = field.removeprefix("reported_")
            named = [name in v or "usage" in v for v in plain_column(raw[flagged])]
            invalid[flagged] = invalid[flagged].to_numpy(dtype=bool) | np.array(named, dtype=bool)
        figures[field], figures[f"invalid {field}"] = count, invalid
    return figures


def kind_rows(header: str, prefix: str, calls: pd.DataFrame, reps: int) -> list[list[object]]:
    """The `all` row of `calls` (`call_figures`), then one per call kind when there are several kinds."""
    if calls.empty:
        return []
    seen = pd.unique(calls[CALL.kind].to_numpy(dtype=object, na_value=None)).tolist()
    kinds = [k for k in CALL_KINDS if k in seen] + sorted(k for k in seen if k not in CALL_KINDS)
    rows = [token_row(header, f"{prefix}all", calls, reps)]
    if len(kinds) < 2:
        return rows
    kind = calls[CALL.kind].astype(object)
    return rows + [token_row(header, prefix + k, calls[(kind == k).to_numpy(dtype=bool)], reps) for k in kinds]


def token_row(header: str, kind: str, calls: pd.DataFrame, reps: int) -> list[object]:
    by_rep = calls.groupby(CALL.repetition, sort=False, dropna=False)
    count = spread(by_rep.size().tolist()) + (f" per repetition ×{reps}" if reps > 1 else "")
    totals = per_repetition(calls, CALL.tiktoken_tokens, by_rep)
    return [
        header,
        f"{kind}: {count}",
        spread(per_repetition(calls, CALL.estimate_tokens, by_rep)),
        "unknown (tokenizer unavailable)" if None in totals else spread(totals),
        reported(calls, by_rep, CALL.reported_prompt_tokens),
        reported(calls, by_rep, CALL.reported_completion_tokens),
    ]


def per_repetition(calls: pd.DataFrame, field: str, by_rep: Any) -> list[int | None]:
    """Per repetition, the sum of `field`: unknown (None) as soon as one value is."""
    missing = calls[field].isna().groupby(calls[CALL.repetition], sort=False, dropna=False).any()
    sums = by_rep[field].sum()
    return [None if m else int(s) for m, s in zip(missing.tolist(), sums.tolist(), strict=True)]


def reported(calls: pd.DataFrame, by_rep: Any, field: str) -> str:
    """A provider-reported total, or `unknown` when any call reported nothing valid; with n of m."""
    count, invalid = int(calls[field].notna().sum()), int(calls[f"invalid {field}"].sum())
    bad = f"; {invalid} reported invalid usage, counted as unknown" if invalid else ""
    of = f"({count} of {len(calls)} calls reported{bad})"
    if count < len(calls):
        return f"unknown {of}"
    return f"{spread(per_repetition(calls, field, by_rep))} {of}"


def total(rows: list[Record], field: str) -> int | None:
    """A sum that is unknown (None) as soon as one value is."""
    values = [r[field] for r in rows]
    return None if any(v is None for v in values) else sum(values)


def reported_total(rows: list[Record], field: str) -> int | None:
    """A provider-reported sum that is unknown (None) as soon as one value is not a valid count."""
    counts = [recorded_count(r[field]) for r in rows]
    return None if any(v is None for v in counts) else sum(v for v in counts if v is not None)


def reported_count(calls: list[Record], field: str = CALL.reported_prompt_tokens) -> int:
    """Calls that reported a valid token count for `field` (`harness.usage`)."""
    return sum(1 for c in calls if recorded_count(c[field]) is not None)


def invalid_calls(calls: list[Record]) -> int:
    """Calls that reported invalid usage in any field."""
    return sum(
        1
        for c in calls
        if invalid_count([c], CALL.reported_prompt_tokens) or invalid_count([c], CALL.reported_completion_tokens)
    )


def invalid_count(calls: list[Record], field: str) -> int:
    """Calls whose `field` was reported but is not a token count: recorded as invalid, or (results
    written before usage was checked) a negative, huge or fractional number."""
    name = field.removeprefix("reported_")  # `invalid_reported_usage` is keyed by the endpoint's names

    def invalid(call: Record) -> bool:
        raw = call.get(CALL.invalid_reported_usage) or {}
        return name in raw or "usage" in raw or (call[field] is not None and recorded_count(call[field]) is None)

    return sum(1 for c in calls if invalid(c))
