"""`--max-rpm`, `--max-tpm` and AIMD on 429 in a whole run against a loopback server.

The pacing clock is a fake one (time moves when a request waits), so a limit of a few requests
per minute runs at once; the requests are real ones, to a real server on 127.0.0.1.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from harness.cli.commands import main
from harness.models import ratelimit
from harness.models.options import ModelOptions
from harness.models.ratelimit import WINDOW, RateLimits
from harness.policy import PolicyRegistry
from harness.run.batchfile import batch_options
from harness.run.manifest import recorded_options
from harness.run.options import RunOptions
from harness.run.spec import build
from tests.loopback import Reply, ScriptedServer, chat_completion
from tests.models.test_ratelimit import FakeClock
from tests.paths import SHIPPED


@pytest.fixture
def server() -> ScriptedServer:
    with ScriptedServer() as running:
        running.default = Reply(body=chat_completion("ok", usage={"prompt_tokens": 5, "completion_tokens": 1}))
        yield running


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "chronologies").mkdir()
    shutil.copy(SHIPPED / "memory-drift.yaml", tmp_path / "chronologies")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(ratelimit, "SystemClock", FakeClock)  # every pacer of the run on a fake clock
    return tmp_path


def run(server: ScriptedServer, *args: str) -> list[dict]:
    """`harness run` of one policy against the server; the calls it recorded."""
    result = CliRunner().invoke(
        main,
        [
            "run",
            "--model",
            "openai:m",
            "--base-url",
            server.base_url,
            "--policy",
            "full-history",
            "--no-cache",
            "--no-charts",
        ]
        + ["--run-id", "r", "--quiet", *args],
    )
    assert result.exit_code == 0, result.output + str(result.exception)
    return [json.loads(line) for line in Path("results/r/calls.jsonl").read_text().splitlines()]


def report() -> str:
    return Path("reports/r.md").read_text()


def test_a_limited_run_records_each_wait_and_the_report_sums_them(project: Path, server: ScriptedServer) -> None:
    calls = run(server, "--max-rpm", "3", "--answer-every-turn")
    waits = (len(calls) - 1) // 3  # three go at once; every third after them waits for a window to pass
    assert sum(c["waits"] for c in calls) == waits > 0
    assert sum(c["waited_ms"] for c in calls) == pytest.approx(waits * WINDOW * 1000, abs=waits)
    assert {c["http_429"] for c in calls} == {0} and {c["concurrency_low"] for c in calls} == {None}
    line = next(line for line in report().splitlines() if "Rate limits" in line)
    assert f"waited {waits} times" in line and "--max-rpm 3, --max-tpm none" in line


def test_429s_lower_the_concurrency_and_the_report_says_so(project: Path, server: ScriptedServer) -> None:
    server.enqueue(Reply(429, {"Retry-After": "0"}, body={"error": {"message": "slow down"}}))
    calls = run(server, "--concurrency", "2")
    assert sum(c["http_429"] for c in calls) == 1
    assert min(c["concurrency_low"] for c in calls if c["concurrency_low"] is not None) == 1
    line = next(line for line in report().splitlines() if "Rate limits" in line)
    assert "Rate limits (none set)" in line and "HTTP 429 (Too Many Requests) 1 time" in line
    assert "fell to 1" in line


def test_nothing_is_said_without_a_limit_or_a_429(project: Path, server: ScriptedServer) -> None:
    calls = run(server)
    assert {c["waits"] for c in calls} == {0}
    assert "Rate limits" not in report()


def test_the_limits_are_recorded_and_restored_on_resume() -> None:
    options = ModelOptions(rate_limits=RateLimits(60, 90_000, 3))
    record = json.loads(json.dumps(options.as_record()))
    assert record["rate_limits"] == {
        "max_rpm": 60,
        "max_tpm": 90_000,
        "shards": 3,
        "shard_rpm": 20,
        "shard_tpm": 30_000,
    }
    assert recorded_options(record).rate_limits == options.rate_limits
    del record["rate_limits"]  # a run before them
    assert recorded_options(record).rate_limits == RateLimits()


def test_a_shard_gets_its_share_of_the_batch_limits(project: Path) -> None:
    given = RunOptions(paths=(Path("chronologies"),), max_rpm=60, max_tpm=1000, shard="2/3")
    limits = build(given, PolicyRegistry.installed()).options.rate_limits
    assert (limits.shard_rpm, limits.shard_tpm) == (20, 333)


def test_a_batch_file_states_the_limits(project: Path) -> None:
    path = project / "batch.yaml"
    path.write_text(yaml.safe_dump({"chronologies": ["chronologies"], "max_rpm": 60, "max_tpm": 5000}))
    given, _ = batch_options(path, {}, PolicyRegistry.installed())
    assert (given.max_rpm, given.max_tpm) == (60, 5000)
    given, _ = batch_options(path, {"max_rpm": 30}, PolicyRegistry.installed())  # a machine's own setting
    assert given.max_rpm == 30


def test_a_resume_keeps_the_run_s_limits(project: Path, server: ScriptedServer) -> None:
    run(server, "--max-rpm", "3")
    other = CliRunner().invoke(main, ["run", "--resume", "results/r", "--max-rpm", "30", "--no-charts"])
    assert other.exit_code == 2 and "--max-rpm 30 (the run has 3)" in other.output
    same = CliRunner().invoke(main, ["run", "--resume", "results/r", "--max-rpm", "3", "--no-charts"])
    assert same.exit_code == 0, same.output
