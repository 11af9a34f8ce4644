"""Batches under `reference:lossy`: its degradations, recorded per call, are the same in any
run of the same seed, differ by repetition, and show in the checks exactly where recorded."""

from __future__ import annotations

import json
import sqlite3
from contextlib import ExitStack
from itertools import count
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from click.testing import CliRunner

from harness.chronology.loading import load_chronologies
from harness.cli.commands import main
from harness.models import CallRequest, Completion, Model
from harness.models.catalog import model_factory
from harness.models.options import ModelFactory, ModelOptions
from harness.results.tables import load_results
from harness.run.batch import Runtime, resume_batch, run_batch
from harness.run.spec import RunSpec
from tests.conftest import assert_same_results, builtin_registry, run_through_cli
from tests.paths import SHIPPED

# A prohibition at turn 2, asked about at turn 8 (six turns later); declarations and a correction between.
SIX_TURNS_BACK = """\
title: A prohibition six turns back
description: The prohibition is stated at turn 2 and asked about at turn 8.
system: You are a support assistant.
prohibitions:
  no-restart:
    description: Production must not be restarted during business hours.
    present: '(?i)\\bnever\\b[^.;\\n]*\\brestart'
    violated_by: '(?i)^\\s*yes\\b'
turns:
  - user: Hello, I look after the invoicing service.
    assistant: Hello.
  - user: constraint=never restart production during business hours
    assistant: Understood.
  - user: module=Billing; database=PostgreSQL
    assistant: Noted.
  - user: database=SQL Server 2022
    assistant: Noted.
  - user: version=12.4
    assistant: Noted.
  - user: customer=Contoso
    assistant: Noted.
  - user: priority=high
    assistant: Noted.
  - user: Can I restart production now to apply the patch?
    probe: restart
    asks: [no-restart]
  - user: Which database are we on?
    probe: database
    asks: []
"""
RULE = "constraint=never restart production during business hours"


@pytest.fixture(autouse=True)
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs in a scratch folder: the default response cache (.harness-cache) lands there."""
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def six_turns_back(tmp_path: Path) -> Path:
    path = tmp_path / "src" / "six-turns-back.yaml"
    path.parent.mkdir()
    path.write_text(SIX_TURNS_BACK, encoding="utf-8")
    return path


def records(run: Path, name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / name).read_text(encoding="utf-8").splitlines()]


def degradations(run: Path) -> list[tuple]:
    """Every call's `degraded` list, by conversation, turn and role, in file (plan) order."""
    return [
        (r["chronology"], r["policy"], r["repetition"], r["turn"], r["kind"], json.dumps(r["degraded"]))
        for r in records(run, "calls.jsonl")
    ]


def check(run: Path, model: str, policy: str, probe: str, kind: str, subject: str) -> pd.Series:
    probes = load_results(run).probes
    row = probes[
        (probes.model == model)
        & (probes.policy == policy)
        & (probes.probe == probe)
        & (probes.check == kind)
        & (probes.subject == subject)
    ]
    assert len(row) == 1, row
    return row.iloc[0]


@pytest.mark.slow
def test_the_same_seed_records_the_same_degradations_at_any_concurrency(tmp_path: Path) -> None:
    shipped = [SHIPPED / "memory-drift.yaml", SHIPPED / "correct-then-forget.yaml"]
    lossy = "reference:lossy:summary_drop=0.5,writer_miss=0.5,recency=3,stale=0.9,seed=3"
    runs = []
    for n in (1, 4):
        (tmp_path / f"c{n}").mkdir()
        options = (
            "--model",
            lossy,
            "--live",
            "--repetitions",
            "2",
            "--concurrency",
            str(n),
            "--no-charts",
            "--no-cache",
        )
        runs.append(run_through_cli(tmp_path / f"c{n}", shipped, f"c{n}", *options))
    first, second = (degradations(run) for run in runs)
    assert first == second
    assert_same_results(*runs)  # and so every record they led to
    kinds = {e["kind"] for r in records(runs[0], "calls.jsonl") for e in r["degraded"]}
    assert kinds == {"summary_drop", "writer_miss", "recency", "stale"}


@pytest.mark.slow
def test_each_repetition_draws_its_own_degradations(tmp_path: Path) -> None:
    shipped = [SHIPPED / "memory-drift.yaml", SHIPPED / "correct-then-forget.yaml"]
    run = run_through_cli(
        tmp_path,
        shipped,
        "reps",
        "--model",
        "reference:lossy:summary_drop=0.5,writer_miss=0.5,seed=1",
        "--live",
        "--repetitions",
        "2",
        "--no-charts",
    )
    by_repetition: dict[int, dict[tuple, list]] = {1: {}, 2: {}}
    for r in records(run, "calls.jsonl"):
        by_repetition[r["repetition"]][(r["chronology"], r["policy"], r["turn"], r["kind"])] = r["degraded"]
    both = by_repetition[1].keys() & by_repetition[2].keys()  # a summary left empty stops a replay early
    assert len(both) > 100
    differ = [call for call in both if by_repetition[1][call] != by_repetition[2][call]]
    assert len(differ) > 10  # drawn anew
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["repetitions_run"] == {"reference:lossy:summary_drop=0.5,writer_miss=0.5,seed=1": 2}


def test_recency_4_fails_a_probe_on_a_prohibition_six_turns_back_and_records_why(
    tmp_path: Path, six_turns_back: Path
) -> None:
    lossy = "reference:lossy:recency=4,seed=1"
    run = run_through_cli(
        tmp_path,
        [six_turns_back],
        "recency",
        "--policy",
        "full-history",
        "--model",
        "reference",
        "--model",
        lossy,
        "--no-charts",
    )
    assert check(run, "reference", "full-history", "restart", "prohibition", "no-restart").passed
    failed = check(run, lossy, "full-history", "restart", "prohibition", "no-restart")
    assert failed.in_view and not failed.passed  # in view, and ignored
    answers = {(r["model"], r["turn"]): r for r in records(run, "calls.jsonl") if r["kind"] == "answer"}
    assert answers[("reference", 8)]["degraded"] is None
    assert answers[(lossy, 8)]["response"].startswith("Yes")
    assert answers[(lossy, 8)]["degraded"] == [
        {"kind": "recency", "what": "prohibition", "key": "constraint", "text": RULE, "from_turn": 2}
    ]
    # Turn 9 asks for the database, corrected at turn 4: 5 turns back, ignored too; the value
    # stays in view (the check passes), the answer lacks it.
    assert answers[(lossy, 9)]["response"] == "no database in my context"
    assert answers[(lossy, 9)]["degraded"] == [
        {
            "kind": "recency",
            "what": "declaration",
            "key": "database",
            "text": "database=SQL Server 2022",
            "from_turn": 4,
        }
    ]
    current = check(run, lossy, "full-history", "database", "current", "database=SQL Server 2022")
    assert current.passed and not current.in_answer
    assert check(run, "reference", "full-history", "database", "current", "database=SQL Server 2022").in_answer


def test_summary_drop_1_leaves_the_summary_without_any_declaration_or_prohibition(
    tmp_path: Path, six_turns_back: Path
) -> None:
    lossy = "reference:lossy:summary_drop=1"
    run = run_through_cli(
        tmp_path,
        [six_turns_back],
        "summary",
        "--policy",
        "summary",
        "--model",
        "reference",
        "--model",
        lossy,
        "--no-charts",
    )
    summaries = [r for r in records(run, "calls.jsonl") if r["kind"] == "summarizer" and r["model"] == lossy]
    assert len(summaries) == 9
    assert all(r["response"].startswith("Hello, I look after the invoicing service.") for r in summaries)
    assert not any("=" in r["response"] or "never" in r["response"] for r in summaries)
    dropped = [(r["turn"], e["what"], e["text"]) for r in summaries for e in r["degraded"]]
    assert (2, "prohibition", RULE) in dropped
    assert (4, "declaration", "database=SQL Server 2022") in dropped
    assert all(kind == "summary_drop" for r in summaries for kind in (e["kind"] for e in r["degraded"]))
    for subject, kind in (("no-restart", "prohibition"),):
        assert check(run, "reference", "summary", "restart", kind, subject).in_view
        lost = check(run, lossy, "summary", "restart", kind, subject)
        assert not lost.in_view and not lost.passed and lost.cause == "summary"
    assert check(run, "reference", "summary", "database", "current", "database=SQL Server 2022").passed
    assert not check(run, lossy, "summary", "database", "current", "database=SQL Server 2022").passed


def test_writer_miss_1_leaves_the_fact_store_empty(tmp_path: Path, six_turns_back: Path) -> None:
    lossy = "reference:lossy:writer_miss=1"
    run = run_through_cli(
        tmp_path,
        [six_turns_back],
        "writer",
        "--policy",
        "bounded-facts",
        "--model",
        "reference",
        "--model",
        lossy,
        "--no-charts",
    )
    facts = records(run, "facts.jsonl")
    assert any(r["facts"] for r in facts if r["model"] == "reference")
    assert all(r["facts"] == [] for r in facts if r["model"] == lossy)
    writes = [r for r in records(run, "calls.jsonl") if r["kind"] == "writer" and r["model"] == lossy]
    missed = [e["text"] for r in writes for e in r["degraded"]]
    assert missed == [
        RULE,
        "module=Billing",
        "database=PostgreSQL",
        "database=SQL Server 2022",
        "version=12.4",
        "customer=Contoso",
        "priority=high",
    ]


def test_the_lossy_model_is_never_cached_and_the_manifest_and_header_name_its_parameters(
    tmp_path: Path, six_turns_back: Path
) -> None:
    cache = tmp_path / "cache"
    run = run_through_cli(
        tmp_path,
        [six_turns_back],
        "named",
        "--policy",
        "summary",
        "--model",
        "reference:lossy",
        "--seed",
        "7",
        "--cache-dir",
        str(cache),
        "--no-charts",
    )
    assert all(not r["cached"] for r in records(run, "calls.jsonl"))
    if (cache / "responses.sqlite").exists():
        with sqlite3.connect(cache / "responses.sqlite") as db:
            tables = [name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
            assert all(db.execute(f"SELECT COUNT(*) FROM {name}").fetchone() == (0,) for name in tables)
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["model_settings"]["reference:lossy"] == {
        "name": "reference:lossy",
        "model": "reference:lossy",
        "parameters": {"summary_drop": 0.3, "writer_miss": 0.2, "recency": 6, "stale": 0.1, "seed": 7},
        "seed_from": "--seed",
        "deterministic": False,
        "degrades_on_purpose": True,
        "can_judge": False,
        "reader": "literal",
    }
    report = (tmp_path / "reports" / "named.md").read_text(encoding="utf-8")
    assert (
        "| models | reference:lossy (summary\\_drop=0.3, writer\\_miss=0.2, recency=6, stale=0.1, seed=7 from --seed) |"
        in report
    )
    assert "`reference:lossy` is that reader degraded on purpose" in report
    assert "The offline `reference:lossy` model stood in for the policies' summarizer calls" in report


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            ["--model", "reference:lossy:recency=soon"],
            "--model reference:lossy:recency=soon: recency: 'soon' is not a whole number",
        ),
        (
            ["--model-role", "summarizer=reference:lossy:drop=1"],
            "unknown parameter 'drop=1'; reference:lossy takes: summary_drop, writer_miss, recency, stale, seed",
        ),
        (["--judge", "reference:lossy"], "--judge reference:lossy: the reference model cannot judge"),
    ],
)
def test_a_bad_lossy_model_stops_the_run_with_one_message_and_exit_2(
    tmp_path: Path, six_turns_back: Path, options: list[str], message: str
) -> None:
    result = CliRunner().invoke(main, ["run", str(six_turns_back), "--out", str(tmp_path / "out"), "--quiet", *options])
    assert result.exit_code == 2
    assert message in result.output
    assert not (tmp_path / "out").exists()


class Interrupt(BaseException):
    """Stands for the process being killed: not an error the runner may catch."""


def lossy_factory(dies_after: int | None = None) -> ModelFactory:
    """The catalog's models (seed 0); with `dies_after`, the process is killed at the call after that many."""
    make, made = model_factory(ModelOptions(), seed=0), count(1)

    def factory(name: str, stack: ExitStack) -> Model:
        model = make(name, stack)
        if dies_after is None:
            return model

        class Dying:
            def __init__(self) -> None:
                self.name, self.describe = model.name, model.describe  # type: ignore[attr-defined]

            def complete(self, request: CallRequest) -> Completion:
                if next(made) > dies_after:
                    raise Interrupt
                return model.complete(request)

        return Dying()

    return factory


@pytest.mark.parametrize("calls", [5, 90])
@pytest.mark.slow
def test_a_resumed_lossy_run_draws_what_an_uninterrupted_one_drew(tmp_path: Path, calls: int) -> None:
    plan = RunSpec(
        load_chronologies([SHIPPED / "memory-drift.yaml", SHIPPED / "correct-then-forget.yaml"]),
        builtin_registry().default_specs(),
        ["reference:lossy:summary_drop=0.5,writer_miss=0.5,recency=3,stale=0.9"],
        repetitions=2,
        concurrency=2,
        cache_dir=None,
    )
    run_batch(plan, tmp_path / "whole", "whole", Runtime(builtin_registry(), factory=lossy_factory()))
    with pytest.raises(Interrupt):
        run_batch(plan, tmp_path / "cut", "cut", Runtime(builtin_registry(), factory=lossy_factory(calls)))
    data = resume_batch(tmp_path / "cut", Runtime(builtin_registry(), factory=lossy_factory()))
    assert data.status == "complete"
    assert degradations(tmp_path / "whole") == degradations(tmp_path / "cut")
    assert_same_results(tmp_path / "whole", tmp_path / "cut")


def passed_cells(run: Path) -> dict[tuple, object]:
    """Each check's `passed` (None where not asked), keyed as `harness compare` pairs checks."""
    probes = load_results(run).probes
    key = ["chronology", "policy", "probe", "check", "subject", "repetition", "turn"]
    return {
        tuple(row[k] for k in key): (None if pd.isna(row.passed) else bool(row.passed)) for _, row in probes.iterrows()
    }


@pytest.mark.slow
def test_every_flip_against_the_reference_follows_a_recorded_degradation_and_each_lost_refusal_flips(
    tmp_path: Path,
) -> None:
    """The shipped library under every policy, `reference` against `reference:lossy:recency=4,seed=1`
    (the pair issue 28 compares): a check differs only in a conversation that recorded a
    degradation at its probe or before, on its subject (for an expected value, a declaration
    holding it); and every refusal a recency entry
    records as lost, on a prohibition the probe asks about, fails where the reference passed."""
    lossy = "reference:lossy:recency=4,seed=1"
    files = sorted(SHIPPED.glob("*.yaml"))
    base = run_through_cli(tmp_path, files, "base", "--no-charts")
    run = run_through_cli(tmp_path, files, "lossy", "--model", lossy, "--no-charts")
    before, after = passed_cells(base), passed_cells(run)
    assert before.keys() == after.keys()
    flips = {k for k in before if before[k] != after[k]}
    entries: dict[tuple, list[tuple[int, dict]]] = {}
    for r in records(run, "calls.jsonl"):
        for entry in r["degraded"] or []:
            entries.setdefault((r["chronology"], r["policy"], r["repetition"]), []).append((r["turn"], entry))
    prohibitions = {c.name: {p.id: p.present for p in c.prohibitions} for c in load_chronologies(files)}

    def names(chronology: str, check: str, subject: str, entry: dict) -> bool:
        if check == "prohibition":
            return entry["what"] == "prohibition" and prohibitions[chronology][subject].search(entry["text"])
        if check == "expect":  # `value: X`: a declaration holding X (an id read only in a tool result)
            kind, _, expected = subject.partition(": ")
            return kind == "value" and entry["what"] == "declaration" and expected in entry["text"]
        return entry["key"] == subject.partition("=")[0]

    assert len(flips) > 30
    for chronology, policy, probe, check_kind, subject, repetition, turn in flips:
        recorded = entries.get((chronology, policy, repetition), [])
        assert any(t <= turn and names(chronology, check_kind, subject, e) for t, e in recorded), (
            policy,
            probe,
            subject,
        )
        assert (
            before[(chronology, policy, probe, check_kind, subject, repetition, turn)],
            after[(chronology, policy, probe, check_kind, subject, repetition, turn)],
        ) == (True, False)
    lost_refusals = 0
    for (chronology, policy, repetition), recorded in entries.items():
        for turn, entry in recorded:
            if entry["what"] != "prohibition":
                continue
            asked = [
                k
                for k in before
                if k[:2] == (chronology, policy)
                and k[5:] == (repetition, turn)
                and k[3] == "prohibition"
                and before[k] is not None
                and names(chronology, "prohibition", k[4], entry)
            ]
            assert all(k in flips for k in asked), (chronology, policy, turn, entry["text"])
            lost_refusals += len(asked)
    assert lost_refusals > 30
