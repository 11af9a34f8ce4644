"""`harness rejudge`: a finished run's rubric expectations asked again of its own judge through a
second prompt, and the agreement between the two prompts (plain k/n and Cohen's kappa)."""

from __future__ import annotations

import gc
import json
import os
import weakref
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.chronology import Chronology, load_chronology
from harness.cli.commands import main
from harness.models import CallRequest, Completion
from harness.results.reader import read_manifest
from harness.results.tables import load_results
from harness.run.judge import MAX_RUBRIC_REQUEST_BYTES, rubric_messages, rubric_request_bytes
from harness.run.rejudge import MAX_PROMPT_BYTES, Rejudged, agreement, recorded_chronologies, rejudge
from tests.loopback import Recorded, Reply, ScriptedServer, chat_completion

CHRONOLOGY = """\
title: Two rubrics
turns:
  - user: database=PostgreSQL
    assistant: Noted.
  - user: Which database are we on?
    probe: db
    expect:
      - rubric: Names PostgreSQL.
      - rubric: Names Oracle.
"""
SECOND = "Q: {question}\nA: {answer}\nCriterion: {rubric}\nSECOND PROMPT, answer YES or NO."


def judged(request: Recorded) -> Reply:
    """Answers echo; the shipped prompt says YES to every rubric, the second prompt YES only to PostgreSQL."""
    messages = (request.body or {}).get("messages", [{}])
    last = messages[-1].get("content", "")
    if "SECOND PROMPT" in last:
        text = '{"verdict": "YES"}' if "Names PostgreSQL." in last else '{"verdict": "NO"}'
    elif "Does the rubric hold" in last:
        text = '{"verdict": "YES"}'
    else:
        text = "We are on PostgreSQL."
    return Reply(body=chat_completion(text) | {"model": (request.body or {}).get("model", "m")})


@pytest.fixture
def finished(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, ScriptedServer]]:
    (tmp_path / "chronologies").mkdir()
    (tmp_path / "chronologies" / "two.yaml").write_text(CHRONOLOGY)
    (tmp_path / "second.txt").write_text(SECOND)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with ScriptedServer() as server:
        server.default = judged
        args = ["run", "--run-id", "r", "--quiet", "--no-cache", "--no-charts", "--policy", "full-history"]
        args += ["--model", "openai:m", "--judge", "openai:j", "--base-url", server.base_url]
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0, result.output
        yield tmp_path, server


def test_a_second_prompt_rejudges_each_judged_rubric_and_says_how_they_agree(finished) -> None:
    root, server = finished
    before = (root / "results" / "r" / "probes.csv").read_bytes()
    result = CliRunner().invoke(main, ["rejudge", "results/r", "--judge-prompt", "second.txt"])
    assert result.exit_code == 0, result.output
    assert "2 rubric verdicts asked again of openai:j with second.txt" in result.output
    assert "the prompts agree on 1/2 verdicts; Cohen's kappa 0.00" in result.output
    lines = (root / "reports" / "r-rejudged-second.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    assert [(r["subject"], r["first"], r["second"]) for r in records] == [
        ("rubric: Names PostgreSQL.", "YES", "YES"),
        ("rubric: Names Oracle.", "YES", "NO"),
    ]
    request = records[0]["messages"][-1]["content"]  # the second prompt, recorded as sent
    assert request.startswith("Q: Which database are we on?\nA: We are on PostgreSQL.\nCriterion: Names PostgreSQL.")
    assert (root / "results" / "r" / "probes.csv").read_bytes() == before  # the run is not changed


def test_a_prompt_that_never_shows_the_answer_is_refused(finished) -> None:
    root, _ = finished
    (root / "bad.txt").write_text("Is {rubric} true? YES or NO.")
    result = CliRunner().invoke(main, ["rejudge", "results/r", "--judge-prompt", "bad.txt"])
    assert result.exit_code == 2
    assert "the prompt never shows the judge {answer}" in result.output


@pytest.mark.slow
def test_a_prompt_past_the_limit_is_refused_before_any_call(finished) -> None:
    root, server = finished
    asked = len(server.requests)
    (root / "long.txt").write_text("{answer} {rubric}" + "x" * MAX_PROMPT_BYTES)
    result = CliRunner().invoke(main, ["rejudge", "results/r", "--judge-prompt", "long.txt"])
    assert result.exit_code == 2 and f"more than {MAX_PROMPT_BYTES:,}; a judge prompt is sent" in result.output
    assert len(server.requests) == asked


@pytest.mark.slow
def test_a_prompt_whose_requests_would_pass_the_limit_is_refused_before_any_call(finished) -> None:
    root, server = finished
    rubric = "Names PostgreSQL, " + "and says so plainly, " * 10  # 228 bytes, filled 7,000 times: 1.6 MB
    (root / "chronologies" / "two.yaml").write_text(CHRONOLOGY.replace("Names Oracle.", rubric.strip()))
    args = ["run", "--run-id", "long", "--quiet", "--no-cache", "--policy", "full-history"]
    args += ["--model", "openai:m", "--judge", "openai:j", "--base-url", server.base_url]
    assert CliRunner().invoke(main, args).exit_code == 0
    template = "{question} {answer} " + "{rubric}" * 7_000  # 56 kB: within the template's own limit
    assert len(template.encode()) <= MAX_PROMPT_BYTES
    (root / "many.txt").write_text(template)
    asked = len(server.requests)
    result = CliRunner().invoke(main, ["rejudge", "results/long", "--judge-prompt", "many.txt"])
    assert result.exit_code == 2, result.output
    assert f"more than {MAX_RUBRIC_REQUEST_BYTES:,} (the prompt names {{question}} 1×, {{answer}} 1×, " in result.output
    assert "{rubric} 7000×" in result.output and "Nothing was asked" in result.output
    assert len(server.requests) == asked
    assert not (root / "reports" / "long-rejudged-many.jsonl").exists()


def test_the_request_size_is_counted_without_filling_the_prompt() -> None:
    prompt = "Q {question} A {answer} R {rubric}{rubric} é"
    sent = "".join(m.content for m in rubric_messages("why?", "ß", "r1", prompt))
    assert rubric_request_bytes("why?", "ß", "r1", prompt) == len(sent.encode("utf-8"))


def test_a_run_whose_records_were_edited_is_refused_as_report_refuses_it(finished) -> None:
    root, server = finished
    probes = root / "results" / "r" / "probes.csv"
    probes.write_bytes(probes.read_bytes().replace(b"Names Oracle.", b"Names Oracla."))
    asked = len(server.requests)
    result = CliRunner().invoke(main, ["rejudge", "results/r", "--judge-prompt", "second.txt"])
    assert result.exit_code == 2
    assert "probes.csv" in result.output and "the results were changed after the harness wrote them" in result.output
    assert len(server.requests) == asked and not (root / "reports" / "r-rejudged-second.jsonl").exists()


def test_judge_calls_that_fail_end_with_exit_3_saying_how_many(finished) -> None:
    root, server = finished
    server.default = lambda request: Reply(status=401, body={"error": {"message": "bad key"}})
    result = CliRunner().invoke(main, ["rejudge", "results/r", "--judge-prompt", "second.txt"])
    assert result.exit_code == 3, result.output
    assert "2 of 2 judge calls failed after their retries (each record's note says why)" in result.output
    records = (root / "reports" / "r-rejudged-second.jsonl").read_text().splitlines()
    assert [json.loads(line)["second"] for line in records] == [None, None]


def test_a_run_without_a_judge_has_nothing_to_rejudge(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "chronologies").mkdir()
    (tmp_path / "chronologies" / "two.yaml").write_text(CHRONOLOGY)
    (tmp_path / "second.txt").write_text(SECOND)
    monkeypatch.chdir(tmp_path)
    assert CliRunner().invoke(main, ["run", "--run-id", "r", "--quiet", "--policy", "full-history"]).exit_code == 0
    result = CliRunner().invoke(main, ["rejudge", "results/r", "--judge-prompt", "second.txt"])
    assert result.exit_code == 2 and "the run had no --judge, so no rubric was judged" in result.output


def row(first: str, second: str | None) -> Rejudged:
    return Rejudged("c", "p", "m", 1, 1, "q", "rubric: r", first, second, "", [], None)


@pytest.mark.parametrize(
    ("pairs", "agree", "compared", "kappa"),
    [
        ([("YES", "YES"), ("NO", "NO"), ("YES", "YES"), ("NO", "NO")], 4, 4, 1.0),
        ([("YES", "NO"), ("NO", "YES")], 0, 2, -1.0),
        ([("YES", "YES"), ("YES", "YES")], 2, 2, None),  # one verdict throughout: kappa undefined
        ([("YES", "YES"), ("NO", "YES"), ("YES", None)], 1, 2, 0.0),  # no second verdict: left out
    ],
)
def test_agreement_is_plain_k_of_n_and_cohens_kappa(pairs, agree: int, compared: int, kappa: float | None) -> None:
    found = agreement(row(a, b) for a, b in pairs)
    assert (found.agree, found.compared) == (agree, compared)
    assert found.kappa == (pytest.approx(kappa) if kappa is not None else None)


class CountingJudge:
    """A judge that says YES, noting at each call how many chronologies `held` keeps alive."""

    name = "counting"

    def __init__(self, held: weakref.WeakSet) -> None:
        self.held, self.most = held, 0

    def complete(self, request: CallRequest) -> Completion:
        gc.collect()
        self.most = max(self.most, len(self.held))
        return Completion('{"verdict": "YES"}')


@pytest.mark.slow
def test_each_chronology_is_loaded_when_its_rubrics_are_rejudged_one_at_a_time(finished) -> None:
    root, server = finished
    for name in ("three", "four", "five"):  # a second run of four chronologies, two rubrics each
        (root / "chronologies" / f"{name}.yaml").write_text(CHRONOLOGY)
    args = ["run", "--run-id", "many", "--quiet", "--no-cache", "--policy", "full-history"]
    args += ["--model", "openai:m", "--judge", "openai:j", "--base-url", server.base_url]
    assert CliRunner().invoke(main, args).exit_code == 0
    held: weakref.WeakSet = weakref.WeakSet()
    loaded: list[str] = []

    def load(path: str) -> Chronology:
        loaded.append(Path(path).stem)
        chronology = load_chronology(path)
        held.add(chronology)
        return chronology

    entries = read_manifest(root / "results" / "many").chronologies
    judge = CountingJudge(held)
    found = rejudge(load_results(root / "results" / "many"), recorded_chronologies(entries, load), judge, SECOND)
    assert [r.chronology for r in found] == [n for n in ("five", "four", "three", "two") for _ in range(2)]
    assert loaded == ["five", "four", "three", "two"]  # each once, in the run's order
    assert judge.most == 1  # never more than the one whose rubrics are asked


@pytest.mark.parametrize("inside", ["results/r/manifest.json", "results/r/probes.csv", "results/r/new.jsonl"])
def test_out_is_never_written_into_the_runs_folder_even_with_force(finished, inside: str) -> None:
    root, server = finished
    asked = len(server.requests)
    before = {p.name: p.read_bytes() for p in (root / "results" / "r").iterdir() if p.is_file()}
    for force in ([], ["--force"]):
        result = CliRunner().invoke(
            main, ["rejudge", "results/r", "--judge-prompt", "second.txt", "--out", inside, *force]
        )
        assert result.exit_code == 2, result.output
        assert "lies in the results folder" in result.output and "which only `harness run` writes" in result.output
    after = {p.name: p.read_bytes() for p in (root / "results" / "r").iterdir() if p.is_file()}
    assert after == before and len(server.requests) == asked  # the run as it was, no judge asked


def test_out_over_an_existing_file_needs_force(finished) -> None:
    root, _ = finished
    chronology = root / "chronologies" / "two.yaml"
    args = ["rejudge", "results/r", "--judge-prompt", "second.txt", "--out", str(chronology)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2 and "already exists; give another path, or replace it with --force" in result.output
    assert chronology.read_text() == CHRONOLOGY
    result = CliRunner().invoke(main, [*args, "--force"])
    assert result.exit_code == 0, result.output
    assert '"first"' in chronology.read_text()  # asked for: replaced


@pytest.mark.parametrize(
    "out, says", [("results/r", "it lies in the results folder"), ("reports", "a folder, not a file")]
)
def test_an_out_naming_a_folder_is_refused_without_advice_to_remove_it(finished, out: str, says: str) -> None:
    """`--out results/r` (the run's folder itself) or `--out reports` was refused with "remove it"."""
    root, _ = finished
    before = sorted(p.name for p in (root / out).iterdir())
    result = CliRunner().invoke(main, ["rejudge", "results/r", "--judge-prompt", "second.txt", "--out", out, "--force"])
    assert result.exit_code == 2 and says in result.output
    assert "remove it" not in result.output
    assert sorted(p.name for p in (root / out).iterdir()) == before


def test_a_prompt_that_is_a_named_pipe_is_named_as_such_not_told_to_shorten(finished) -> None:
    root, server = finished
    os.mkfifo(root / "pipe.txt")
    asked = len(server.requests)
    result = CliRunner().invoke(main, ["rejudge", "results/r", "--judge-prompt", "pipe.txt"])
    assert (
        result.exit_code == 2 and "pipe.txt: a named pipe (FIFO), not a regular file; give a text file" in result.output
    )
    assert "shorten it" not in result.output
    assert len(server.requests) == asked


def test_a_prompt_whose_file_name_holds_control_characters_names_no_file_with_them(finished) -> None:
    root, _ = finished
    (root / "a\x1b[2Jb\nc.txt").write_text(SECOND)
    result = CliRunner().invoke(main, ["rejudge", "results/r", "--judge-prompt", "a\x1b[2Jb\nc.txt"])
    assert result.exit_code == 0, result.output
    written = [p.name for p in (root / "reports").glob("r-rejudged-*.jsonl")]
    assert len(written) == 1 and written[0].startswith("r-rejudged-prompt~") and written[0].isprintable()


def test_verdicts_never_replace_a_file_that_appeared_at_out_while_the_judge_was_asked(finished) -> None:
    """`--out` is checked free before the first judge call and written after the last: two
    rejudges into one --out both exited 0, the second replacing the first's verdicts."""
    root, server = finished

    def meanwhile(request: Recorded) -> Reply:
        (root / "v.jsonl").write_text("another command's verdicts\n")
        return judged(request)

    server.default = meanwhile
    result = CliRunner().invoke(main, ["rejudge", "results/r", "--judge-prompt", "second.txt", "--out", "v.jsonl"])
    assert result.exit_code == 2 and "v.jsonl: a file appeared there while this command ran" in result.output
    assert (root / "v.jsonl").read_text() == "another command's verdicts\n"
    assert [p.name for p in root.iterdir() if p.name.startswith(".harness-tmp")] == []
