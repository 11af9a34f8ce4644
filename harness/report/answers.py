"""Per chronology, at each probe: what each policy's model answered, and, where a loss is put
down to the summary or the fact store, the block that was in view.

Answers are collapsed to one line and cut at `ANSWER_CHARS` characters (`…` marks a cut); the
full text is the `response` of the `answer` call in `calls.jsonl`. With repetitions, a cell
shows repetition 1 and says how many others answered differently.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from harness.markdown import table
from harness.report.comparison import OWNER, Column, Comparison, Record, Tables, flags, split
from harness.rows import CALL, PROBE

ANSWER_CHARS = 160
ANSWER_FIELDS = (CALL.turn, CALL.repetition, CALL.response, CALL.error, CALL.finish_reason)
BLOCK_CHARS = 400
BLOCK_CAUSES = {
    "summary": ("summary",),
    "eviction": ("facts", "facts+current"),
    "not-stored": ("facts", "facts+current"),
}


def collapsed(text: str, limit: int) -> str:
    """One line, cut at `limit` characters with an ellipsis."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def answer_calls(column: Column, chronology: str, fields: tuple[str, ...]) -> list[Record]:
    """`fields` of this column's answer calls at its probe turns, in file order."""
    calls = column.records(
        "calls", chronology, "answers at probe turns", lambda f: at_probe_turns(f, column.tables), ANSWER_FIELDS
    )
    return [{k: call[k] for k in (CALL.turn, *fields)} for call in calls]


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


def probe_answers(column: Column, chronology: str) -> dict[int, list[Record]]:
    """turn -> the answer calls at that probe turn, repetition order."""
    fields = (CALL.repetition, CALL.response, CALL.error, CALL.finish_reason)
    calls = sorted(answer_calls(column, chronology, fields), key=lambda r: r[CALL.repetition])
    return {turn: rows for (turn,), rows in split(calls, [CALL.turn]).items()}


def answer_cell(calls: list[Record]) -> str:
    if not calls:
        return "no answer"
    first = calls[0]
    text = (
        "call failed: " + collapsed(first[CALL.error] or "", ANSWER_CHARS)
        if first[CALL.response] is None
        else collapsed(first[CALL.response], ANSWER_CHARS)
    )
    if first.get(CALL.finish_reason) == "length":
        text += " [cut by the token cap]"
    differ = sum(1 for c in calls[1:] if c[CALL.response] != first[CALL.response])
    return text + (f" (repetition 1; {differ} of {len(calls) - 1} others differ)" if len(calls) > 1 else "")


def answers(cmp: Comparison, chronology: str) -> list[str]:
    per_column = [probe_answers(c, chronology) for c in cmp.columns]
    probes = sorted({pair for c in cmp.columns for pair in c.probe_pairs(chronology)})
    if not probes:
        return ["This chronology has no probe.", ""]
    body = [
        [f"{probe} (turn {turn})"] + [answer_cell(found.get(turn, [])) for found in per_column]
        for turn, probe in probes
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
        for (turn, probe, cause), _rows in split(lost, [PROBE.turn, PROBE.probe, PROBE.cause]).items():
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
