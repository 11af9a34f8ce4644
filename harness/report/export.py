"""`harness export RESULTS --format longmemeval --out FILE`: a run's answers in the file a
benchmark's own scorer reads, so its published numbers can be reproduced outside the harness.

`longmemeval`: the hypothesis file of LongMemEval's `src/evaluation/evaluate_qa.py` (JSON Lines,
one `{"question_id", "hypothesis"}` per item): each LongMemEval item of the run (its manifest
`source.dataset` starting `longmemeval`), its `source.item_id` and the answer at its probe, for one
policy under one model in one repetition. A run of several policies (or models) needs `--policy`
(`--model`): a hypothesis file holds one system's answers; one file per policy is written by
exporting once per policy. An item whose probe the policy never answered (it stopped, or its
call failed) has no hypothesis: it is left out of the file and counted in what the command says.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pandas as pd

from harness.base.errors import InputError
from harness.base.identity import IDENTITY
from harness.report.items import item_source
from harness.results.calls_in_bulk import read_calls
from harness.results.rows import CALL, PROBE
from harness.results.tables import Results, read_columns

FORMATS = ("longmemeval",)


@dataclass(frozen=True)
class Exported:
    """The file's text, and the items it leaves out for want of an answer."""

    text: str
    written: int
    unanswered: list[str]  # item ids


def chosen(results: Results, given: str | None, known: list[str], option: str) -> str:
    """The one policy (or model) to export: the one given, else the run's only one."""
    if given is not None:
        if given not in known:
            raise InputError(f"{option} {given}: not in {results.directory}; it has {', '.join(known)}")
        return given
    if len(known) > 1:
        raise InputError(
            f"{results.directory} has {len(known)}: {', '.join(known)}; a hypothesis file holds one: give {option}"
        )
    return known[0]


def longmemeval(results: Results, policy: str | None, model: str | None, repetition: int) -> Exported:
    """LongMemEval's hypothesis file for one policy, model and repetition of the run."""
    manifest = results.manifest
    policy = chosen(results, policy, manifest.policy_labels, "--policy")
    model = chosen(results, model, list(manifest.models), "--model")
    items = {
        entry["name"]: source.item_id
        for entry in manifest.chronologies
        if (source := item_source(entry)) is not None and source.dataset.startswith("longmemeval")
    }
    if not items:
        raise InputError(
            f"{results.directory}: no LongMemEval item ran (no chronology's source.dataset is longmemeval…)"
        )
    mine = _answers(results, policy, model, repetition)
    lines, unanswered = [], []
    for name, item_id in items.items():
        if name in mine:
            lines.append(json.dumps({"question_id": item_id, "hypothesis": mine[name]}, ensure_ascii=False))
        else:
            unanswered.append(item_id)
    return Exported("".join(line + "\n" for line in lines), len(lines), unanswered)


def _answers(results: Results, policy: str, model: str, repetition: int) -> dict[str, str]:
    """chronology -> the answer at its probe (its last probe's, when it has several)."""
    keys = (*IDENTITY, PROBE.turn, PROBE.status)
    probes = read_columns(results.directory / "probes.csv", keys)
    mine = probes[(probes[PROBE.policy] == policy) & (probes[PROBE.model] == model)]
    mine = mine[(mine[PROBE.repetition] == repetition) & (mine[PROBE.status] == "measured")]
    at = mine[[PROBE.chronology, PROBE.turn]].drop_duplicates().astype({PROBE.chronology: str, PROBE.turn: int})
    # only the keys it needs, a response only of an answer call: calls.jsonl may be gigabytes
    fields = (*IDENTITY, CALL.turn, CALL.kind, CALL.response, CALL.error)
    calls = read_calls(results.directory / "calls.jsonl", fields, CALL.messages, {CALL.response: (CALL.kind, "answer")})
    answers = calls[(calls[CALL.kind] == "answer") & (calls[CALL.policy] == policy) & (calls[CALL.model] == model)]
    answers = answers[(answers[CALL.repetition] == repetition) & answers[CALL.error].isna()]
    answers = answers[[CALL.chronology, CALL.turn, CALL.response]].astype({CALL.chronology: str, CALL.turn: int})
    joined = at.merge(answers, on=[PROBE.chronology, PROBE.turn], how="inner")
    found: dict[str, str] = {}
    for chronology, response in zip(joined[PROBE.chronology], joined[CALL.response]):
        if not pd.isna(response):
            found[str(chronology)] = str(response)
    return found
