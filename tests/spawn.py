"""`spawn_harness(*args)`: the `harness` command in a process of its own, as a user runs it.

For the tests that need a real process: to kill it (SIGKILL, Ctrl-C), to run two at once, or to
start from a fresh interpreter. Everything else runs the command in process (click's CliRunner),
which is much faster. The process:

- runs this checkout's code: `python -m harness` with the interpreter that runs the tests;
- works in `cwd` (by default the test's working directory);
- sees the test's environment, which `clean_environ` (conftest.py) keeps free of a real API key,
  with `OPENAI_API_KEY` set to `key` when one is given;
- drops its stdout (`--quiet` prints only paths there) and pipes its stderr, for the test to read;
- is waited for with a timeout (`Harness.outcome`, `Harness.finished`), and is killed when the
  test ends if it is still running (`kill_left_running`, an autouse fixture in conftest.py).

    process = spawn_harness("run", "--quiet", "--run-id", "r", cwd=root)
    ...                                           # e.g. process.send_signal(signal.SIGKILL)
    code, stderr = process.outcome()
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TIMEOUT = 120.0  # seconds a spawned command may take to end before the test fails


class Harness(subprocess.Popen[str]):
    """A spawned `harness` command; its stderr is a text pipe."""

    def outcome(self, timeout: float = TIMEOUT) -> tuple[int, str]:
        """Its exit status and what it said on stderr (that was not read yet), once it has ended.
        Still running after `timeout` seconds: it is killed and the test fails."""
        try:
            _, stderr = self.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            _, stderr = self.communicate()
            command = " ".join(map(str, self.args[2:]))
            raise AssertionError(f"{command}: still running after {timeout:g} s; it said:\n{stderr[-3000:]}") from None
        return self.returncode, stderr

    def finished(self, timeout: float = TIMEOUT) -> str:
        """What it said on stderr, once it has ended with status 0 (any other fails the test)."""
        code, stderr = self.outcome(timeout)
        assert code == 0, f"exit status {code}: {stderr[-3000:]}"
        return stderr


_spawned: list[Harness] = []


def spawn_harness(*args: str, cwd: Path | str | None = None, key: str | None = None) -> Harness:
    """`harness ARGS` started in a process of its own (see the module's docstring)."""
    env = dict(os.environ)
    if key is not None:
        env["OPENAI_API_KEY"] = key
    process = Harness(
        [sys.executable, "-m", "harness", *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        encoding="utf-8",
        errors="replace",
    )
    _spawned.append(process)
    return process


def kill_left_running() -> None:
    """Kill every spawned command still running and reap it; close the pipes of all of them."""
    while _spawned:
        process = _spawned.pop()
        if process.poll() is None:
            process.kill()
        process.wait()
        if process.stderr is not None:
            process.stderr.close()
