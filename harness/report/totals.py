"""What the report's head counts over a whole run, added up a block of chronologies at a time
(harness.results.blocks): per column (policy, model) its calls by kind and its conversations by
how they ended (the side-by-side table, harness.report.policies), and per run what the caveats
say of its calls (harness.report.header, harness.report.tokenizer_fit). Each is a sum or a set,
so adding the blocks' counts gives the counts of the whole run; nothing here holds a row.

Also the per-call figures the token tables and these totals sum (`call_counts`), and the two
column helpers every count uses (`plain_column`, `flags`)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from harness.base.counts import recorded_count
from harness.report.costs import CostSums, Group, cost_sums
from harness.report.costs import added as costs_added
from harness.report.tokenizer_fit import prompt_sums
from harness.results.rows import CALL, TURN

REPORTED = (CALL.reported_prompt_tokens, CALL.reported_completion_tokens)
RETRIES = "retries"  # per call: its requests beyond the first, structured-output refusals aside
TOKEN_FIELDS = (CALL.estimate_tokens, CALL.tiktoken_tokens, *REPORTED)
SUMMED = (*TOKEN_FIELDS, RETRIES)


def plain_column(column: pd.Series) -> list[Any]:
    """A column's values as Python objects, missing values (NaN, NA) as None."""
    return column.to_numpy(dtype=object, na_value=None).tolist()


def flags(mask: Any) -> np.ndarray:
    """A mask as plain booleans, missing (NA) as False."""
    return pd.Series(mask).fillna(False).to_numpy(dtype=bool) if not isinstance(mask, np.ndarray) else mask


def unique(items: Any) -> list[Any]:
    """Items in first-seen order, each once."""
    return list(dict.fromkeys(items))


def call_counts(calls: pd.DataFrame) -> pd.DataFrame:
    """Per call, what the token table sums: 1 (a call), and per summed field its value (0 when
    unknown), whether it is known (a valid count, for provider-reported ones) and, for those,
    whether it is invalid. Judged per value in Python only where a provider
    reported something."""
    counts = {"calls": np.ones(len(calls), dtype=np.int32)}
    raw = calls[CALL.invalid_reported_usage] if CALL.invalid_reported_usage in calls else None
    flagged = np.array(raw.notna(), dtype=bool) if raw is not None else np.zeros(len(calls), dtype=bool)
    for field in SUMMED:
        value = (
            calls[field] if field in REPORTED else retries(calls) if field == RETRIES else pd.to_numeric(calls[field])
        )
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


def retries(calls: pd.DataFrame) -> pd.Series:
    """Per call, the requests beyond its first that were not structured-output refusals (0 for a
    call that sent none: cached, shared or scripted); unknown where `attempts` is not recorded."""
    if CALL.attempts not in calls:
        return pd.Series(np.nan, index=calls.index)
    attempts = pd.to_numeric(calls[CALL.attempts]).astype("Float64")
    refusals = pd.to_numeric(calls[CALL.format_refusals]).fillna(0) if CALL.format_refusals in calls else 0
    return (attempts - 1 - refusals).clip(lower=0)


@dataclass(frozen=True)
class KindFigures:
    """One call kind's calls sent by a column, summed over every chronology and repetition: per
    field the sum of the known values and how many calls have one (`known`)."""

    calls: int
    sums: dict[str, int]
    known: dict[str, int]
    invalid: dict[str, int]  # provider-reported values that were not a count (unknown)


@dataclass(frozen=True)
class Pacing:
    """What rate limits and 429s did to a run's calls, summed over calls.jsonl's `waits`,
    `waited_ms` and `http_429`, with the lowest `concurrency_low` (None: never lowered)."""

    waits: int = 0
    waited_ms: int = 0
    http_429: int = 0
    concurrency_low: int | None = None

    @classmethod
    def of(cls, calls: pd.DataFrame) -> Pacing:
        """Of a frame of calls; a run before these columns: nothing (they read as blank)."""

        def total(name: str) -> int:
            return int(pd.to_numeric(calls[name]).fillna(0).sum()) if name in calls else 0

        low = pd.to_numeric(calls[CALL.concurrency_low]).min() if CALL.concurrency_low in calls else None
        return cls(total(CALL.waits), total(CALL.waited_ms), total(CALL.http_429), None if pd.isna(low) else int(low))

    def plus(self, other: Pacing) -> Pacing:
        lows = [low for low in (self.concurrency_low, other.concurrency_low) if low is not None]
        return Pacing(
            self.waits + other.waits,
            self.waited_ms + other.waited_ms,
            self.http_429 + other.http_429,
            min(lows) if lows else None,
        )


@dataclass(frozen=True)
class CallCounts:
    """What the caveats say about a run's model calls, counted over its calls.jsonl columns."""

    calls: int
    answers: int
    by_kind: dict[str, tuple[int, int]]  # kind -> (calls that reported prompt tokens, calls)
    reported: int  # calls that reported prompt tokens
    invalid: int  # calls that reported usage that is no token count
    cached: int
    cut: int  # replies cut by the token cap
    cut_answers: int
    retries: int  # requests beyond each call's first (structured-output refusals aside), where recorded
    retried: int  # calls that took a retry
    pacing: Pacing = Pacing()  # what rate limits and 429s did

    @classmethod
    def of(cls, calls: pd.DataFrame, usage: pd.DataFrame) -> CallCounts:
        """`usage`: the token table's own judgement of each reported count (`Tables.usage`)."""
        if calls.empty:
            return cls(0, 0, {}, 0, 0, 0, 0, 0, 0, 0)
        kind = calls[CALL.kind]
        reported = usage[f"known {CALL.reported_prompt_tokens}"].astype(bool)
        invalid = usage[f"invalid {CALL.reported_prompt_tokens}"] | usage[f"invalid {CALL.reported_completion_tokens}"]
        names = kind.astype(str) if kind.dtype == object else kind  # categorical: grouped by code, no string per call
        counted = reported.groupby(names, observed=True, sort=False).agg(["sum", "size"])
        by_kind = {str(k): (int(n), int(size)) for k, n, size in counted.itertuples()}
        answers = kind == "answer"
        cut = (calls[CALL.finish_reason] == "length").fillna(False).to_numpy(dtype=bool)
        return cls(
            len(calls),
            int(answers.sum()),
            by_kind,
            int(reported.sum()),
            int(invalid.astype(bool).sum()),
            int((calls[CALL.cached] == True).fillna(False).sum()),  # noqa: E712  (NA is not cached)
            int(cut.sum()),
            int((cut & answers.to_numpy()).sum()),
            int(usage[f"sum {RETRIES}"].sum()),
            int((usage[f"sum {RETRIES}"] > 0).sum()),
            Pacing.of(calls),
        )

    def plus(self, other: CallCounts) -> CallCounts:
        """The counts of both sets of calls."""
        by_kind = dict(self.by_kind)
        for kind, (n, size) in other.by_kind.items():
            before = by_kind.get(kind, (0, 0))
            by_kind[kind] = (before[0] + n, before[1] + size)
        numbers = [
            getattr(self, f.name) + getattr(other, f.name)
            for f in dataclasses.fields(self)
            if f.name not in ("by_kind", "pacing")
        ]
        return CallCounts(numbers[0], numbers[1], by_kind, *numbers[2:], self.pacing.plus(other.pacing))


STATUSES = ("completed", "stopped", "error")  # how a conversation ended, in this order
Owner = tuple[str, str]  # (policy, model): a column of one run


def added(one: KindFigures, other: KindFigures) -> KindFigures:
    """The figures of both sets of calls."""
    return KindFigures(
        one.calls + other.calls,
        {f: one.sums[f] + other.sums.get(f, 0) for f in one.sums},
        {f: one.known[f] + other.known.get(f, 0) for f in one.known},
        {f: one.invalid[f] + other.invalid.get(f, 0) for f in one.invalid},
    )


@dataclass
class RunTotals:
    """A run's head figures, the blocks added so far (`add`)."""

    kinds: dict[Owner, dict[str, KindFigures]] = dataclasses.field(default_factory=dict)  # owner -> kind -> calls sent
    cached: dict[Owner, int] = dataclasses.field(default_factory=dict)  # owner -> calls served from the cache
    statuses: dict[Owner, dict[str, int]] = dataclasses.field(
        default_factory=dict
    )  # owner -> `STATUSES` -> conversations
    roles: set[tuple[Any, Any]] = dataclasses.field(default_factory=set)  # the distinct (call_model, kind) of the calls
    calls: CallCounts | None = None  # the caveats' counts of every call; None: none added yet
    prompts: dict[str, tuple[int, int, int]] = dataclasses.field(default_factory=dict)  # see tokenizer_fit.prompt_sums
    # owner -> (kind, call model) -> what its calls cost is made of (harness.report.costs)
    costs: dict[Owner, dict[Group, CostSums]] = dataclasses.field(default_factory=dict)

    def add(self, turns: pd.DataFrame, calls: pd.DataFrame, usage: pd.DataFrame) -> None:
        """Add one block's turns and calls (`usage`: the calls' `call_counts`)."""
        for owner, found in owner_statuses(turns).items():
            before = self.statuses.get(owner, dict.fromkeys(STATUSES, 0))
            self.statuses[owner] = {s: before[s] + found[s] for s in STATUSES}
        kinds, cached = owner_kinds(calls, usage)
        for owner, found in kinds.items():
            mine = self.kinds.setdefault(owner, {})
            for kind, figures in found.items():
                mine[kind] = added(mine[kind], figures) if kind in mine else figures
        for owner, n in cached.items():
            self.cached[owner] = self.cached.get(owner, 0) + n
        if not calls.empty:
            pairs = calls[[CALL.call_model, CALL.kind]].drop_duplicates()
            self.roles |= set(zip(plain_column(pairs[CALL.call_model]), plain_column(pairs[CALL.kind]), strict=True))
        counted = CallCounts.of(calls, usage)
        self.calls = counted if self.calls is None else self.calls.plus(counted)
        for model, sums in prompt_sums(calls, usage).items():
            before = self.prompts.get(model, (0, 0, 0))
            self.prompts[model] = tuple(a + b for a, b in zip(before, sums, strict=True))  # type: ignore[assignment]
        for owner, groups in cost_sums(calls).items():
            self.costs[owner] = costs_added(self.costs.get(owner, {}), groups)


OWNER_KEYS = (TURN.chronology, TURN.policy, TURN.model)  # rows without them belong to no column's cell


def owned(frame: pd.DataFrame) -> np.ndarray:
    """Which rows have a chronology, a policy and a model (a column's rows, as the report groups them)."""
    known = np.ones(len(frame), dtype=bool)
    for name in OWNER_KEYS:
        known &= frame[name].notna().to_numpy(dtype=bool)
    return known


def owner_statuses(turns: pd.DataFrame) -> dict[Owner, dict[str, int]]:
    """(policy, model) -> its conversations (chronology, repetition) by how they ended (`STATUSES`):
    `error` or `stopped` where a turn says so (an error first), else completed; every column at once."""
    turns = turns[owned(turns)]
    if turns.empty:
        return {}
    status = turns[TURN.status].astype(object)
    ended = pd.DataFrame(
        {"ended in error": flags(status == "error"), "ended stopped": flags(status == "stopped")}, index=turns.index
    )
    keys = [turns[k] for k in (TURN.policy, TURN.model, TURN.chronology, TURN.repetition)]
    per = ended.groupby(keys, observed=True, dropna=False).any()  # one row per conversation
    errors = per["ended in error"].to_numpy(dtype=bool)
    stopped = per["ended stopped"].to_numpy(dtype=bool) & ~errors
    ends = pd.DataFrame({"n0": ~errors & ~stopped, "n1": stopped, "n2": errors}, index=per.index)  # as STATUSES
    counted = ends.groupby(level=[0, 1], observed=True).sum()
    return {
        (str(policy), str(model)): {s: int(n) for s, n in zip(STATUSES, row, strict=True)}
        for (policy, model), *row in counted.itertuples()
    }


def owner_kinds(
    calls: pd.DataFrame, usage: pd.DataFrame
) -> tuple[dict[Owner, dict[str, KindFigures]], dict[Owner, int]]:
    """(policy, model) -> kind -> the `KindFigures` of its calls sent, and (policy, model) -> its
    calls served from the cache: every column's at once, by one group-by."""
    known = owned(calls)
    calls, usage = calls[known], usage[known]
    if calls.empty:
        return {}, {}
    cached = calls[CALL.cached].fillna(False).astype(bool).to_numpy(dtype=bool)
    owners = [calls[TURN.policy], calls[TURN.model]]
    from_cache = pd.Series(cached, index=calls.index).groupby(owners, observed=True).sum()
    found: dict[Owner, dict[str, KindFigures]] = {}
    sent = usage[~cached]
    if len(sent):
        kinds = calls[CALL.kind].astype(object).fillna("unnamed").to_numpy(dtype=object)[~cached]
        columns = ["calls", *(f"sum {f}" for f in SUMMED), *(f"known {f}" for f in SUMMED)]
        columns += [f"invalid {f}" for f in REPORTED]
        keys = [
            calls[TURN.policy][~cached],
            calls[TURN.model][~cached],
            pd.Series([str(k) for k in kinds], index=sent.index),
        ]
        summed = sent[columns].groupby(keys, observed=True, sort=False).sum()
        values = {c: summed[c].to_numpy(dtype=np.int64).tolist() for c in columns}
        for n, (policy, model, kind) in enumerate(summed.index.tolist()):
            found.setdefault((str(policy), str(model)), {})[kind] = KindFigures(
                values["calls"][n],
                {f: values[f"sum {f}"][n] for f in SUMMED},
                {f: values[f"known {f}"][n] for f in SUMMED},
                {f: values[f"invalid {f}"][n] for f in REPORTED},
            )
    return found, {(str(p), str(m)): int(n) for (p, m), n in from_cache.items()}
