"""A run folder's lock names its holder, even when asked in the instant before the holder has
written its name (a named holder refused to another thread: tests/results/test_rundir.py)."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import threading
from pathlib import Path

import pytest

from harness.base.errors import InputError, RunInUse
from harness.results.locking import LOCK_FILE, RunLock, holder_record


def hold_unnamed(directory: Path) -> int:
    """A lock taken the way RunLock takes it, stopped before it writes its holder's name."""
    fd = os.open(directory / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.ftruncate(fd, 0)
    return fd


def test_a_holder_that_names_itself_a_moment_later_is_named(tmp_path: Path) -> None:
    fd = hold_unnamed(tmp_path)
    naming = threading.Timer(0.2, lambda: os.pwrite(fd, json.dumps(holder_record("run")).encode(), 0))
    naming.start()
    try:
        with pytest.raises(RunInUse, match=f"in use by process {os.getpid()} .*harness run since"):
            RunLock(tmp_path, "resume").__enter__()
    finally:
        naming.join()
        os.close(fd)


@pytest.mark.slow  # waits a second for the holder to name itself
def test_a_holder_that_never_names_itself_is_another_harness_process(tmp_path: Path) -> None:
    fd = hold_unnamed(tmp_path)
    try:
        with pytest.raises(RunInUse, match="in use by another harness process; wait for it to end"):
            RunLock(tmp_path, "resume").__enter__()
    finally:
        os.close(fd)


HELD: list[RunLock] = []  # the parent's lock, as a forked worker inherits it


def in_a_forked_worker(directory: str) -> tuple[list[str], str, str]:
    """In a worker of `forked_pool`: the lock files it has open, what locking the directory
    again gives, and what the lock file says after it lets go of its copy of the parent's lock."""
    opened = []
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(FileNotFoundError):  # the listing's own descriptor, closed since
            opened.append(os.readlink(f"/proc/self/fd/{fd}"))
    try:
        with RunLock(Path(directory), "worker"):
            again = "held"
    except RunInUse:
        again = "refused"
    HELD[0].__exit__(None, None, None)  # the parent's `with` unwinding in the worker: not its lock to release
    return [path for path in opened if path.endswith(LOCK_FILE)], again, (Path(directory) / LOCK_FILE).read_text()


@pytest.mark.slow  # a forked worker
@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="reads /proc")
def test_a_forked_worker_neither_holds_nor_releases_the_parents_lock(tmp_path: Path) -> None:
    from harness.base.forking import forked_pool

    with RunLock(tmp_path, "run") as lock, forked_pool(1) as pool:
        HELD[:] = [lock]
        try:
            opened, again, named = pool.submit(in_a_forked_worker, str(tmp_path)).result(timeout=60)
        finally:
            HELD.clear()
        assert opened == []  # its copy was closed at the fork: a worker outliving us keeps nothing locked
        assert again == "refused"  # the parent's lock is not the worker's to re-enter
        assert f'"pid": {os.getpid()}' in named  # it did not unlock or empty it
        refused = []
        other = threading.Thread(target=lambda: refused.extend(attempt(tmp_path)))
        other.start()
        other.join()
        assert refused == ["refused"]  # still held here


def attempt(directory: Path) -> list[str]:
    try:
        with RunLock(directory, "check"):
            return ["held"]
    except RunInUse:
        return ["refused"]


def test_a_lock_file_planted_as_a_symlink_is_refused_and_its_target_left_whole(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / LOCK_FILE).symlink_to(victim)
    with pytest.raises(InputError, match=r"\.lock: a symbolic link, where the harness keeps a file of its own"):
        RunLock(tmp_path / "run", "resume").__enter__()
    assert victim.read_text() == "precious\n"


def test_a_lock_file_that_is_a_fifo_is_refused_with_one_line(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / LOCK_FILE)
    with pytest.raises(InputError, match=r"\.lock: a named pipe \(FIFO\), where the harness keeps a file") as refused:
        RunLock(tmp_path, "resume").__enter__()
    assert refused.value.exit_code == 2 and "\n" not in str(refused.value)
