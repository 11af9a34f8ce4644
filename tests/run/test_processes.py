"""`--processes N`: conversations in forked workers leave the results threads leave."""

from __future__ import annotations

import multiprocessing
import os
import pickle
import re
import signal
import threading
import time
import traceback
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

import pytest

from harness.models import Model
from harness.models.catalog import model_factory
from harness.models.options import ModelOptions
from harness.results.locking import RunLock
from harness.results.reader import read_manifest, read_records
from harness.run.batch import resume_batch, run_batch
from harness.run.dispatch import Dispatch
from harness.run.interrupts import Interrupts
from harness.run.plan import BatchPlan
from harness.run.processes import available, run_in_processes, spread
from tests import faults
from tests.conftest import SHIPPED, assert_same_results, builtin_registry
from tests.conftest import shipped_plan as plan
from tests.faults import (
    AtCall,
    disk_full,
    first_ctrl_c,
    harness_run,
    requests_reach,
    rest_of,
    resume,
    running,
    second_ctrl_c,
    worker_dies,
)
from tests.loopback import Reply, ScriptedServer, chat_completion
from tests.spawn import Harness, spawn_harness

pytestmark = pytest.mark.skipif(not available(), reason="needs fork")

DRIFT = SHIPPED / "memory-drift.yaml"
REGISTRY = builtin_registry()


def test_threads_are_spread_evenly_and_no_process_is_idle() -> None:
    assert spread(64, 2) == [32, 32]
    assert spread(5, 2) == [3, 2]
    assert spread(2, 4) == [1, 1]
    assert sum(spread(17, 3)) == 17


@pytest.mark.slow
def test_processes_leave_the_same_results_as_threads(tmp_path: Path) -> None:
    run_batch(plan(concurrency=4), tmp_path / "threads", "threads", REGISTRY)
    run_batch(plan(concurrency=4), tmp_path / "procs", "procs", REGISTRY, processes=2)
    assert_same_results(tmp_path / "threads", tmp_path / "procs")
    for name in ("calls.jsonl", "facts.jsonl", "messages.jsonl", "views.jsonl", "conversations.jsonl"):
        ours, theirs = read_records(tmp_path / "procs" / name), read_records(tmp_path / "threads" / name)
        assert len(ours) == len(theirs) > 0, name  # no record lost or doubled between processes
    assert read_manifest(tmp_path / "procs").conversations == read_manifest(tmp_path / "threads").conversations


@pytest.mark.slow
def test_live_calls_in_processes_are_recorded_and_told_to_the_progress(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "unused")
    events: list[str] = []

    class Seen:
        def begin(self, *args: object) -> None:
            events.append("begin")

        def call_started(self, kind: str) -> None:
            events.append("started")

        def call_ended(self, kind: str, record: object) -> None:
            events.append("ended" if record is not None else "ended without a record")

        def conversation_ended(self, n: int, total: int, *rest: object) -> None:
            events.append(f"conversation {n} of {total}")

    with ScriptedServer() as server:
        server.default = Reply(body=chat_completion("No."))
        options = ModelOptions(base_url=server.base_url)
        live = plan(concurrency=4, live=True, options=options)
        live = BatchPlan(live.chronologies, live.policies, ["openai:m"], 1, 4, live=True, options=options)
        factory = model_factory(options, 0)
        run_batch(live, tmp_path / "p", "p", REGISTRY, Seen(), factory, processes=2)  # type: ignore[arg-type]
    calls = read_records(tmp_path / "p" / "calls.jsonl")
    total = len(live.conversations())
    assert events[0] == "begin"
    assert events.count("started") == events.count("ended") == len(calls) > 0
    assert [e for e in events if e.startswith("conversation")] == [
        f"conversation {n} of {total}" for n in range(1, total + 1)
    ]


@pytest.mark.slow
def test_a_fault_in_a_worker_fails_the_run_with_its_error_and_a_resume_finishes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(SHIPPED.parent)

    def factory(name: str, stack: ExitStack) -> Model:
        return AtCall(5, disk_full)  # in each process

    with pytest.raises(OSError, match="No space left") as caught:
        run_batch(plan(concurrency=4), tmp_path / "cut", "cut", REGISTRY, factory=factory, processes=2)
    told = "".join(traceback.format_exception(caught.value))
    assert re.search(
        rf'File "{re.escape(faults.__file__)}", line \d+, in disk_full\n', told
    )  # where the worker raised it
    recorded = read_manifest(tmp_path / "cut")
    assert recorded.status == "failed" and "No space left" in (recorded.error or "")
    with RunLock(tmp_path / "cut", "check"):  # no worker kept the lock
        pass
    resume_batch(tmp_path / "cut", REGISTRY, processes=2)
    run_batch(plan(concurrency=4), tmp_path / "whole", "whole", REGISTRY)
    assert_same_results(tmp_path / "whole", tmp_path / "cut")


def harness(root: Path, *args: str) -> Harness:
    return spawn_harness("run", "--quiet", "--no-charts", *args, cwd=root, key="unused")


@pytest.mark.slow
def test_killed_with_its_workers_then_resumed_equals_an_uninterrupted_run(tmp_path: Path) -> None:
    """SIGKILL the parent mid-batch: its workers exit, leave the lock free, and a resume finishes the run."""
    with ScriptedServer() as server:
        server.default = Reply(body=chat_completion("No."), delay=0.05)
        args = ["--model", "openai:m", "--base-url", server.base_url, "--live", "--concurrency", "4", "--no-cache"]
        args += [str(SHIPPED / "memory-drift.yaml"), "--out", str(tmp_path / "out"), "--reports", str(tmp_path / "r")]
        whole = harness(tmp_path, *args, "--run-id", "whole")
        whole.finished()
        cut = harness(tmp_path, *args, "--run-id", "cut", "--processes", "2")
        calls = tmp_path / "out" / "cut" / "calls.jsonl"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(read_records(calls)) < 8:
            time.sleep(0.02)
        cut.send_signal(signal.SIGKILL)
        cut.outcome(timeout=30)
        assert read_manifest(tmp_path / "out" / "cut").status == "running"
        deadline = time.monotonic() + 10
        while True:  # the workers notice within harness.run.processes.ORPHAN_POLL, and hold no lock anyway
            try:
                with RunLock(tmp_path / "out" / "cut", "check"):
                    break
            except Exception:
                assert time.monotonic() < deadline, "the lock was still held after the kill"
                time.sleep(0.05)
        code, told = resume(tmp_path, tmp_path / "out" / "cut", "--reports", str(tmp_path / "r"), "--processes", "2")
        assert code == 0, told
    assert_same_results(tmp_path / "out" / "whole", tmp_path / "out" / "cut")


def ctrl_c_run(tmp_path: Path, server: ScriptedServer) -> Harness:
    return harness_run(tmp_path, server, "--no-charts", "--concurrency", "4", "--processes", "2", str(DRIFT))


@pytest.mark.slow
def test_the_first_ctrl_c_finishes_the_workers_calls_in_flight_and_a_resume_finishes_the_run(tmp_path: Path) -> None:
    with ScriptedServer() as server:
        server.default = Reply(body=chat_completion("No."), delay=0.3)
        with running(ctrl_c_run(tmp_path, server)) as process:
            requests_reach(server, 6)
            said = first_ctrl_c(process)
            assert "model calls in flight" in said or "model call in flight" in said
            assert "finishing the 0 model calls" not in said  # the workers' calls are counted here
            assert process.wait(timeout=30) == 130
            said += rest_of(process)
        sent = sum(r.path.endswith("/chat/completions") for r in server.requests)  # not the slots probe
        assert "Traceback" not in said
        calls = read_records(tmp_path / "results" / "r" / "calls.jsonl")
        assert sum(c["attempts"] for c in calls) == sent, said  # every call in flight finished and was recorded
        assert read_manifest(tmp_path / "results" / "r").status == "interrupted"
        server.default = Reply(body=chat_completion("No."))
        code, told = resume(tmp_path, Path("results/r"))
    assert code == 0, told
    assert read_manifest(tmp_path / "results" / "r").status == "complete"


def call_and_wait(conversation: object, events: object) -> object:
    """A worker's conversation: one call that takes a second."""
    from harness.run.events import CallStats, Finished

    events.call_started("answer")  # type: ignore[attr-defined]
    time.sleep(1.0)
    events.call_ended("answer", None)  # type: ignore[attr-defined]
    return Finished("complete", CallStats())


@pytest.mark.slow
def test_the_ctrl_c_notice_counts_the_workers_calls_while_this_process_is_busy() -> None:
    """The parent reads no worker message while it asks a server its slots (`begin`); a Ctrl-C
    then still counts the two calls in flight (it said 0 before: the count came from messages)."""
    notices: list[str] = []

    def begin() -> None:
        time.sleep(0.5)  # the workers' calls have started; their messages wait in the pipes
        os.kill(os.getpid(), signal.SIGINT)

    with Interrupts(notices.append) as interrupts:
        todo = ["a", "b"]
        run_in_processes(
            Dispatch(todo, [1, 1], todo), 2, 2, lambda: (call_and_wait, lambda: None), interrupts, None,
            lambda *_: None, begin,
        )  # fmt: skip
    assert len(notices) == 1 and "finishing the 2 model calls in flight" in notices[0]


@pytest.mark.slow
def test_the_second_ctrl_c_abandons_the_workers_hung_calls_and_exits_130(tmp_path: Path) -> None:
    with ScriptedServer() as server:
        server.enqueue(*[Reply(body=chat_completion("ok")) for _ in range(6)])
        server.default = Reply(body=chat_completion("late"), delay=120)  # then it hangs
        with running(ctrl_c_run(tmp_path, server)) as process:
            requests_reach(server, 8)
            said = first_ctrl_c(process)
            said += second_ctrl_c(process)
    assert "finish with: harness run --resume results/r" in said and "Traceback" not in said
    assert read_manifest(tmp_path / "results" / "r").status == "interrupted"
    responses = [c["response"] for c in read_records(tmp_path / "results" / "r" / "calls.jsonl")]
    assert responses == ["ok"] * len(responses) and len(responses) >= 4  # the records before the hung calls are kept


def test_processes_are_refused_where_nothing_forks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from harness.cli.commands import main
    from harness.run import processes

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(processes, "available", lambda: False)
    result = CliRunner().invoke(main, ["run", "--processes", "2", str(SHIPPED / "memory-drift.yaml")])
    assert result.exit_code == 2, result.output
    assert "--processes 2: this platform cannot fork worker processes; leave it at 1" in result.stderr
    assert not (tmp_path / "results").exists()  # nothing written


@pytest.mark.slow
def test_a_worker_that_dies_fails_the_run_and_a_resume_finishes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(SHIPPED.parent)

    def factory(name: str, stack: ExitStack) -> Model:
        return AtCall(4, worker_dies(os.getpid()))

    with pytest.raises(RuntimeError, match="a worker process ended with exit code 3"):
        run_batch(plan(concurrency=4), tmp_path / "cut", "cut", REGISTRY, factory=factory, processes=2)
    assert read_manifest(tmp_path / "cut").status == "failed"
    resume_batch(tmp_path / "cut", REGISTRY)
    run_batch(plan(concurrency=4), tmp_path / "whole", "whole", REGISTRY)
    assert_same_results(tmp_path / "whole", tmp_path / "cut")


@pytest.mark.slow
def test_spread_servers_read_before_the_fork_serve_cached_runs_in_processes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The listings of several --base-url are read before the workers fork; each worker then
    reads its own for the cache: no connection of the parent's is shared between processes."""
    monkeypatch.setenv("OPENAI_API_KEY", "unused")
    listing = {"object": "list", "data": [{"id": "same.gguf", "object": "model", "created": 1}]}

    def answer(request) -> Reply:  # type: ignore[no-untyped-def]
        return Reply(body=listing) if request.path.endswith("/models") else Reply(body=chat_completion("No."))

    with ScriptedServer() as a, ScriptedServer() as b:
        a.default = b.default = answer
        options = ModelOptions(base_url=a.base_url, base_urls=(a.base_url, b.base_url))
        base = plan()
        live = BatchPlan(base.chronologies, base.policies, ["openai:m"], 1, 4, live=True, options=options,
                         cache_dir=tmp_path / "cache")  # fmt: skip
        run_batch(live, tmp_path / "p", "p", REGISTRY, None, model_factory(options, 0), processes=2)
        requests = a.requests + b.requests
    calls = read_records(tmp_path / "p" / "calls.jsonl")
    assert calls and all(c["error"] is None for c in calls)
    assert read_manifest(tmp_path / "p").conversations == {
        "total": len(live.conversations()),
        "complete": len(live.conversations()),
    }
    listed = [r for r in requests if r.path.endswith("/models")]
    assert len(listed) >= 2 and all(r.headers.get("connection") == "close" for r in listed)


def explode(conversation: object, events: object) -> None:
    raise ValueError("a fault in the worker's own code")


class Unpicklable(Exception):
    def __init__(self) -> None:
        super().__init__("cannot cross a pipe")
        self.held = threading.Lock()


def explode_unpicklably(conversation: object, events: object) -> None:
    raise Unpicklable()


@pytest.mark.slow
@pytest.mark.parametrize(("run_one", "kind"), [(explode, ValueError), (explode_unpicklably, RuntimeError)])
def test_a_workers_error_says_where_in_the_worker_it_happened(run_one: Callable[..., None], kind: type) -> None:
    """Its traceback in the worker is chained to it as its cause, as concurrent.futures does."""
    todo = plan().conversations()[:2]
    with pytest.raises(kind) as caught:
        run_in_processes(
            Dispatch.of(todo, [1, 1]), 2, 2, lambda: (run_one, lambda: None), Interrupts(print), None, lambda *_: None
        )
    told = "".join(traceback.format_exception(caught.value))
    line = run_one.__code__.co_firstlineno + 1
    assert f'File "{__file__}", line {line}, in {run_one.__name__}' in told
    assert "The above exception was the direct cause of the following exception" in told


def test_a_worker_sends_the_progress_only_what_it_reads_of_a_call() -> None:
    """Whose call it was and its counts, not its request and response (a large view, a long answer)."""
    from harness.cli.progress import Tally
    from harness.run.events import EndedCall
    from harness.run.processes import _Events
    from tests.conftest import call_record

    sent: list[tuple[object, ...]] = []
    records = [
        call_record(attempts=3, format_refusals=1, cached=False, error=None, response="x" * 100_000),
        call_record(attempts=1, format_refusals=0, cached=False, error="HTTP 400", messages=[{"content": "y" * 99}]),
        call_record(attempts=0, format_refusals=0, cached=True, error=None),
    ]
    events = _Events(sent.append, records=True, index=0, flying=multiprocessing.Value("i", 0))
    for record in records:
        events.call_ended("answer", record)
    assert all(type(message[2]) is EndedCall for message in sent)
    assert max(len(pickle.dumps(message)) for message in sent) < 400
    direct, told = Tally(clock=lambda: 0.0), Tally(clock=lambda: 0.0)
    for record, message in zip(records, sent):
        direct.call_started("answer")
        direct.call_ended("answer", record)
        told.call_started("answer")
        told.call_ended(*message[1:])  # type: ignore[arg-type]
    assert told.snapshot().summary() == direct.snapshot().summary()
    assert (told.stats.calls, told.stats.retries, told.stats.errors, told.stats.cached) == (3, 1, 1, 1)
    assert told._made == direct._made == {("c", "p", "m", 1): 3}
