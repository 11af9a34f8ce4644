"""Token figures of two paired runs, by policy and call kind, and their ratio.

Only the conversations both runs hold are counted (the same chronology file, a paired policy,
the same repetition), so the ratio compares like with like; a deterministic run's one repetition,
paired with each repetition of the other run (harness.report.pairing), counts once per repetition
it is paired with. Calls served from the response cache
(or shared with an identical call in flight) sent no request in their run: they are left out and
counted apart. Each figure keeps its kind: the characters/4 estimate, the local tiktoken count
and the provider-reported counts are never added together; a sum over calls where any value is
unknown is unknown (`harness.report.token_figures.call_counts` judges each value), and so is a
ratio with an unknown side. A ratio is B / A; with nothing in A there is none.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from harness.base.identity import IDENTITY
from harness.report.pairing import RUN_REPETITION, Pairing
from harness.report.token_figures import CALL_KINDS, call_counts
from harness.report.totals import TOKEN_FIELDS as FIGURES
from harness.results.calls_in_bulk import read_calls
from harness.results.rows import CALL, PROBE

FIGURE_NAMES = {
    CALL.estimate_tokens: "estimate tokens (chars/4)",
    CALL.tiktoken_tokens: "tiktoken tokens (local count)",
    CALL.reported_prompt_tokens: "provider-reported prompt tokens",
    CALL.reported_completion_tokens: "provider-reported completion tokens",
}
READ = (
    *IDENTITY,
    CALL.kind,
    CALL.cached,
    CALL.estimate_tokens,
    CALL.tiktoken_tokens,
    CALL.reported_prompt_tokens,
    CALL.reported_completion_tokens,
    CALL.invalid_reported_usage,
)


@dataclass(frozen=True)
class Sums:
    """One run's calls of one policy and kind: how many were sent, how many came from the cache,
    and per figure its sum (None: unknown, some call did not have it) with how many calls had it."""

    calls: int
    cached: int
    sums: dict[str, int | None]
    known: dict[str, int]


@dataclass(frozen=True)
class TokenRow:
    """One (policy pair, call kind): the sums of both runs (None: no such call in that run)."""

    policy: str
    kind: str
    a: Sums | None
    b: Sums | None

    def ratio(self, figure: str) -> float | None:
        """B / A of one figure; None when either is unknown, absent, or A is 0."""
        a = self.a.sums[figure] if self.a else None
        b = self.b.sums[figure] if self.b else None
        return None if a is None or b is None or a == 0 else b / a


def token_rows(pairing: Pairing) -> list[TokenRow]:
    """Per policy pair (A's order) and call kind (answer, summarizer, writer, judge, then others)."""
    sides = [side_sums(pairing, side, shared_conversations(pairing, side)) for side in ("a", "b")]
    rows = []
    for a_label in pairing.policy_pairs:
        label = pairing.pair_label(a_label)
        seen = {kind for sums in sides for (policy, kind) in sums if policy == label}
        kinds = [k for k in CALL_KINDS if k in seen] + sorted(seen - set(CALL_KINDS))
        rows += [TokenRow(label, kind, sides[0].get((label, kind)), sides[1].get((label, kind))) for kind in kinds]
    return rows


def shared_conversations(pairing: Pairing, side: str) -> dict[tuple, int]:
    """(chronology, pair policy, pair model, the run's own repetition) of each conversation both runs
    hold -> the number of repetitions it is paired in (more than one: a deterministic run's one
    repetition, standing for each repetition of the other run)."""
    pairs = pairing.pairs
    keys = [pairs[PROBE.chronology], pairs["pair_policy"], pairs["pair_model"], pairs[f"{RUN_REPETITION}_{side}"]]
    counted = pairs[PROBE.repetition].groupby(keys, observed=True).nunique()
    return {(str(c), str(p), str(m), int(r)): int(n) for (c, p, m, r), n in counted.items()}


def side_sums(pairing: Pairing, side: str, shared: dict[tuple, int]) -> dict[tuple[str, str], Sums]:
    """(pair policy, kind) -> `Sums` of one run's calls in the shared conversations, each call once
    per repetition its conversation is paired in."""
    results = pairing.a if side == "a" else pairing.b
    calls = read_calls(results.directory / "calls.jsonl", READ, drop=CALL.messages)
    if calls.empty:
        return {}
    labels = (
        {a: pairing.pair_label(a) for a in pairing.policy_pairs}
        if side == "a"
        else {b: pairing.pair_label(a) for a, b in pairing.policy_pairs.items()}
    )
    policy = [labels.get(str(p)) for p in calls[CALL.policy]]
    model = [str(m) if pairing.model_keyed else "" for m in calls[CALL.model]]
    weights = [
        shared.get((str(c), str(p), m, int(r)), 0)
        for c, p, m, r in zip(calls[CALL.chronology], policy, model, calls[CALL.repetition], strict=True)
    ]
    chosen = np.repeat(np.arange(len(calls)), weights)  # each call's position, once per paired repetition
    counts = call_counts(calls).iloc[chosen].reset_index(drop=True)
    counts[CALL.policy] = np.array(policy, dtype=object)[chosen]
    counts[CALL.kind] = calls[CALL.kind].astype(object).to_numpy()[chosen]
    counts[CALL.cached] = calls[CALL.cached].fillna(False).astype(bool).to_numpy(dtype=bool)[chosen]
    found = {}
    for (label, kind), group in counts.groupby([CALL.policy, CALL.kind], sort=False):
        sent = group[~group[CALL.cached]]
        total = sent.sum(numeric_only=True)
        n = len(sent)
        known = {f: int(total[f"known {f}"]) for f in FIGURES}
        sums = {f: int(total[f"sum {f}"]) if known[f] == n else None for f in FIGURES}
        found[(str(label), str(kind))] = Sums(n, int(group[CALL.cached].sum()), sums, known)
    return found


def sums_frame(rows: list[TokenRow]) -> pd.DataFrame:
    """The rows as a table of plain values (the CSV and JSON forms)."""
    records = []
    for row in rows:
        record: dict[str, object] = {"policy": row.policy, "kind": row.kind}
        for side, sums in (("a", row.a), ("b", row.b)):
            record[f"calls_{side}"] = sums.calls if sums else 0
            record[f"cached_calls_{side}"] = sums.cached if sums else 0
            for figure in FIGURES:
                record[f"{figure}_{side}"] = sums.sums[figure] if sums else None
        for figure in FIGURES:
            record[f"{figure}_ratio"] = row.ratio(figure)
        records.append(record)
    return pd.DataFrame(records)
