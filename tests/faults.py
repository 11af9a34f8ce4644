"""Ctrl-C for the tests of a batch that stops (tests/run/test_interrupts.py).

In process: `AtCall`, the reference model doing something else at its n-th call (a Ctrl-C).
Across processes: `harness_run`, a `harness run` of live calls to a
loopback server, the two Ctrl-Cs pressed on it, checked as the user would see them, and its
`resume`.
"""

from __future__ import annotations

import os
import select
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from harness.models import CallRequest, Completion
from harness.models.reference import ReferenceModel
from tests.loopback import ScriptedServer
from tests.spawn import Harness, spawn_harness


class AtCall:
    """The reference model, which does `act` at its `call`-th call, then answers that call if `act` returned."""

    name = "reference"

    def __init__(self, call: int, act: Callable[[], None]) -> None:
        self.calls, self.at, self.act = 0, call, act

    def complete(self, request: CallRequest) -> Completion:
        self.calls += 1
        if self.calls == self.at:
            self.act()
        return ReferenceModel().complete(request)


def ctrl_c() -> None:
    """The user presses Ctrl-C during the call, which stays in flight while the handler counts."""
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(0.2)


def harness_run(cwd: Path, server: ScriptedServer, *options: str) -> Harness:
    """`harness run --run-id r` of live, uncached calls to `server` (which may hang: a 100 s
    timeout) in a process of its own, with `options`; its stderr is piped (the Ctrl-C notices)."""
    command = ["run", "--model", "openai:m", "--base-url", server.base_url]
    command += ["--live", "--no-cache", "--run-id", "r", "--timeout", "100", *options]
    return spawn_harness(*command, cwd=cwd, key="k")


def resume(cwd: Path, directory: Path, *options: str) -> tuple[int, str]:
    """`harness run --resume DIRECTORY` to its end (quiet, without charts), with `options`: its
    exit status and what it said on stderr."""
    command = ["run", "--quiet", "--no-charts", "--resume", str(directory), *options]
    return spawn_harness(*command, cwd=cwd, key="k").outcome()


@contextmanager
def running(process: Harness) -> Iterator[Harness]:
    """`process` while the test drives it; killed if the test leaves it running, its stderr closed."""
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        assert process.stderr is not None
        process.stderr.close()


def requests_reach(server: ScriptedServer, count: int, timeout: float = 60) -> None:
    """Wait until `server` has had `count` requests (the batch is under way), for up to `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while len(server.requests) < count and time.monotonic() < deadline:
        time.sleep(0.02)


def first_ctrl_c(process: Harness) -> str:
    """Press Ctrl-C once: what the process says until it tells how to stop at once."""
    process.send_signal(signal.SIGINT)
    assert process.stderr is not None
    return read_until(process.stderr, "press Ctrl-C again", 30)


def second_ctrl_c(process: Harness) -> str:
    """Ctrl-C again while its calls hang: it waited for them, and now exits 130 at once; what it
    said meanwhile. At once: within 30 s, where waiting for the hung calls takes the run's
    100 s timeout (a bound a busy machine never reaches, which still tells the two apart)."""
    time.sleep(0.5)
    assert process.poll() is None  # still waiting for the hung calls
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=30) == 130
    return rest_of(process)


def rest_of(process: Harness) -> str:
    """What an ended process said on stderr that was not read yet."""
    return process.outcome()[1]


def read_until(stream: IO[str], text: str, timeout: float) -> str:
    """What `stream` (a pipe) says until `text` appears, or until `timeout` seconds pass."""
    seen, deadline = "", time.monotonic() + timeout
    while text not in seen and time.monotonic() < deadline:
        if select.select([stream], [], [], 0.1)[0]:
            chunk = os.read(stream.fileno(), 4096).decode()
            if not chunk:
                break
            seen += chunk
    return seen
