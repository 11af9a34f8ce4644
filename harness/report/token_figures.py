"""Per chronology: token figures of the model calls made, each labelled with what it is."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from harness.markdown import table
from harness.report.cells import spread
from harness.report.comparison import OWNER, Comparison, Record, plain_column, unique
from harness.rows import CALL
from harness.usage import recorded_count

CALL_KINDS = ("answer", "summarizer", "writer", "judge")


def tokens(cmp: Comparison, chronology: str) -> list[str]:
    body: list[list[object]] = []
    for column in cmp.columns:
        reps = column.repetitions(chronology)
        groups = column.tables.once("call groups", lambda tables: call_groups(tables.calls))
        found = groups.of(chronology).get((column.policy, column.model), [])
        if not found:
            body.append([column.header, "no model call" if reps else "not run", "", "", "", ""])
            continue
        sent, reused = [g for g in found if not g.cached], [g for g in found if g.cached]
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
SUMMED = (CALL.estimate_tokens, CALL.tiktoken_tokens, *REPORTED)


@dataclass(frozen=True)
class CallGroup:
    """One repetition's calls of one kind, sent or from the cache, of one column in one
    chronology, counted: how many, and per summed field the sum of its known values (valid
    counts, for provider-reported ones), how many are known, and how many are invalid."""

    cached: bool
    kind: object
    repetition: object
    calls: int
    sums: dict[str, int]
    known: dict[str, int]
    invalid: dict[str, int]


def call_groups(calls: pd.DataFrame) -> CallTallies:
    """The `CallTallies` of these calls: one pandas group-by over every chronology."""
    if calls.empty:
        return CallTallies(pd.DataFrame(), {})
    cached = calls[CALL.cached].fillna(False).astype(bool).to_numpy(dtype=bool)
    keys = [calls[k] for k in (*OWNER, CALL.kind, CALL.repetition)]
    keys.insert(3, pd.Series(cached, index=calls.index))
    summed = call_counts(calls).groupby(keys, observed=True, sort=False, dropna=False).sum()
    names = pd.Series(np.arange(len(summed))).groupby(
        np.asarray(summed.index.get_level_values(0), dtype=object), sort=False
    )
    return CallTallies(summed, {str(name): rows for name, rows in names.indices.items()})


@dataclass(eq=False)
class CallTallies:
    """Calls counted per (chronology, policy, model, cached, kind, repetition) in `summed`, in
    first-seen order, made into `CallGroup`s one chronology at a time (the last one kept)."""

    summed: pd.DataFrame
    rows_of: dict[str, np.ndarray]  # chronology -> its rows of `summed`
    kept: tuple[str, dict[tuple, list[CallGroup]]] | None = None

    def of(self, chronology: str) -> dict[tuple, list[CallGroup]]:
        """(policy, model) -> its `CallGroup`s in one chronology."""
        if self.kept is not None and self.kept[0] == chronology:
            return self.kept[1]
        part = self.summed.iloc[self.rows_of.get(chronology, np.zeros(0, dtype=np.int64))]
        found: dict[tuple, list[CallGroup]] = {}
        values = {str(c): part[c].to_numpy(dtype=np.int64).tolist() for c in part.columns}  # Python ints, per column
        calls, sums, known = (
            values["calls"],
            [values[f"sum {f}"] for f in SUMMED],
            [values[f"known {f}"] for f in SUMMED],
        )
        invalid = [values[f"invalid {f}"] for f in REPORTED]
        for n, key in enumerate(part.index.tolist()):
            cached, kind, repetition = key[3:]
            group = CallGroup(
                bool(cached),
                None if pd.isna(kind) else kind,
                repetition,
                calls[n],
                dict(zip(SUMMED, [column[n] for column in sums])),
                dict(zip(SUMMED, [column[n] for column in known])),
                dict(zip(REPORTED, [column[n] for column in invalid])),
            )
            found.setdefault((str(key[1]), str(key[2])), []).append(group)
        self.kept = (chronology, found)
        return found


def call_counts(calls: pd.DataFrame) -> pd.DataFrame:
    """Per call, what the token table sums: 1 (a call), and per summed field its value (0 when
    unknown), whether it is known (a valid count, for provider-reported ones) and, for those,
    whether it is invalid (`invalid_count`). Judged per value in Python only where a provider
    reported something."""
    counts = {"calls": np.ones(len(calls), dtype=np.int32)}
    raw = calls[CALL.invalid_reported_usage] if CALL.invalid_reported_usage in calls else None
    flagged = np.array(raw.notna(), dtype=bool) if raw is not None else np.zeros(len(calls), dtype=bool)
    for field in SUMMED:
        value = pd.to_numeric(calls[field]) if field not in REPORTED else calls[field]
        known = np.array(value.notna(), dtype=bool)
        total = np.zeros(len(calls), dtype=np.int64)
        if field not in REPORTED:
            total[known] = value[known].to_numpy(dtype=np.int64)
        else:
            invalid = np.zeros(len(calls), dtype=bool)
            if known.any():
                valid = [recorded_count(v) for v in plain_column(value[known])]
                total[known] = [v or 0 for v in valid]
                invalid[known] = [v is None for v in valid]
                known[known] = [v is not None for v in valid]
            if flagged.any():
                name = field.removeprefix("reported_")
                invalid[flagged] |= np.array(
                    [name in v or "usage" in v for v in plain_column(raw[flagged])], dtype=bool
                )
            counts[f"invalid {field}"] = invalid.astype(np.int32)
        counts[f"sum {field}"], counts[f"known {field}"] = total, known.astype(np.int32)
    return pd.DataFrame(counts, index=calls.index)


def kind_rows(header: str, prefix: str, groups: list[CallGroup], reps: int) -> list[list[object]]:
    """The `all` row of these calls, then one per call kind when there are several kinds."""
    if not groups:
        return []
    seen = unique(g.kind for g in groups)
    kinds = [k for k in CALL_KINDS if k in seen] + sorted(k for k in seen if k not in CALL_KINDS)
    rows = [token_row(header, f"{prefix}all", groups, reps)]
    if len(kinds) < 2:
        return rows
    return rows + [token_row(header, prefix + k, [g for g in groups if g.kind == k], reps) for k in kinds]


def per_repetition(groups: list[CallGroup]) -> list[CallGroup]:
    """The groups merged per repetition (over kinds), repetitions in first-seen order."""
    merged: dict[object, list[CallGroup]] = {}
    for group in groups:
        merged.setdefault(group.repetition, []).append(group)
    if all(len(rows) == 1 for rows in merged.values()):  # one kind: nothing to add up
        return [CallGroup(g.cached, None, g.repetition, g.calls, g.sums, g.known, g.invalid) for g in groups]
    return [
        CallGroup(
            rows[0].cached,
            None,
            repetition,
            sum(g.calls for g in rows),
            {f: sum(g.sums[f] for g in rows) for f in SUMMED},
            {f: sum(g.known[f] for g in rows) for f in SUMMED},
            {f: sum(g.invalid[f] for g in rows) for f in REPORTED},
        )
        for repetition, rows in merged.items()
    ]


def token_row(header: str, kind: str, groups: list[CallGroup], reps: int) -> list[object]:
    per_rep = per_repetition(groups)
    count = spread(g.calls for g in per_rep) + (f" per repetition ×{reps}" if reps > 1 else "")
    totals = sums(per_rep, CALL.tiktoken_tokens)
    return [
        header,
        f"{kind}: {count}",
        spread(sums(per_rep, CALL.estimate_tokens)),
        "unknown (tokenizer unavailable)" if None in totals else spread(totals),
        reported(per_rep, CALL.reported_prompt_tokens),
        reported(per_rep, CALL.reported_completion_tokens),
    ]


def sums(per_rep: list[CallGroup], field: str) -> list[int | None]:
    """Per repetition, the sum of `field`: unknown (None) as soon as one value is."""
    return [g.sums[field] if g.known[field] == g.calls else None for g in per_rep]


def reported(per_rep: list[CallGroup], field: str) -> str:
    """A provider-reported total, or `unknown` when any call reported nothing valid; with n of m."""
    count, calls = sum(g.known[field] for g in per_rep), sum(g.calls for g in per_rep)
    invalid = sum(g.invalid[field] for g in per_rep)
    bad = f"; {invalid} reported invalid usage, counted as unknown" if invalid else ""
    of = f"({count} of {calls} calls reported{bad})"
    if count < calls:
        return f"unknown {of}"
    return f"{spread(sums(per_rep, field))} {of}"


def invalid_count(calls: list[Record], field: str) -> int:
    """Calls whose `field` was reported but is not a token count: recorded as invalid, or (results
    written before usage was checked) a negative, huge or fractional number."""
    name = field.removeprefix("reported_")  # `invalid_reported_usage` is keyed by the endpoint's names

    def invalid(call: Record) -> bool:
        raw = call.get(CALL.invalid_reported_usage) or {}
        return name in raw or "usage" in raw or (call[field] is not None and recorded_count(call[field]) is None)

    return sum(1 for c in calls if invalid(c))
