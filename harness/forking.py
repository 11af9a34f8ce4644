"""Worker processes forked from this one: what they copy, and when they end.

The report forks its chart drawers, and on large runs its section composers, and `--processes`
its batch's workers (harness.processes), so that they inherit what this process has imported
and read (copy on write) instead of loading it again.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
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
        ProcessPoolExecutor(workers, mp_context=fork, initializer=exit_with_parent, initargs=(os.getpid(),)) as pool,
    ):
        yield pool


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
