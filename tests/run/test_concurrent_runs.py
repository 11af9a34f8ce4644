"""Two processes, one results folder: real `harness` subprocesses against a loopback server.

Each run makes live calls that the server answers after a short delay, so two processes
started together overlap for seconds. Whatever the interleaving, no record is written twice
and no conversation is lost: a second process either claims its own directory or exits 2
naming the one that holds it.
"""

from __future__ import annotations

import json
import shutil
import signal
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli.commands import main
from harness.results.reader import read_records
from tests.conftest import assert_same_results
from tests.loopback import Recorded, Reply, ScriptedServer, chat_completion
from tests.paths import SHIPPED
from tests.spawn import Harness, spawn_harness

pytestmark = pytest.mark.slow  # harness processes side by side

POLICIES = ["--policy", "full-history", "--policy", "last-turns", "--policy", "summary"]


KEY = "sk-test-concurrent"


def slow(request: Recorded) -> Reply:
    """After 50 ms, the same reply for the same request whatever the order (JSON for the writer)."""
    body = request.body or {}
    if "response_format" in body:
        return Reply(body=chat_completion('{"facts": []}'), delay=0.05)
    last = (body.get("messages") or [{}])[-1].get("content", "")
    return Reply(body=chat_completion(f"echo {len(last)}"), delay=0.05)


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as running:
        running.default = slow
        yield running


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "chronologies").mkdir()
    shutil.copy(SHIPPED / "memory-drift.yaml", tmp_path / "chronologies")
    monkeypatch.chdir(tmp_path)
    return tmp_path


Spawn = Callable[..., Harness]


@pytest.fixture
def harness(server: ScriptedServer) -> Spawn:
    """`harness(*args)`: `harness run` in a process of its own (live, no cache: every turn is a
    call to the server)."""

    def spawn(*args: str) -> Harness:
        command = ["run", "--quiet", *args]
        if "--resume" not in args:
            command += ["--model", "openai:m", "--base-url", server.base_url, "--live", "--no-cache", *POLICIES]
        return spawn_harness(*command, key=KEY)

    return spawn


def records(directory: Path) -> list[tuple[str, str, str, int]]:
    return sorted(
        (r["chronology"], r["policy"], r["model"], r["repetition"])
        for r in read_records(directory / "conversations.jsonl")
    )


def wait_for_requests(server: ScriptedServer, count: int) -> None:
    deadline = time.monotonic() + 60
    while len(server.requests) < count and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(server.requests) >= count


def test_two_runs_started_together_get_two_directories(server, harness: Spawn, project: Path) -> None:
    first, second = harness(), harness()
    assert [first.outcome()[0], second.outcome()[0]] == [0, 0]
    runs = sorted((project / "results").iterdir())
    assert len(runs) == 2
    for directory in runs:
        assert len(records(directory)) == 3 == len(set(records(directory)))
        assert json.loads((directory / "manifest.json").read_text())["conversations"] == {"total": 3, "complete": 3}


def test_two_runs_with_one_run_id_one_wins_and_the_other_writes_nothing(server, harness: Spawn, project: Path) -> None:
    first, second = harness("--run-id", "same"), harness("--run-id", "same")
    results = sorted([first.outcome(), second.outcome()])
    assert [code for code, _ in results] == [0, 2]
    assert "results/same already exists" in results[1][1]
    assert len(records(project / "results" / "same")) == 3


def test_a_resume_while_the_run_goes_on_is_refused_naming_the_run(server, harness: Spawn, project: Path) -> None:
    server.enqueue(Reply(body=chat_completion("held"), gate=2, delay=60))  # held until a second request arrives
    running = harness("--run-id", "r")
    wait_for_requests(server, 1)  # it holds the directory and has written its manifest
    code, stderr = harness("--resume", "results/r").outcome()
    urllib.request.urlopen(server.base_url + "/models", timeout=10).read()  # the second request: go on
    assert code == 2
    assert f"results/r is in use by process {running.pid} (harness run since " in stderr
    assert running.outcome()[0] == 0
    manifest = json.loads((project / "results" / "r" / "manifest.json").read_text())
    assert manifest["conversations"] == {"total": 3, "complete": 3} and len(records(project / "results" / "r")) == 3


def test_two_resumes_at_once_finish_the_run_once(
    server, harness: Spawn, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole = [
        "run",
        "--quiet",
        "--run-id",
        "whole",
        "--model",
        "openai:m",
        "--base-url",
        server.base_url,
        "--live",
        "--no-cache",
        *POLICIES,
    ]
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    assert CliRunner().invoke(main, whole).exit_code == 0  # in process: one interpreter start less
    start = len(server.requests)
    victim = harness("--run-id", "cut")
    wait_for_requests(server, start + 12)
    victim.send_signal(signal.SIGKILL)
    victim.outcome()
    first, second = harness("--resume", "results/cut"), harness("--resume", "results/cut")
    results = [first.outcome(), second.outcome()]
    assert sorted(code for code, _ in results) in ([0, 0], [0, 2])  # the later one waits for nothing
    assert all("in use by process" in stderr for code, stderr in results if code == 2)
    assert records(project / "results" / "cut") == records(project / "results" / "whole")
    assert_same_results(project / "results" / "whole", project / "results" / "cut")
