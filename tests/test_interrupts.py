"""Ctrl-C: the first finishes the calls in flight and says how to force; the second cancels."""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path

import pytest

from harness.batch import BatchPlan, resume_batch, run_batch
from harness.loading import load_chronologies
from harness.models import CallRequest, Completion, Model
from harness.models.reference import ReferenceModel
from harness.policy import PolicyRegistry
from tests.conftest import assert_same_results
from tests.loopback import Reply, ScriptedServer, chat_completion

SHIPPED = Path(__file__).resolve().parent.parent / "chronologies"
REGISTRY = PolicyRegistry.installed()


class CtrlCDuring:
    """The reference model; during its n-th call the user presses Ctrl-C (the call still ends)."""

    name = "reference"

    def __init__(self, call: int) -> None:
        self.calls, self.at = 0, call

    def complete(self, request: CallRequest) -> Completion:
        self.calls += 1
        if self.calls == self.at:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.2)  # still in flight when the handler counts
        return ReferenceModel().complete(request)


def test_the_first_ctrl_c_finishes_the_call_in_flight_starts_no_other_and_keeps_the_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(SHIPPED.parent)
    plan = BatchPlan(load_chronologies([SHIPPED / "memory-drift.yaml"]), REGISTRY.default_specs(), ["reference"])
    model, notices = CtrlCDuring(9), []

    def factory(name: str, stack: ExitStack) -> Model:
        return model

    with pytest.raises(KeyboardInterrupt):
        run_batch(plan, tmp_path / "cut", "cut", REGISTRY, factory=factory, notify=notices.append)
    assert model.calls == 9  # the call in flight ended; none started after it
    assert len(notices) == 1 and "finishing the 1 model call in flight" in notices[0]
    assert "press Ctrl-C again to cancel them and stop now" in notices[0]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # given back
    assert json.loads((tmp_path / "cut" / "manifest.json").read_text())["status"] == "interrupted"
    resume_batch(tmp_path / "cut", REGISTRY)
    run_batch(plan, tmp_path / "whole", "whole", REGISTRY)
    assert_same_results(tmp_path / "whole", tmp_path / "cut")


def read_until(stream, text: str, timeout: float) -> str:
    """What `stream` (a pipe) says until `text` appears, or until `timeout` seconds pass."""
    seen, deadline = "", time.monotonic() + timeout
    while text not in seen and time.monotonic() < deadline:
        if select.select([stream], [], [], 0.1)[0]:
            chunk = os.read(stream.fileno(), 4096).decode()
            if not chunk:
                break
            seen += chunk
    return seen


def test_the_second_ctrl_c_cancels_a_hung_call_and_exits_130_with_the_records(tmp_path: Path) -> None:
    (tmp_path / "chronologies").mkdir()
    shutil.copy(SHIPPED / "memory-drift.yaml", tmp_path / "chronologies")
    with ScriptedServer() as server:
        server.enqueue(*[Reply(body=chat_completion("ok")) for _ in range(3)])
        server.default = Reply(body=chat_completion("late"), delay=120)  # then it hangs
        command = [
            sys.executable,
            "-m",
            "harness",
            "run",
            "--model",
            "openai:m",
            "--base-url",
            server.base_url,
            "--live",
            "--no-cache",
            "--policy",
            "full-history",
            "--run-id",
            "r",
            "--timeout",
            "100",
        ]
        process = subprocess.Popen(
            command,
            cwd=tmp_path,
            env={**os.environ, "OPENAI_API_KEY": "k"},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            deadline = time.monotonic() + 60
            while len(server.requests) < 4 and time.monotonic() < deadline:
                time.sleep(0.05)
            process.send_signal(signal.SIGINT)
            said = read_until(process.stderr, "press Ctrl-C again", 10)
            assert "finishing the 1 model call in flight" in said and "press Ctrl-C again" in said
            time.sleep(0.5)
            assert process.poll() is None  # still waiting for the hung call
            pressed = time.monotonic()
            process.send_signal(signal.SIGINT)
            assert process.wait(timeout=10) == 130
            assert time.monotonic() - pressed < 5
            said += process.stderr.read().decode()
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
            process.stderr.close()
    assert "finish with: harness run --resume results/r" in said and "Traceback" not in said
    manifest = json.loads((tmp_path / "results" / "r" / "manifest.json").read_text())
    assert manifest["status"] == "interrupted"
    calls = [json.loads(line) for line in (tmp_path / "results" / "r" / "calls.jsonl").read_text().splitlines()]
    assert [c["response"] for c in calls] == ["ok", "ok", "ok"]  # the records before the hung call are kept
