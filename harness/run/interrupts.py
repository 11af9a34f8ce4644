"""Ctrl-C in two steps, for a batch whose model calls may hang; SIGTERM and SIGHUP in one.

The first Ctrl-C starts no new model call and lets the calls in flight finish, so their
records (and cached responses) are kept; conversations that needed another call end there
and `--resume` redoes them. The second Ctrl-C cancels the calls in flight: the batch raises
`Cancelled` at once, without waiting for them (the CLI then exits without joining threads
that may be stuck in a socket read).

SIGTERM (`kill`, a scheduler ending a job) and SIGHUP (the terminal closed) end any command the
way the second Ctrl-C ends a batch (`terminations`, which the CLI holds for every command): they
raise `Terminated` in the main thread, so the stack unwinds as for an error (a batch's manifest
says `interrupted`, a report's temporary file is removed) and the process exits with status
128 + the signal's number (143, 129), as a process ended by that signal would.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType, TracebackType
from typing import Any

from harness.models import CallRequest, Completion, Model

Notify = Callable[[str], None]


class Stopped(BaseException):
    """A conversation ended at a call after the first Ctrl-C. A BaseException, like
    KeyboardInterrupt, so that no `except Exception` in a runner or policy swallows it."""


class Cancelled(KeyboardInterrupt):
    """The second Ctrl-C: calls still in flight are abandoned."""

    status = 130  # the exit status: 128 + SIGINT


class Terminated(Cancelled):
    """SIGTERM or SIGHUP: the process is asked to end; handled as the second Ctrl-C."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum
        self.status = 128 + signum


TERMINATING = (signal.SIGTERM, signal.SIGHUP)


def exit_status(exc: KeyboardInterrupt) -> int:
    """The exit status of a command ended by `exc`: 130 for Ctrl-C, 128 + N for signal N."""
    return exc.status if isinstance(exc, Cancelled) else Cancelled.status


@contextmanager
def terminations() -> Iterator[None]:
    """While the block runs, SIGTERM and SIGHUP raise `Terminated` in the main thread (elsewhere
    Python delivers no signal, and nothing changes). The first one only: a second, while the
    first unwinds, waits for that to end. A process forked meanwhile (a chart drawer) that gets
    one ends as it would without this handler."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    owner, received = os.getpid(), []

    def on_signal(signum: int, frame: FrameType | None) -> None:
        if os.getpid() != owner:  # a forked worker: the default action, as before the fork
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        if not received:
            received.append(signum)
            raise Terminated(signum)

    previous = {signum: signal.signal(signum, on_signal) for signum in TERMINATING}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def first_notice(in_flight: int) -> str:
    calls = "1 model call" if in_flight == 1 else f"{in_flight} model calls"
    return (
        f"\ninterrupted: finishing the {calls} in flight, then stopping (no new call starts; finished "
        "conversations are kept); press Ctrl-C again to cancel them and stop now"
    )


class Interrupts:
    """`with Interrupts(notify) as interrupts:` handles SIGINT while the batch runs (main thread
    only: elsewhere Python delivers no signal, and nothing changes)."""

    def __init__(self, notify: Notify) -> None:
        self.notify = notify
        self.requested = threading.Event()
        self._lock = threading.Lock()
        self._in_flight = 0
        self._previous: Any = None

    def __enter__(self) -> Interrupts:
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._on_signal)
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
            self._previous = None

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if self.requested.is_set():
            raise Cancelled()
        self.requested.set()
        # Read without the lock: a handler runs in the main thread between two of its steps, and
        # must not wait for a lock that thread may hold.
        self.notify(first_notice(self._in_flight))

    def check(self) -> None:
        """Raise Stopped once a stop was requested."""
        if self.requested.is_set():
            raise Stopped()

    @contextmanager
    def call(self) -> Iterator[None]:
        """One model call: refused after the first Ctrl-C, counted while in flight."""
        with self._lock:
            self.check()
            self._in_flight += 1
        try:
            yield
        finally:
            with self._lock:
                self._in_flight -= 1

    def guard(self, model: Model) -> Model:
        return Interruptible(model, self)


class Interruptible:
    """A model whose calls stop starting after the first Ctrl-C; everything else is the model's."""

    def __init__(self, model: Model, interrupts: Interrupts) -> None:
        self._model, self._interrupts = model, interrupts
        self.name = model.name

    def __getattr__(self, attribute: str) -> Any:  # cache_identity, close, ...: the wrapped model's
        return getattr(self._model, attribute)

    def complete(self, request: CallRequest) -> Completion:
        with self._interrupts.call():
            return self._model.complete(request)
