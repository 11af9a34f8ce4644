"""Batches against a real OpenAI-compatible server on 127.0.0.1: the whole client path."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.results import load_results
from tests.conftest import assert_same_results
from tests.loopback import Recorded, Reply, ScriptedServer, chat_completion

SHIPPED = Path(__file__).resolve().parent.parent / "chronologies"
KEY = "sk-test-DO-NOT-LEAK-4f1c2a"


def deterministic(request: Recorded) -> Reply:
    """The same reply for the same request, whatever the order: JSON for writers and judges."""
    body = request.body or {}
    if "response_format" in body:
        return Reply(body=chat_completion('{"facts": []}', usage={"prompt_tokens": 7, "completion_tokens": 3}))
    last = body.get("messages", [{}])[-1].get("content", "")
    if "in_view:" in last:
        return Reply(body=chat_completion('{"in_view": true, "honoured": true, "reason": "seen"}'))
    return Reply(body=chat_completion(f"echo {len(last)}", usage={"prompt_tokens": 11, "completion_tokens": 2}),
                 delay=0.01)  # fmt: skip


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as running:
        running.default = deterministic
        yield running


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "chronologies").mkdir()
    shutil.copy(SHIPPED / "memory-drift.yaml", tmp_path / "chronologies")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    return tmp_path


def run(server: ScriptedServer, *args: str, status: int = 0) -> str:
    """`harness run` against the server; its stderr (the exit status must be `status`)."""
    result = CliRunner().invoke(main, ["run", "--model", "openai:m", "--base-url", server.base_url, "--quiet", *args])
    assert result.exit_code == status, result.output + str(result.exception)
    return result.stderr


def test_provider_usage_is_recorded_as_reported_and_totals_say_how_many_reported(server, project: Path) -> None:
    run(server, "--run-id", "r", "--policy", "bounded-facts", "--no-cache")
    results = load_results(project / "results" / "r")
    answers = results.calls[results.calls.kind == "answer"]
    assert set(answers.reported_prompt_tokens) == {11}
    assert set(results.turns.aux_reported_prompt_tokens.dropna()) == {7}


def test_requests_in_flight_never_exceed_the_concurrency(server, project: Path) -> None:
    run(server, "--run-id", "r", "--live", "--concurrency", "2", "--no-cache",
        "--policy", "full-history", "--policy", "last-turns", "--policy", "request-compaction")  # fmt: skip
    assert server.max_in_flight == 2  # parallel, and bounded


def test_the_api_key_is_sent_but_never_written(server, project: Path) -> None:
    run(server, "--run-id", "r", "--no-cache", "--judge", "openai:j")
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"
    for path in [*(project / "results").rglob("*"), *(project / "reports").rglob("*")]:
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path
    manifest = json.loads((project / "results" / "r" / "manifest.json").read_text())
    assert manifest["model_options"]["api_key_env"] == "OPENAI_API_KEY"


def test_a_rerun_is_served_from_the_cache_and_says_so(server, project: Path) -> None:
    run(server, "--run-id", "first")
    before = len(server.requests)
    run(server, "--run-id", "second")
    assert len(server.requests) == before  # nothing paid twice
    calls = load_results(project / "results" / "second").calls
    assert calls.cached.all()
    assert f"{len(calls)} calls came from the response cache" in (project / "reports" / "second.md").read_text()
    run(server, "--run-id", "third", "--no-cache")
    assert len(server.requests) > before


def test_an_error_that_survives_the_retries_is_recorded_and_the_batch_goes_on(server, project: Path) -> None:
    server.default = lambda request: Reply(503, body={"error": {"message": "overloaded"}})
    stderr = run(server, "--run-id", "r", "--no-cache", "--live", "--max-retries", "1", "--policy", "full-history",
                 "--policy", "summary", status=3)  # fmt: skip
    assert "2 of 2 conversations ended in an error" in stderr and (project / "reports" / "r.md").is_file()
    results = load_results(project / "results" / "r")
    assert set(results.turns.status) == {"error"} and len(results.turns) == 2  # each conversation ended once
    assert results.calls.attempts.tolist() == [2, 2] and "503" in results.calls.error.iloc[0]
    assert json.loads((project / "results" / "r" / "manifest.json").read_text())["status"] == "complete"


def test_the_judge_is_recorded_beside_the_patterns(server, project: Path) -> None:
    run(server, "--run-id", "r", "--no-cache", "--policy", "last-turns", "--judge", "openai:j")
    probes = load_results(project / "results" / "r").probes
    judged = probes[probes.check == "prohibition"]
    assert judged.judged_in_view.all() and (judged.judge_note == "seen").all()


def test_resume_after_the_process_is_killed_equals_an_uninterrupted_run(server, project: Path) -> None:
    env = {**os.environ, "OPENAI_API_KEY": KEY}
    command = [sys.executable, "-m", "harness", "run", "--model", "openai:m", "--base-url", server.base_url,
               "--live", "--no-cache", "--quiet"]  # fmt: skip
    subprocess.run([*command, "--run-id", "whole"], env=env, check=True, capture_output=True, timeout=120)
    start = len(server.requests)
    victim = subprocess.Popen([*command, "--run-id", "cut"], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)  # fmt: skip
    deadline = time.monotonic() + 60
    while len(server.requests) < start + 40 and time.monotonic() < deadline:
        time.sleep(0.01)
    victim.send_signal(signal.SIGKILL)
    victim.wait(timeout=10)
    manifest = json.loads((project / "results" / "cut" / "manifest.json").read_text())
    assert manifest["status"] == "running"
    subprocess.run([sys.executable, "-m", "harness", "run", "--resume", "results/cut", "--quiet"], env=env,
                   check=True, capture_output=True, timeout=120)  # fmt: skip
    assert_same_results(project / "results" / "whole", project / "results" / "cut")


def test_a_batch_where_every_call_is_refused_exits_3_with_results_and_report(server, project: Path) -> None:
    server.default = lambda request: Reply(401, body={"error": {"message": "invalid api key"}})
    stderr = run(server, "--run-id", "r", "--no-cache", "--policy", "full-history", "--policy", "summary", status=3)
    assert "error: 2 of 2 conversations ended in an error" in stderr
    manifest = json.loads((project / "results" / "r" / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["conversations"] == {"total": 2, "error": 2}
    assert (project / "reports" / "r.md").is_file()


def test_a_summary_policy_stopped_by_a_failed_summarizer_call_ended_in_an_error(server, project: Path) -> None:
    server.default = lambda request: Reply(503, body={"error": {"message": "overloaded"}})
    run(server, "--run-id", "r", "--no-cache", "--max-retries", "0", "--policy", "summary", status=3)
    turns = load_results(project / "results" / "r").turns
    assert turns.stop_reason.dropna().str.startswith("aux_call_failed").all()  # the turn says why it stopped
