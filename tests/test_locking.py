"""A run folder's lock names its holder, even when asked in the instant before the holder has
written its name (a named holder refused to another thread: tests/test_rundir.py)."""

from __future__ import annotations

import fcntl
import json
import os
import threading
from pathlib import Path

import pytest

from harness.errors import RunInUse
from harness.locking import LOCK_FILE, RunLock, holder_record


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


def test_a_holder_that_never_names_itself_is_another_harness_process(tmp_path: Path) -> None:
    fd = hold_unnamed(tmp_path)
    try:
        with pytest.raises(RunInUse, match="in use by another harness process; wait for it to end"):
            RunLock(tmp_path, "resume").__enter__()
    finally:
        os.close(fd)
