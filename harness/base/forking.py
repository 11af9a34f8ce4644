"""Worker processes forked from this one: what they copy, and when they end.

The report forks its chart drawers, so that they
inherit what this process has imported and read (copy on write) instead of loading it again. A
fork copies no thread but copies every lock as it is: a worker starts by taking streams of its
own (`own_streams`); the run's lock (harness.base.locking) and the live display
(harness.cli.progress) see to theirs at each fork.
"""

from __future__ import annotations

import gc
import io
import multiprocessing
import os
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager


@contextmanager
def forked_pool(workers: int) -> Iterator[ProcessPoolExecutor]:
    """A pool of `workers` processes forked from this one, which end when it is gone
    (`exit_with_parent`).

    The heap is frozen (`gc.freeze`) while the pool lives. A forked worker's garbage collector
    would otherwise visit every object it inherited, and a visit writes to the object's header,
    so the page that holds it is copied into the worker: each worker's memory then grew with the
    parent's heap (the report of the 130-file batch of benchmarks/peak_memory.py: every
    process's PSS summed, 212 MB against 164 MB for 13 files; frozen, 172 MB). Objects made
    meanwhile are collected as usual, the frozen ones again once the pool is done.
    """
    fork = multiprocessing.get_context("fork")
    with (
        frozen_heap(),
        ProcessPoolExecutor(workers, mp_context=fork, initializer=start_worker, initargs=(os.getpid(),)) as pool,
    ):
        yield pool


def start_worker(parent: int) -> None:
    """A forked pool worker's first acts: streams of its own, and an end with its parent."""
    own_streams()
    exit_with_parent(parent)


def own_streams() -> None:
    """A forked worker's `sys.stdout` and `sys.stderr`: new objects over the same files.

    A stream's buffer has a lock, taken for each write, and a fork copies it as it is: held, if
    a thread of the parent was writing at that instant (a progress display redrawing, a line
    stuck in a full pipe), and no thread of the worker would ever release it, so the worker's
    first message (a warning, a traceback) would hang it for ever. The parent's display may also
    have replaced `sys.stderr` with its own proxy, which has a lock of its own. The inherited
    objects stay referenced as `sys.__stdout__` and `sys.__stderr__` (closing one would flush it)."""
    for name in ("stdout", "stderr"):
        inherited = getattr(sys, f"__{name}__")
        try:
            fd = inherited.fileno()
        except (AttributeError, OSError, ValueError):  # none, or not a file: nothing to copy
            continue
        raw = io.FileIO(fd, "w", closefd=False)
        unbuffered = isinstance(inherited.buffer, io.RawIOBase)  # python -u, PYTHONUNBUFFERED
        setattr(
            sys,
            name,
            io.TextIOWrapper(
                raw if unbuffered else io.BufferedWriter(raw),
                encoding=inherited.encoding,
                errors=inherited.errors,
                line_buffering=inherited.line_buffering,
                write_through=inherited.write_through,
            ),
        )


@contextmanager
def frozen_heap() -> Iterator[None]:
    """This process's objects out of the collector's reach while the block runs (see
    `forked_pool`): processes forked meanwhile do not copy the heap by collecting it."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def exit_with_parent(parent: int) -> None:
    """A worker's first act: end when its parent is gone.

    A parent killed outright (SIGKILL, the OOM killer) cannot shut its pool down, and a forked
    worker holds the pool's queue open from both ends, so it would wait for work for ever, and
    keep the parent's stdout and stderr open: whoever waits for the command's output hangs."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.2)
        os._exit(1)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()
