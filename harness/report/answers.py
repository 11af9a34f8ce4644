"""Per chronology, at each probe: what each policy's model answered, and, where a loss is put
down to the summary or the fact store, the block that was in view.

Answers are collapsed to one line and cut at `ANSWER_CHARS` characters (`…` marks a cut); the
full text is the `response` of the `answer` call in `calls.jsonl`. With repetitions, a cell
shows repetition 1 and says how many others answered differently.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

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
    unique,
)
from harness.report.markdown import table
from harness.results.rows import CALL, PROBE

ANSWER_CHARS = 160
BLOCK_CHARS = 400
BLOCK_CAUSES = {
    "summary": ("summary",),
    "eviction": ("facts", "facts+current"),
    "replaced": ("facts", "facts+current"),
    "not-stored": ("facts", "facts+current"),
}


def collapsed(text: str, limit: int) -> str:
    """One line, cut at `limit` characters with an ellipsis."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


@dataclass(frozen=True)
class ProbeAnswers:
    """The answer calls of one column at one probe turn, one per repetition: the first's fields
    in repetition order (repetition 1), how many there are, how many others answered another
    text than the first, and how many distinct texts they gave (no text, a failed call, counts as one)."""

    first: Record  # response, error, finish_reason
    calls: int
    differ: int
    distinct: int


def probe_answers(column: Column, chronology: str) -> dict[int, ProbeAnswers]:
    """turn -> the answer calls at that probe turn of this column, counted."""
    return column.tables.once("answers at probe turns", count_answers, chronology).get(column.key(chronology), {})


def count_answers(tables: Tables) -> PerChronology | dict:
    """(chronology, policy, model) -> turn -> `ProbeAnswers`, counted over every chronology at
    once: the calls ordered by repetition within each column and turn (equal ones in file order)
    by NumPy, texts compared as codes; kept as one row per probe turn (its first call's fields and
    counts), made into `ProbeAnswers` one chronology at a time."""
    calls = tables.calls
    fields = (CALL.turn, CALL.repetition, CALL.response, CALL.error, CALL.finish_reason)
    chosen = calls[[*OWNER, *fields]].take(np.flatnonzero(at_probe_turns(calls, tables)))
    if chosen.empty:
        return {}
    keys = [chosen[c].to_numpy(dtype=np.float64, na_value=np.nan) for c in (CALL.turn, CALL.repetition)]  # NaN: missing
    ordered = in_order(chosen, keys)
    texts = pd.factorize(ordered[CALL.response].to_numpy(dtype=object), use_na_sentinel=False)[0]
    ordered = ordered.assign(text=texts)  # each distinct response a number, no response one too
    first = in_groups(ordered, [*OWNER, CALL.turn])["text"].transform("first")
    grouped = in_groups(ordered.assign(differ=texts != first.to_numpy()), [*OWNER, CALL.turn])
    counted = grouped.agg(calls=("text", "size"), differ=("differ", "sum"), distinct=("text", "nunique"))
    found = grouped.head(1)[[*OWNER, *SHOWN]]
    return PerChronology(found.assign(**{c: counted[c].to_numpy() for c in counted.columns}), probe_answers_of)


SHOWN = (CALL.turn, CALL.response, CALL.error, CALL.finish_reason)


def probe_answers_of(found: pd.DataFrame) -> dict[tuple, dict[int, ProbeAnswers]]:
    """The `ProbeAnswers` of these rows of `count_answers`, by owner and turn."""
    answers: dict[tuple, dict[int, ProbeAnswers]] = {}
    for owner, (turn, *first, calls, differ, distinct) in owner_rows(found, [*SHOWN, "calls", "differ", "distinct"]):
        counted = ProbeAnswers(dict(zip(SHOWN[1:], first, strict=True)), calls, differ, distinct)
        answers.setdefault(owner, {})[turn] = counted
    return answers


def at_probe_turns(calls: pd.DataFrame, tables: Tables) -> np.ndarray:
    """Which calls are answers at a turn where their column (chronology, policy, model) has a
    probe row: each row's owner and turn made one integer, names as codes of the probe rows'
    categories, and looked up among the probe rows' in NumPy."""
    probes = tables.probes
    if probes.empty:
        return np.zeros(len(calls), dtype=bool)
    categories = [probes[name].cat.categories for name in OWNER]
    last = int(probes[PROBE.turn].max()) if probes[PROBE.turn].notna().any() else 0

    def keys(frame: pd.DataFrame) -> np.ndarray:
        """Owner and turn as one integer: a digit per name (0: missing or not a probe row's), then the turn + 1 (0: none)."""
        key = np.zeros(len(frame), dtype=np.int64)
        for name, known in zip(OWNER, categories, strict=True):
            column = frame[name]
            codes = np.append(known.get_indexer(column.cat.categories), -1)[column.cat.codes.to_numpy()]
            key = key * (len(known) + 1) + codes + 1
        turns = frame[PROBE.turn].to_numpy(dtype=np.float64, na_value=-1.0)
        return key * (last + 2) + np.minimum(turns, last + 1).astype(np.int64) + 1

    turns = calls[CALL.turn].to_numpy(dtype=np.float64, na_value=-1.0)
    answers = flags(calls[CALL.kind] == "answer") & (turns <= last)
    return answers & np.isin(keys(calls), np.unique(keys(probes)))


def answer_cell(found: ProbeAnswers | None) -> str:
    if found is None:
        return "no answer"
    first = found.first
    text = (
        "call failed: " + collapsed(first[CALL.error] or "", ANSWER_CHARS)
        if first[CALL.response] is None
        else collapsed(first[CALL.response], ANSWER_CHARS)
    )
    if first.get(CALL.finish_reason) == "length":
        text += " [cut by the token cap]"
    others = found.calls - 1
    return text + (f" (repetition 1; {found.differ} of {others} others differ)" if others else "")


def answers(cmp: Comparison, chronology: str) -> list[str]:
    per_column = [probe_answers(c, chronology) for c in cmp.columns]
    probes = sorted({pair for c in cmp.columns for pair in c.probe_places(chronology)[1]})
    if not probes:
        return ["This chronology has no probe.", ""]
    body = [
        [f"{probe} (turn {turn})"] + [answer_cell(found.get(turn)) for found in per_column] for turn, probe in probes
    ]
    lines = [
        f"What the model answered at each probe, on one line, cut at {ANSWER_CHARS} characters (`…`); the "
        "full text is the `response` of the `answer` call in calls.jsonl.",
        "",
        table(["probe"] + cmp.headers, body),
        "",
    ]
    return lines + blocks(cmp, chronology)


def blocks(cmp: Comparison, chronology: str) -> list[str]:
    """The summary or facts block in view where a loss at a probe is put down to it."""
    body = []
    for column in cmp.columns:
        lost = column.records(
            "probes",
            chronology,
            "losses put down to a block, repetition 1",
            lambda f: f[PROBE.cause].isin(list(BLOCK_CAUSES)) & (f[PROBE.repetition] == 1),
            (PROBE.turn, PROBE.probe, PROBE.cause),
        )
        for turn, probe, cause in unique((r[PROBE.turn], r[PROBE.probe], r[PROBE.cause]) for r in lost):
            seen = column.run.view_at(chronology, column.policy, column.model, 1, turn)
            body.append(
                [
                    column.header,
                    f"{probe} (turn {turn})",
                    cause,
                    in_view(seen["view"] if seen else None, BLOCK_CAUSES[cause]),
                ]
            )
    if not body:
        return []
    return [
        "Where a loss is put down to the summary or the fact store, the block that was in the request view "
        f"at the probe (repetition 1, cut at {BLOCK_CHARS} characters):",
        "",
        table(["policy", "probe", "cause", "in view"], body),
        "",
    ]


def in_view(view: list[Record] | None, origins: tuple[str, ...]) -> str:
    """The first view message of those origins (a prepended facts block without the user's words)."""
    if view is None:
        return "no request"
    for message in view:
        if message["origin"] in origins:
            text = message["content"]
            return collapsed(text.split("\n\n", 1)[0] if message["origin"] == "facts+current" else text, BLOCK_CHARS)
    return "none: the store or summary was empty"
