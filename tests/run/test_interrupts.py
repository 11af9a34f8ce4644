"""Ctrl-C: the first finishes the calls in flight and says how to force; the second cancels.
SIGTERM and SIGHUP cancel at once, as the second Ctrl-C does."""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from contextlib import ExitStack
from pathlib import Path

import pytest

from harness.chronology.loading import load_chronologies
from harness.models import Model
from harness.policy import PolicyRegistry
from harness.run.batch import Runtime, resume_batch, run_batch
from harness.run.interrupts import Terminated, terminations
from harness.run.spec import RunSpec
from tests.conftest import SHIPPED, assert_same_results
from tests.faults import AtCall, ctrl_c, first_ctrl_c, harness_run, requests_reach, running, second_ctrl_c
from tests.loopback import Reply, ScriptedServer, chat_completion

REGISTRY = PolicyRegistry.installed()


def test_the_first_ctrl_c_finishes_the_call_in_flight_starts_no_other_and_keeps_the_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(SHIPPED.parent)
    plan = RunSpec(load_chronologies([SHIPPED / "memory-drift.yaml"]), REGISTRY.default_specs(), ["reference"])
    model, notices = AtCall(9, ctrl_c), []  # the call in flight still ends

    def factory(name: str, stack: ExitStack) -> Model:
        return model

    with pytest.raises(KeyboardInterrupt):
        run_batch(plan, tmp_path / "cut", "cut", Runtime(REGISTRY, factory=factory, notify=notices.append))
    assert model.calls == 9  # the call in flight ended; none started after it
    assert len(notices) == 1 and "finishing the 1 model call in flight" in notices[0]
    assert "press Ctrl-C again to cancel them and stop now" in notices[0]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # given back
    assert json.loads((tmp_path / "cut" / "manifest.json").read_text())["status"] == "interrupted"
    resume_batch(tmp_path / "cut", Runtime(REGISTRY))
    run_batch(plan, tmp_path / "whole", "whole", Runtime(REGISTRY))
    assert_same_results(tmp_path / "whole", tmp_path / "cut")


@pytest.mark.slow  # a harness process
def test_the_second_ctrl_c_cancels_a_hung_call_and_exits_130_with_the_records(tmp_path: Path) -> None:
    (tmp_path / "chronologies").mkdir()
    shutil.copy(SHIPPED / "memory-drift.yaml", tmp_path / "chronologies")
    with ScriptedServer() as server:
        server.enqueue(*[Reply(body=chat_completion("ok")) for _ in range(3)])
        server.default = Reply(body=chat_completion("late"), delay=120)  # then it hangs
        with running(harness_run(tmp_path, server, "--policy", "full-history")) as process:
            requests_reach(server, 4)
            said = first_ctrl_c(process)
            assert "finishing the 1 model call in flight" in said and "press Ctrl-C again" in said
            said += second_ctrl_c(process)
    assert "finish with: harness run --resume results/r" in said and "Traceback" not in said
    manifest = json.loads((tmp_path / "results" / "r" / "manifest.json").read_text())
    assert manifest["status"] == "interrupted"
    calls = [json.loads(line) for line in (tmp_path / "results" / "r" / "calls.jsonl").read_text().splitlines()]
    assert [c["response"] for c in calls] == ["ok", "ok", "ok"]  # the records before the hung call are kept


def terminate() -> None:
    """SIGTERM arrives during the call (`kill`, a scheduler ending the job)."""
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(0.2)


def test_sigterm_abandons_the_calls_in_flight_marks_the_run_interrupted_and_resume_finishes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(SHIPPED.parent)
    plan = RunSpec(load_chronologies([SHIPPED / "memory-drift.yaml"]), REGISTRY.default_specs(), ["reference"])
    model = AtCall(9, terminate)

    def factory(name: str, stack: ExitStack) -> Model:
        return model

    with terminations(), pytest.raises(Terminated) as stopped:
        run_batch(plan, tmp_path / "cut", "cut", Runtime(REGISTRY, factory=factory))
    assert stopped.value.status == 143 and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # given back
    assert json.loads((tmp_path / "cut" / "manifest.json").read_text())["status"] == "interrupted"
    resume_batch(tmp_path / "cut", Runtime(REGISTRY))
    run_batch(plan, tmp_path / "whole", "whole", Runtime(REGISTRY))
    assert_same_results(tmp_path / "whole", tmp_path / "cut")


@pytest.mark.slow  # a harness process
@pytest.mark.parametrize(("signum", "status"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_sigterm_or_sighup_ends_a_hung_run_at_once_and_the_manifest_says_interrupted(
    tmp_path: Path, signum: int, status: int
) -> None:
    (tmp_path / "chronologies").mkdir()
    shutil.copy(SHIPPED / "memory-drift.yaml", tmp_path / "chronologies")
    with ScriptedServer() as server:
        server.enqueue(*[Reply(body=chat_completion("ok")) for _ in range(3)])
        server.default = Reply(body=chat_completion("late"), delay=120)  # then it hangs
        with running(harness_run(tmp_path, server, "--policy", "full-history")) as process:
            requests_reach(server, 4)
            process.send_signal(signum)
            code, said = process.outcome(timeout=30)  # at once, where the hung call takes 100 s
    assert code == status and "finish with: harness run --resume results/r" in said and "Traceback" not in said
    manifest = json.loads((tmp_path / "results" / "r" / "manifest.json").read_text())
    assert manifest["status"] == "interrupted"
