"""An exclusive lock on one folder the harness writes in, held for the whole of a command: a
results directory for a run or a resume, an `import --out` folder for an import.

The lock is `fcntl.flock` on `<results>/.lock`: the kernel releases it when the holder's
process ends, however it ends (a SIGKILL included), so a lock is never left stale. The file is
opened as the harness opens every file of its own (`harness.base.files.open_lock`): a link, a
FIFO or a file with another name in its place is refused and left as it is, never truncated. The file
stays in place (removing a locked file would let a third process lock a new one); while
the lock is held it names its holder, and a refused process quotes it. It holds the pid, the
host, what the holder is doing and since when: never the command line, which may hold a
credential.

A process refused by what it finds once it holds the folder (a `--resume` whose chronology changed,
run from another folder) leaves the folder as it found it: a lock file it created for the attempt
is removed as it lets go (an InputError ends the block). A process that locks checks, once it
holds the lock, that the file is still the one at the path (not one removed meanwhile), and
locks again if not.

A process forked from a holder (a report's chart drawer) neither holds nor releases the lock:
the first lock taken registers `close_inherited_locks` to run in every child forked afterwards
(`os.register_at_fork`, once per process), and a `RunLock` left open in the child lets go of
nothing when it exits there.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import stat
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType

from harness.base import json_bounded
from harness.base.errors import InputError, RunInUse
from harness.base.files import open_lock

LOCK_FILE = ".lock"


# Locks this process holds, by (lock file, thread): the thread that holds a directory may lock
# it again (the CLI holds it across a batch and its report; the batch locks it too), any
# other thread or process is refused.
_HELD: dict[tuple[str, int], int] = {}
_HELD_LOCK = threading.Lock()
_FDS: set[int] = set()  # the file descriptors of the locks this process holds
_AT_FORK = False  # whether `close_inherited_locks` is registered to run in forked children


class RunLock:
    """`with RunLock(directory, "run"):` holds `directory` or raises RunInUse naming the holder.

    Re-entrant within one thread, like `threading.RLock`. `advice` ends the refusal (what to do
    while another process holds the folder); `tidy` removes a lock file this process created as
    it lets go, whatever the outcome (a folder that is not a run's, e.g. an import's `--out`,
    keeps no trace of the lock)."""

    def __init__(self, directory: Path, purpose: str, advice: str | None = None, tidy: bool = False) -> None:
        self.path = directory / LOCK_FILE
        self.purpose = purpose
        self.advice = advice or "wait for it to end (or stop it, then `harness run --resume` it)"
        self.tidy = tidy
        self._fd: int | None = None
        self._created = False  # this process made the lock file: a refusal removes it again
        self._pid = os.getpid()  # the holder: a copy of this object in a forked child releases nothing
        self._key = (str(self.path.resolve()), threading.get_ident())

    def __enter__(self) -> RunLock:
        with _HELD_LOCK:
            if _HELD.get(self._key):
                _HELD[self._key] += 1
                return self
        self._acquire()
        with _HELD_LOCK:
            _HELD[self._key] = 1
        return self

    def _acquire(self) -> None:
        while True:
            fd = self._open()
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = named_holder(fd)
                os.close(fd)
                raise RunInUse(f"{self.path.parent} is in use by {holder}; {self.advice}") from None
            if _still_at(self.path, fd):
                break
            os.close(fd)  # removed by a refused process between our open and our lock: lock the new one
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(holder_record(self.purpose)).encode(), 0)
        self._fd, self._pid = fd, os.getpid()
        with _HELD_LOCK:
            _FDS.add(fd)
            _close_in_forked_children()

    def _open(self) -> int:
        """The lock file's descriptor, never through a link nor a FIFO (`UnsafeFile`, exit 2);
        `_created` says whether this call made the file."""
        existed = os.path.lexists(self.path)
        try:
            fd = open_lock(self.path)
        except OSError as exc:
            raise InputError(
                f"{self.path.parent}: cannot lock it ({exc.strerror}); give a results folder you can write to"
            ) from None
        self._created = not existed
        return fd

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if os.getpid() != self._pid:  # the parent's lock, unwound in a forked child: the parent still holds it
            return
        with _HELD_LOCK:
            _HELD[self._key] -= 1
            if _HELD[self._key]:
                return
            del _HELD[self._key]
        if self._fd is not None:
            with _HELD_LOCK:
                _FDS.discard(self._fd)
            os.ftruncate(self._fd, 0)  # a reader finding it empty knows nobody holds it
            if self._created and (self.tidy or isinstance(exc, InputError)):  # leave the folder as it was found
                with contextlib.suppress(OSError):
                    os.unlink(self.path)
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


def _still_at(path: Path, fd: int) -> bool:
    """Whether the locked file is still the one at `path` (a refused process may remove the file
    it made; a process that had opened it meanwhile then holds a lock nobody else can see)."""
    try:
        found = os.stat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (found.st_dev, found.st_ino) == (held.st_dev, held.st_ino)


def _close_in_forked_children() -> None:
    """Register `close_inherited_locks` to run in every child forked from now on, once per
    process (`os.register_at_fork` cannot unregister, and runs each registration)."""
    global _AT_FORK
    if not _AT_FORK:
        os.register_at_fork(after_in_child=close_inherited_locks)
        _AT_FORK = True


def close_inherited_locks() -> None:
    """In a process just forked from a lock holder (run by `os.register_at_fork`, see the module's
    docstring): close its copies of the held locks' descriptors, without unlocking. The lock
    belongs to the open file, which the copies share: left open, a worker outliving a killed
    parent would keep the directory locked, and `--resume` would be refused until it ended; and
    the child forgets it held them, so it re-enters none of them (it is refused like any other
    process). Idempotent: a second call finds nothing to close."""
    global _HELD_LOCK
    # The child has one thread: the parent's other threads, one of which may have held the
    # lock at the fork, were not copied; a fresh lock cannot be found held.
    _HELD_LOCK = threading.Lock()
    fds = list(_FDS)
    _FDS.clear()
    _HELD.clear()
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


def holder_record(purpose: str) -> dict[str, object]:
    """What the lock file says about this process while it holds the lock."""
    since = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"pid": os.getpid(), "host": socket.gethostname(), "purpose": purpose, "since": since}


def named_holder(fd: int, patience: float = 1.0) -> str:
    """The holder of the lock on `fd`, as `describe` gives it. A holder writes its name just
    after taking the lock, so an empty record is read again for up to `patience` seconds."""
    deadline = time.monotonic() + patience
    while True:
        found = describe(os.pread(fd, 4096, 0))
        if found != UNNAMED or time.monotonic() >= deadline:
            return found
        time.sleep(0.02)


UNNAMED = "another harness process"


def describe(raw: bytes) -> str:
    """The holder as a person reads it, e.g. `process 123 (harness run since 2026-12-03T08:00:00Z)`."""
    try:
        holder = json_bounded.loads(raw.decode("utf-8"), what="the lock")
        where = "" if holder["host"] == socket.gethostname() else f" on {holder['host']}"
        return f"process {holder['pid']}{where} (harness {holder['purpose']} since {holder['since']})"
    except (ValueError, KeyError, TypeError):
        return UNNAMED  # it is between taking the lock and naming itself


def lock_holder(directory: Path) -> str | None:
    """Who holds the lock on `directory` now, as the lock names it; None when nobody does
    (`report`, `compare` and `--resume` tell a run still being written from a stopped one). The lock file is opened read-only, never created, never followed through a link;
    a shared lock taken and let go at once tells whether another process holds it."""
    try:
        fd = os.open(directory / LOCK_FILE, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None  # no lock file: no process has held the folder
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return named_holder(fd)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        with contextlib.suppress(OSError):
            os.close(fd)
