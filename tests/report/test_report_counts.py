"""The report's counts made over every chronology at once (NumPy and pandas) give what the
per-row Python they replaced gave: losses, the row at a glance, answers at probes. Checked on a
run with repetitions whose answers differ, against that Python written out here."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from harness.chronology.loading import load_chronology
from harness.models import CallRequest
from harness.models.reference import ReferenceModel
from harness.report.answers import ANSWER_CHARS, answer_cell, at_probe_turns, collapsed, probe_answers
from harness.report.comparison import Column, Comparison, compare, ranks, records
from harness.report.glance import CAUSE_WORDS, LOST_CHECKS, glance_cell, glance_tags, share, short
from harness.report.loss_tags import LIMIT, TAGS
from harness.report.probes import CHECK_ORDER, loss_rows, show_command
from harness.report.repetitions import differing
from harness.results.rows import CALL, PROBE
from harness.results.spans import SpanIndex
from tests.paths import ROOT
from tests.report.test_report import run_into
from tests.scripted import ScriptedModel

NAMES = ("correct-then-forget", "summary-overflow", "memory-drift", "budget-cut-correction")
POLICIES = ("full-history", "last-turns:turns=1", "summary", "bounded-facts")


def wavering() -> ScriptedModel:
    """The reference model's answers, with a mark on some calls (by their count, scattered):
    repetitions differ at some probes and not at others."""
    calls = itertools.count(1)

    def answer(request: CallRequest) -> str:
        number, found = next(calls), ReferenceModel().complete(request)
        return found.text + (" (again)" if number * 7 % 11 < 4 and request.kind == "answer" else "")

    return ScriptedModel("wavering", answer)


@pytest.fixture(scope="module")
def cmp(tmp_path_factory: pytest.TempPathFactory) -> Comparison:
    chronologies = [load_chronology(ROOT / "chronologies" / f"{name}.yaml") for name in NAMES]
    folder = tmp_path_factory.mktemp("counts")
    return compare([run_into(folder, chronologies, POLICIES, model=wavering(), repetitions=3, live=True)])


def column_records(column: Column, chronology: str, kind: str) -> list[dict]:
    frame = column.tables.frame(kind)
    rows = column.tables.groups(kind).get(chronology, {}).get((column.policy, column.model), [])
    return records(frame.take(np.sort(rows)))


def split(rows: list[dict], keys: list[str]) -> dict[tuple, list[dict]]:
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        groups.setdefault(tuple(row[k] for k in keys), []).append(row)
    return groups


def unique(items: object) -> list:
    return list(dict.fromkeys(items))  # type: ignore[call-overload]


def python_loss_rows(column: Column, chronology: str) -> list[list[object]]:
    """The loss rows as the report made them before, record by record."""
    lost = [r for r in column_records(column, chronology, "probes") if r[PROBE.lost_at] is not None]
    lost.sort(key=lambda r: (r[PROBE.turn], CHECK_ORDER[r[PROBE.check]], r[PROBE.subject], r[PROBE.repetition]))
    body = []
    for (check, subject, cause, where), group in split(
        lost, [PROBE.check, PROBE.subject, PROBE.cause, PROBE.lost_at]
    ).items():
        probes = unique(f"{r[PROBE.probe]} (turn {r[PROBE.turn]})" for r in group)
        reps = f"{len({r[PROBE.repetition] for r in group})} of {column.repetitions(chronology)}"
        body.append([column.header, check, subject, cause, where, ", ".join(probes), reps])
        body[-1].append(show_command(column, chronology, group[0]))
    return body


def python_glance_cell(column: Column, chronology: str) -> str:
    rows = [
        r
        for r in column_records(column, chronology, "probes")
        if r[PROBE.check] in LOST_CHECKS and r[PROBE.cause] is not None
    ]
    if not rows:
        return "nothing lost"
    reps = column.repetitions(chronology)
    rows.sort(key=lambda r: (r[PROBE.turn], r[PROBE.check] != "prohibition", r[PROBE.subject]))
    by_losses: dict[str, list[str]] = {}
    for (probe, turn), group in split(rows, [PROBE.probe, PROBE.turn]).items():
        parts = []
        for (cause,), same in split(group, [PROBE.cause]).items():
            repetitions: dict[str, set[int]] = {}
            for r in same:
                repetitions.setdefault(r[PROBE.subject], set()).add(r[PROBE.repetition])
            names = unique(short(s) + share(len(found), reps) for s, found in repetitions.items())
            parts.append(f"{', '.join(names)} — {CAUSE_WORDS.get(cause, cause)}")
        by_losses.setdefault("; ".join(parts), []).append(f"{probe} ({turn})")
    return "; ".join(f"{', '.join(probes)}: {losses}" for losses, probes in by_losses.items())


def python_answers(column: Column, chronology: str) -> dict[int, list[dict]]:
    """turn -> its answer calls at a probe turn, in repetition order."""
    turns = {r[PROBE.turn] for r in column_records(column, chronology, "probes")}
    calls = [
        r for r in column_records(column, chronology, "calls") if r[CALL.kind] == "answer" and r[CALL.turn] in turns
    ]
    calls.sort(key=lambda r: r[CALL.repetition])
    return {turn: rows for (turn,), rows in split(calls, [CALL.turn]).items()}


def python_answer_cell(calls: list[dict]) -> str:
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


def test_the_run_has_what_the_counts_are_checked_on(cmp: Comparison) -> None:
    """Losses in several repetitions, and answers that differ between repetitions at some probes."""
    assert any(loss_rows(c, name) for c in cmp.columns for name in cmp.chronologies)
    found = [a for c in cmp.columns for name in cmp.chronologies for a in probe_answers(c, name).values()]
    assert any(a.differ for a in found) and any(a.calls > 1 and not a.differ for a in found)


def test_loss_rows_are_the_rows_the_records_give(cmp: Comparison) -> None:
    for name in cmp.chronologies:
        for column in cmp.columns:
            assert loss_rows(column, name) == python_loss_rows(column, name)


def test_the_glance_cells_are_the_cells_the_records_give(cmp: Comparison) -> None:
    cells = [(glance_cell(c, name), python_glance_cell(c, name)) for name in cmp.chronologies for c in cmp.columns]
    assert all(new == old for new, old in cells)
    assert any("—" in new for new, _ in cells)


def test_answers_at_probes_are_the_answers_the_records_give(cmp: Comparison) -> None:
    for name in cmp.chronologies:
        for column in cmp.columns:
            counted, calls = probe_answers(column, name), python_answers(column, name)
            assert list(sorted(counted)) == list(sorted(calls))
            assert {t: answer_cell(a) for t, a in counted.items()} == {
                t: python_answer_cell(rows) for t, rows in calls.items()
            }
            repeated = [rows for rows in calls.values() if len(rows) > 1]
            expected = sum(len({r[CALL.response] for r in rows}) > 1 for rows in repeated), len(repeated)
            assert differing(column, name) == expected


def test_answers_at_probe_turns_are_found_by_owner_and_turn() -> None:
    probes = pd.DataFrame(
        {
            PROBE.chronology: pd.Categorical(["a", "a", "b"]),
            PROBE.policy: pd.Categorical(["p", "p", "q"]),
            PROBE.model: pd.Categorical(["m", "m", "m"]),
            PROBE.turn: pd.array([2, 5, 2], dtype="Int64"),
        }
    )
    calls = pd.DataFrame(
        {
            CALL.chronology: pd.Categorical(["a", "a", "a", "b", "b", "c", "a"]),
            CALL.policy: pd.Categorical(["p", "p", "p", "p", "q", "p", "p"]),
            CALL.model: pd.Categorical(["m", "m", "m", "m", "m", "m", "m"]),
            CALL.turn: pd.array([2, 3, 5, 2, 2, 2, 9], dtype="Int64"),
            CALL.kind: pd.Categorical(["answer", "answer", "summarizer", "answer", "answer", "answer", "answer"]),
        }
    )

    class Tables:  # what at_probe_turns reads of the run's tables
        pass

    tables = Tables()
    tables.probes = probes  # type: ignore[attr-defined]
    assert at_probe_turns(calls, tables).tolist() == [True, False, False, False, True, False, False]  # type: ignore[arg-type]


def test_ranks_order_rows_as_python_sorts_their_values() -> None:
    column = pd.Series(pd.Categorical(["b", "B", "a", None, "é", "b", "a10", "a9"]))
    found = ranks(column)
    named = [v for v in column if isinstance(v, str)]
    assert sorted(named, key=lambda v: found[list(column).index(v)]) == sorted(named)
    assert found[3] == -1
    assert ranks(column, lambda v: v != "b").tolist()[:3] == [0, 1, 1]  # equal keys tie


def test_bodies_are_each_run_without_its_identity(tmp_path: Path) -> None:
    lines = [
        '{"chronology": "a", "policy": "p", "model": "m", "repetition": 1, "n": 1}',
        '{"chronology": "a", "policy": "p", "model": "m", "repetition": 1, "n": 2}',
        '{"chronology": "a", "policy": "p", "model": "m", "repetition": 2, "n": 1}',
        '{"chronology": "a", "policy": "p", "model": "m", "repetition": 2, "n": 2}',
        '{"chronology": "a", "policy": "p", "model": "m", "repetition": 3, "n": 3}',
    ]
    (tmp_path / "facts.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    index = SpanIndex(tmp_path / "facts.jsonl")
    first, second, third = (index.bodies(("a", "p", "m", n)) for n in (1, 2, 3))
    assert first == second == [b'"n": 1}\n"n": 2}\n'] and third != first
    with (tmp_path / "facts.jsonl").open("rb") as handle:
        assert index.bodies(("a", "p", "m", 2), handle) == second


def test_the_glance_tags_are_the_causes_and_probe_turns_the_records_give(cmp: Comparison) -> None:
    """Each tag is a `cause` of the probe rows that lost a prohibition or current value, at the
    turns of their probes, with the most repetitions any subject was lost in so."""
    seen = 0
    for name, column in itertools.product(cmp.chronologies, cmp.columns):
        rows = [
            r
            for r in column_records(column, name, "probes")
            if r[PROBE.check] in LOST_CHECKS and r[PROBE.cause] is not None
        ]
        cell, reps = glance_tags(column, name), column.repetitions(name)
        for (cause,), same in split(sorted(rows, key=lambda r: r[PROBE.turn]), [PROBE.cause]).items():
            turns = ",".join(str(t) for t in unique(r[PROBE.turn] for r in same))
            lost = {}
            for r in same:
                lost.setdefault((r[PROBE.probe], r[PROBE.subject]), set()).add(r[PROBE.repetition])
            most = max(len(found) for found in lost.values())
            tag = TAGS[cause] if cause == "other-session" else f"{TAGS[cause]}@{turns}"
            assert tag + ("" if reps == 1 else f" {most}/{reps}") in cell, (name, column.header, cell)
            seen += 1
        assert len(cell) <= LIMIT
    assert seen
