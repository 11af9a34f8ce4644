"""A batch's conversations run in forked worker processes (`harness run --processes N`): the
`ProcessExecutor`, behind the run's `Executor` seam (`harness.run.executor`); the batch does not
import this module, the command line chooses it.

Conversations run on threads, and their Python work (building requests, parsing answers,
replaying, checking, writing records) shares one interpreter: at `--concurrency 64` against a
fast server that, not the server, bounds the batch (benchmarks/batch_latency.py). With
`--processes N` the batch's `concurrency` threads are spread over N processes forked from this
one once everything is imported and opened, so each has an interpreter (and a core) of its own.

What stays as it is with threads alone:

- **Order and files**: every process appends whole records to the same results files (one
  `write` each, on files opened for appending, so records of different processes never
  interleave within a line); the batch rewrites them in plan order at the end, as it does after
  any concurrent run, so the files do not depend on N. The conversations are taken from one shared
  list, whatever process is free first, most expected calls first: this process orders what
  is not taken yet as it learns from the calls' starts (`harness.run.dispatch`).
- **Progress**: each call's start and end and each finished conversation are sent to this
  process, which tells the progress display as the threads would (conversations in the order
  they were started). Of an ended call only what the display reads is sent
  (`harness.cli.progress.EndedCall`: whose call it was, its retries, error and cache), not its record.
- **Ctrl-C**: workers ignore SIGINT; the first Ctrl-C reaches this process, which tells them
  to start no new call (the calls in flight finish and are recorded); the second kills them.
  The notice counts the workers' calls in flight from a counter they keep in shared memory,
  so it is right even while this process is busy (asking a server its slots at the start).
- **A fault** in one conversation starts no new conversation anywhere; the others end, then
  the error is raised here, as with threads, with the worker's traceback chained to it as its
  cause (`RemoteTraceback`, as `concurrent.futures` does): Python's report of it names the
  worker's file and line.
- **A kill**: a worker whose parent is gone exits within 0.2 s (`harness.base.forking.exit_with_parent`), and never holds
  the run's lock (`harness.results.locking` closes its copy at the fork), so `--resume` finds the directory free.
- **The response cache**: each worker opens the cache file itself (SQLite locks it between
  processes); identical calls in flight at once are shared within a process, not across them.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import signal
import threading
import traceback
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import TYPE_CHECKING, Any, Protocol

from harness.base.forking import frozen_heap, start_worker
from harness.run.dispatch import Dispatch
from harness.run.events import EndedCall
from harness.run.executor import ThreadExecutor, Work
from harness.run.interrupts import Stopped

if TYPE_CHECKING:
    from harness.results.rows import CallRecord
    from harness.run.conversation import Conversation
    from harness.run.events import Finished

ORPHAN_POLL = 0.2  # seconds between the parent's checks for a Ctrl-C while it waits for its workers


def available() -> bool:
    """Whether this platform can fork worker processes (Linux and other POSIX systems)."""
    return hasattr(os, "fork") and "fork" in multiprocessing.get_all_start_methods()


def spread(concurrency: int, processes: int) -> list[int]:
    """Threads of each process: `concurrency` split as evenly as it goes (no process without one)."""
    used = max(1, min(processes, concurrency))
    return [concurrency // used + (k < concurrency % used) for k in range(used)]


class RemoteTraceback(Exception):
    """Where a worker's error happened: its traceback there, as text, chained to the error as it
    is raised here (pickling an exception drops its traceback)."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text

    def __str__(self) -> str:
        return f'\n"""\n{self.text}"""'


class WorkerEvents(Protocol):
    """What this process is told of its workers' calls: the progress display (`harness.cli.progress.Watcher`),
    which reads an `EndedCall` where the threads give it the whole record."""

    def call_started(self, kind: str) -> None: ...

    def call_ended(self, kind: str, record: EndedCall | None) -> None: ...


@dataclass
class Ended:
    """How one conversation of the list ended in a worker: finished, or stopped by a Ctrl-C."""

    finished: Finished | None


class _Events:
    """The `CallEvents` of one conversation in a worker: each call's start and end, counted in
    `flying` (the calls in flight, shared with the parent, which its Ctrl-C notice reads) and
    sent to the parent (which learns from the starts which conversation to start next,
    `harness.run.dispatch`); what the progress display reads of the call's record (`EndedCall`:
    whose call, its retries, error and cache) only when there is a display."""

    def __init__(self, send: Callable[[tuple[Any, ...]], None], records: bool, index: int, flying: Any) -> None:
        self._send, self._records, self._index, self._flying = send, records, index, flying

    def call_started(self, kind: str) -> None:
        with self._flying.get_lock():
            self._flying.value += 1
        self._send(("started", kind, self._index))

    def call_ended(self, kind: str, record: CallRecord | None) -> None:
        with self._flying.get_lock():
            self._flying.value -= 1
        self._send(("ended", kind, EndedCall.of(record) if self._records and record is not None else None))


class ProcessExecutor:
    """The conversations on `concurrency` threads spread over `processes` forked workers; on
    threads alone (`ThreadExecutor`) when there is nothing to spread (one slot, one conversation)."""

    def __init__(self, processes: int) -> None:
        self.processes = processes

    def run(self, dispatch: Dispatch, concurrency: int, work: Work) -> None:
        if self.processes > 1 and concurrency > 1 and len(dispatch.todo) > 1:
            run_in_processes(dispatch, concurrency, self.processes, work)
        else:
            ThreadExecutor().run(dispatch, concurrency, work)


def run_in_processes(dispatch: Dispatch, concurrency: int, processes: int, work: Work) -> None:
    """Run `dispatch.todo` on `concurrency` threads spread over `processes` forked workers, in
    the order `dispatch` gives as it learns from the calls; each worker opens its own writer and
    cache (`work.open`); `work.begin` is called once they are forked. `work.ended` is told of
    each finished conversation in the order they started; a conversation stopped by a Ctrl-C is
    not told. A worker's error is raised here once every worker has ended."""
    interrupts = work.interrupts
    events: WorkerEvents | None = work.progress  # type: ignore[assignment]  # the display, which reads an EndedCall
    todo = dispatch.todo
    context = multiprocessing.get_context("fork")
    # The positions in `todo` in the order of start, shared by every worker: what is not taken
    # yet is ordered again here as `dispatch` learns; `taken` is the next of them to start.
    order = context.Array("i", dispatch.order, lock=False)
    taken = context.Value("i", 0)  # its lock guards `order` too
    # The workers' calls in flight, which they count themselves: a Ctrl-C's notice reads it at
    # once, whether or not this process has read their messages yet (it may be asking a server
    # its slots for the progress display, `begin`).
    flying = context.Value("i", 0)
    stop = context.Event()  # the first Ctrl-C: start no new call
    workers: dict[Connection, Any] = {}
    with frozen_heap():  # the workers run long: their collectors must not copy this heap
        for threads in spread(concurrency, processes):
            receive, send = context.Pipe(duplex=False)
            process = context.Process(
                target=_worker,
                args=(
                    todo,
                    threads,
                    order,
                    taken,
                    flying,
                    stop,
                    send,
                    work,
                    os.getpid(),
                    events is not None,
                ),
                daemon=True,
            )
            process.start()
            send.close()
            workers[receive] = process
    ended: dict[int, Ended] = {}
    reported = 0
    failure: BaseException | None = None
    interrupts.count_also(lambda: flying.value)
    try:
        work.begin()
        while workers:
            if interrupts.requested.is_set():
                stop.set()
            for connection in wait(list(workers), timeout=ORPHAN_POLL):
                try:
                    message = connection.recv()
                except EOFError:  # the worker has ended: all its conversations, or killed
                    process = workers.pop(connection)
                    process.join()
                    if process.exitcode != 0 and failure is None:
                        failure = RuntimeError(
                            f"a worker process ended with exit code {process.exitcode} before finishing its "
                            "conversations (killed, or out of memory?); `harness run --resume` redoes them"
                        )
                else:
                    failure = _handle(message, events, dispatch, ended, failure)
                if failure is not None:
                    with taken.get_lock():
                        taken.value = len(todo)  # a fault: start nothing new anywhere
                elif dispatch.stale:
                    with taken.get_lock():
                        order[taken.value :] = dispatch.ranked(order[taken.value :])
            while reported < len(todo) and order[reported] in ended:  # started before what follows it: not moved since
                finished = ended.pop(order[reported]).finished
                if finished is not None:
                    work.ended(reported, todo[order[reported]], finished)
                reported += 1
    except BaseException:  # the second Ctrl-C, or a fault here: the workers' calls are abandoned
        for process in workers.values():
            process.kill()
        for process in workers.values():
            process.join()
        raise
    finally:
        interrupts.count_also(None)
    if failure is not None:
        raise failure


def _handle(
    message: tuple[Any, ...],
    events: WorkerEvents | None,
    dispatch: Dispatch,
    ended: dict[int, Ended],
    failure: BaseException | None,
) -> BaseException | None:
    """Act on one worker message; return the batch's failure (the first one) if any."""
    kind = message[0]
    if kind == "started":
        dispatch.started(message[2], message[1])
        if events is not None:
            events.call_started(message[1])
    elif kind == "ended":
        if events is not None:
            events.call_ended(message[1], message[2])
    elif kind == "finished":
        ended[message[1]] = Ended(message[2])
    elif kind == "stopped":
        ended[message[1]] = Ended(None)
    elif kind == "failed":
        if message[1] is not None:  # None: the worker could not open its files
            ended[message[1]] = Ended(None)
        if failure is None:
            failure = message[2]
            failure.__cause__ = RemoteTraceback(message[3])
    return failure


def _worker(
    todo: Sequence[Conversation],
    threads: int,
    order: Any,
    taken: Any,
    flying: Any,
    stop: Any,
    connection: Connection,
    work: Work,
    parent: int,
    records: bool,
) -> None:
    """A worker process: `threads` threads take conversations from the shared list until none is left."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    # Streams of its own (a thread of the parent, its live display, may have held theirs at the
    # fork), and an end with a parent killed outright: nothing would read the results.
    start_worker(parent)
    lock = threading.Lock()

    def send(message: tuple[Any, ...]) -> None:
        with lock:
            connection.send(message)

    def stopping() -> None:
        stop.wait()
        work.interrupts.requested.set()  # no new call starts here (the calls in flight finish)

    threading.Thread(target=stopping, daemon=True).start()
    own = ExitStack()  # the worker's writer and cache: an SQLite connection must not cross a fork
    try:
        run_one = work.open(own)
    except BaseException as exc:  # its files or cache cannot be opened: the batch fails with the reason
        send(("failed", None, *_portable(exc)))
        connection.close()
        return

    def take() -> int | None:
        with taken.get_lock():
            position = taken.value
            if position >= len(todo):
                return None
            taken.value = position + 1
            return order[position]

    def loop() -> None:
        while (index := take()) is not None:
            try:
                send(("finished", index, run_one(todo[index], _Events(send, records, index, flying))))
            except Stopped:
                send(("stopped", index))
            except BaseException as exc:  # a fault: reported to the parent, which stops the batch
                send(("failed", index, *_portable(exc)))

    pool = [threading.Thread(target=loop) for _ in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    own.close()
    connection.close()


def _portable(exc: BaseException) -> tuple[BaseException, str]:
    """`exc` if it can be sent to the parent as it is, else a RuntimeError that names it; and
    its traceback here, as text (causes and contexts included)."""
    where = "".join(traceback.format_exception(exc))
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:
        return RuntimeError(f"{type(exc).__name__}: {exc}"), where
    return exc, where
