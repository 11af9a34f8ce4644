"""The token sums a cost is made of, per column (policy, model), call kind and the model that
answered the calls: added up block by block with the run's other totals (harness.report.totals).

A call counts here when a model made it and it did not fail: a scripted output has no model, and
a failed request is not billed. A call served from the response cache (or shared with one in
flight) counts too, with its stored figures: the cost is what the policy's calls cost when each
is sent, whichever run paid for it first.

Each field is summed over the calls that have a value, with how many do (`known`), so the
pricing (harness.report.pricing) uses a figure only where every call has it, and otherwise says
which figure it fell back to:

- `prompt`, `completion`: provider-reported usage (a value that is no count is unknown);
- `cache_read`, `cache_write`: the provider's prompt-cache counts (part of `prompt`);
- `tiktoken`, `estimate`: the request's local count and its characters/4 estimate;
- `prefix_tiktoken`, `prefix_estimate`: the cacheable prefix (harness.run.prefix), counted
  locally, and estimated as characters/4 per call;
- `reply_estimate`: the reply's characters/4 (as the model returned it), for want of a
  reported completion count.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from harness.base.counts import recorded_count
from harness.base.messages import estimate_tokens
from harness.results.rows import CALL, TURN

# The calls.jsonl keys the sums and the prefix's breaks (harness.report.prefix_breaks) read,
# besides those the report reads anyway.
COST_KEYS = (
    CALL.session,
    CALL.chars,
    CALL.response_chars,
    CALL.prefix_chars,
    CALL.prefix_tiktoken_tokens,
    CALL.reported_cached_tokens,
    CALL.reported_cache_write_tokens,
)
# where each field is read from; the `*_estimate` fields are characters, rounded up to tokens here
SOURCES = {
    "prompt": CALL.reported_prompt_tokens,
    "completion": CALL.reported_completion_tokens,
    "cache_read": CALL.reported_cached_tokens,
    "cache_write": CALL.reported_cache_write_tokens,
    "tiktoken": CALL.tiktoken_tokens,
    "estimate": CALL.estimate_tokens,
    "prefix_tiktoken": CALL.prefix_tiktoken_tokens,
    "prefix_estimate": CALL.prefix_chars,
    "reply_estimate": CALL.response_chars,
}
FIELDS = tuple(SOURCES)
Group = tuple[str, str]  # (call kind, the model that answered)


@dataclass(frozen=True)
class CostSums:
    """One group's calls: per field the sum of the known values and how many calls have one."""

    calls: int
    sums: dict[str, int]
    known: dict[str, int]

    def plus(self, other: CostSums) -> CostSums:
        return CostSums(
            self.calls + other.calls,
            {f: self.sums[f] + other.sums[f] for f in FIELDS},
            {f: self.known[f] + other.known[f] for f in FIELDS},
        )

    def whole(self, field: str) -> int | None:
        """The field's sum when every call has it, else None (unknown)."""
        return self.sums[field] if self.known[field] == self.calls else None


NO_CALLS = CostSums(0, dict.fromkeys(FIELDS, 0), dict.fromkeys(FIELDS, 0))


def cost_sums(calls: pd.DataFrame) -> dict[tuple[str, str], dict[Group, CostSums]]:
    """(policy, model) -> (kind, call model) -> the `CostSums` of its priced calls in `calls`."""
    if calls.empty or CALL.call_model not in calls:
        return {}
    # a column's calls (chronology, policy and model known), made by a model, that did not fail
    known = calls[[TURN.chronology, TURN.policy, TURN.model, CALL.call_model]].notna().all(axis=1)
    priced = known.to_numpy(dtype=bool) & calls[CALL.error].isna().to_numpy(dtype=bool)
    calls = calls[priced]
    if calls.empty:
        return {}
    columns: dict[str, np.ndarray] = {"calls": np.ones(len(calls), dtype=np.int64)}
    for name, key in SOURCES.items():
        values = [_value(v, name) for v in calls[key].tolist()] if key in calls else [None] * len(calls)
        columns[f"sum {name}"] = np.array([v or 0 for v in values], dtype=np.int64)
        columns[f"known {name}"] = np.array([v is not None for v in values], dtype=np.int64)
    keys = [calls[TURN.policy].astype(object), calls[TURN.model].astype(object)]
    keys += [calls[CALL.kind].astype(object).fillna("unnamed"), calls[CALL.call_model].astype(object)]
    summed = pd.DataFrame(columns, index=calls.index).groupby(keys, sort=False).sum()
    found: dict[tuple[str, str], dict[Group, CostSums]] = {}
    for (policy, model, kind, call_model), row in zip(summed.index, summed.to_dict("records"), strict=True):
        found.setdefault((str(policy), str(model)), {})[(str(kind), str(call_model))] = CostSums(
            int(row["calls"]),
            {f: int(row[f"sum {f}"]) for f in FIELDS},
            {f: int(row[f"known {f}"]) for f in FIELDS},
        )
    return found


def _value(value: object, name: str) -> int | None:
    """A call's value of one field: a valid count, characters/4 for the estimates, else None."""
    count = recorded_count(value)
    if count is None or not name.endswith("_estimate"):
        return count
    return estimate_tokens(count)


def added(one: dict[Group, CostSums], other: dict[Group, CostSums]) -> dict[Group, CostSums]:
    """Both sets of groups' sums."""
    return {g: one.get(g, NO_CALLS).plus(other.get(g, NO_CALLS)) for g in {**one, **other}}
