"""The live display and forked workers (the report's pools): a worker never starts with a lock
that a thread of the parent held at the fork, and the display goes on after it."""

from __future__ import annotations

import io
import multiprocessing
import os
import subprocess
import sys
import threading

import pytest
from rich.console import Console

from harness.cli.progress import LiveProgress
from tests.conftest import SHIPPED

pytestmark = [
    pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="needs fork"),
    pytest.mark.slow,  # forked workers
]


class Stalling(io.StringIO):
    """A terminal whose writes hold a lock while they last, as a stream's buffer does, and can be
    made to stall there (`go` cleared): a redraw caught in the middle of a write."""

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()
        self.inside = threading.Event()  # a write holds the lock
        self.go = threading.Event()
        self.go.set()

    def isatty(self) -> bool:
        return True

    def write(self, text: str) -> int:
        with self.lock:
            self.inside.set()
            self.go.wait()
            return super().write(text)


class Counting(LiveProgress):
    """The live display, counting its redraws."""

    def __init__(self, console: Console) -> None:
        super().__init__(console)
        self.redraws = threading.Semaphore(0)

    def render(self) -> object:
        self.redraws.release()
        return super().render()


def test_a_fork_waits_for_a_redraw_in_progress_and_the_display_goes_on_after_it() -> None:
    terminal = Stalling()
    with Counting(Console(file=terminal, force_terminal=True, width=120, color_system=None)) as display:
        terminal.go.clear()
        terminal.inside.clear()
        assert terminal.inside.wait(30)  # a redraw is writing, and holds the terminal's lock
        threading.Timer(1.0, terminal.go.set).start()  # it ends a second from now
        child = os.fork()
        if child == 0:  # the worker: the lock must be free here, or nothing would ever free it
            os._exit(0 if terminal.lock.acquire(timeout=10) else 1)
        _, status = os.waitpid(child, 0)
        assert os.waitstatus_to_exitcode(status) == 0, "the worker inherited the lock held by a redraw"
        while display.redraws.acquire(blocking=False):
            pass
        assert display.redraws.acquire(timeout=30)  # redraws went on after the fork


# The parent's stderr is a pipe nobody reads yet, and a thread of the parent is stuck writing to it
# (its buffer's lock held), as a live display's redraw can be at the moment a pool forks (sys.stderr
# is then rich's proxy, whose flush before the fork does not touch the real stream). Each task of
# the pool writes a line to stderr; the pipe is read once the workers are forked (a pool forks
# all its workers at its first task).
HELD_AT_THE_FORK = """
import os, sys, threading, time
from rich.console import Console
from rich.file_proxy import FileProxy
from harness.base.forking import forked_pool

read, write = os.pipe()
os.dup2(write, 2)
os.set_blocking(2, False)
try:
    while True:
        os.write(2, b"." * 4096)
except BlockingIOError:
    pass
os.set_blocking(2, True)
sys.stderr = FileProxy(Console(file=sys.__stderr__), sys.__stderr__)
holding = threading.Event()

def hold():
    holding.set()
    sys.__stderr__.write("parent " * 2000)  # blocks in the pipe with the buffer's lock held
    sys.__stderr__.flush()

threading.Thread(target=hold, daemon=True).start()
holding.wait()
time.sleep(0.5)  # well inside the write
said = []

def drain():
    while chunk := os.read(read, 65536):
        said.append(chunk)

def write_a_line(item):
    print(f"worker {os.getpid()} wrote", file=sys.stderr, flush=True)

with forked_pool(2) as pool:
    tasks = [pool.submit(write_a_line, item) for item in "ab"]
    threading.Thread(target=drain, daemon=True).start()
    for task in tasks:
        task.result()
time.sleep(0.5)
print(b"".join(said).decode().count(" wrote"))
"""


def test_a_worker_writes_to_stderr_though_a_thread_of_the_parent_held_its_lock_at_the_fork() -> None:
    try:
        ran = subprocess.run(
            [sys.executable, "-c", HELD_AT_THE_FORK],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=SHIPPED.parent,
            env={k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"},  # unbuffered: no lock to hold
        )
    except subprocess.TimeoutExpired:
        pytest.fail("a worker hung on the stderr lock it inherited held")
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.split() == ["2"]  # both tasks' lines reached the parent's stderr
