"""Progress a person can watch while a batch runs, fed by its events.

With a real model one conversation can take minutes, so a line per finished conversation is
not enough. The batch tells a `Watcher` when it begins (what it will run), when each model call
starts and ends (`harness.run.calls` reports both), and when each conversation ends. The watcher
keeps the counts (`Tally`) and shows them:

- on a terminal (stderr is a TTY): a live display drawn with `rich`, redrawn from the counts
  several times a second (so each call shows at once, and elapsed time moves during a long call): conversations and calls
  done of the planned total, calls in flight, retries, errors, cached, elapsed and an ETA,
  with each finished conversation's line printed above it;
- elsewhere (CI, a log file): plain lines, one per finished conversation as before, and a
  summary line with the same counts (`... 2/7 conversations · 31/58 calls · ...`) when they
  change, at most every `SUMMARY_EVERY` seconds;
- with `--quiet`: nothing (no watcher at all).

Every line said is shown as `harness.base.text.visible` shows it: a chronology's name is its
file's name, which may hold escape sequences; they are printed as `\\x1b`, never obeyed.

**Planned calls.** What a conversation will call is known in part before it runs: its answers
(every user turn with `--live`, else the turns without a scripted reply) and, with `--judge`,
one judge call per prohibition in force at each probe. A policy's own calls (summarizer,
writer, a plug-in's) are not: they join the total as they start. A conversation that ends
early (a policy stop, an error) takes its unmade calls out of the total, so at the end calls
done equals the total. The ETA extrapolates the time per planned call made so far; a policy's
own calls make it an estimate, and it says `~`.

**Single-slot servers.** When the model's server is known to answer one request at a time
(`harness.models.slots`: `--model local`, or llama.cpp's `/props` when `--concurrency` is above 1),
the display says that `--concurrency` gains nothing there.
"""

from __future__ import annotations

import os
import sys
import threading
import time
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

from harness.base.identity import RunKey
from harness.base.text import visible
from harness.models.slots import PropsRedirected, known_slots, server_slots, servers_of
from harness.report.markdown import plural
from harness.results.rows import CallRecord
from harness.run.conversation import Conversation
from harness.run.events import PLANNED_KINDS, CallStats, Finished, planned_calls

if TYPE_CHECKING:
    from harness.models.options import Models
    from harness.run.spec import RunSpec

SUMMARY_EVERY = 30.0  # seconds between two plain summary lines
REDRAWS = 8  # live display redraws per second


@dataclass(frozen=True)
class Snapshot:
    """The counts at one moment; `eta` is None until a planned call has ended."""

    conversations_done: int
    conversations_total: int
    calls_done: int
    calls_total: int
    in_flight: int
    retries: int
    errors: int
    cached: int
    elapsed: float
    eta: float | None

    def summary(self) -> str:
        """One line: `2/7 conversations · 31/58 calls · 1 in flight · ... · ETA ~3m10s`."""
        eta = f"ETA ~{duration(self.eta)}" if self.eta is not None else "ETA unknown yet"
        return " · ".join(
            [
                f"{self.conversations_done}/{self.conversations_total} conversations",
                f"{self.calls_done}/{self.calls_total} calls",
                f"{self.in_flight} in flight",
                plural(self.retries, "retry", "retries"),
                plural(self.errors, "error"),
                f"{self.cached} cached",
                f"{duration(self.elapsed)} elapsed",
                eta,
            ]
        )


def duration(seconds: float) -> str:
    """`45s`, `3m05s`, `1h02m`."""
    s = round(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


@dataclass
class Tally:
    """The counts of a batch, fed by its events from several threads."""

    clock: Callable[[], float] = time.monotonic
    conversations_total: int = 0
    conversations_done: int = 0
    stats: CallStats = field(default_factory=CallStats)  # calls ended, retries, errors, cached
    in_flight: int = 0
    planned: int = 0  # answer and judge calls still expected, plus those made
    planned_done: int = 0
    extra_started: int = 0  # a policy's own calls, counted as they start
    begun: bool = False  # False while the models open (a local server starting)
    _started: float = 0.0
    _begun: float = 0.0
    _expected: dict[RunKey, int] = field(default_factory=dict)  # per conversation: planned calls
    _made: dict[RunKey, int] = field(default_factory=dict)  # per conversation: planned-kind calls ended
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self._started = self._begun = self.clock()  # elapsed counts from here, server start included

    def begin(self, todo: Sequence[Conversation], done: int, total: int, live: bool, judging: bool) -> None:
        """The conversations about to run (`done` of `total` are already finished: a resume)."""
        expected = {c.key: planned_calls(c, live, judging) for c in todo}
        with self._lock:
            self._begun = self.clock()  # the ETA's rate counts from here: calls only
            self.begun = True
            self.conversations_done, self.conversations_total = done, total
            self._expected = expected
            self.planned = sum(expected.values())

    def call_started(self, kind: str) -> None:
        with self._lock:
            self.in_flight += 1
            self.extra_started += kind not in PLANNED_KINDS

    def call_ended(self, kind: str, record: CallRecord | None) -> None:
        with self._lock:
            self.in_flight -= 1
            if record is None:
                self.extra_started -= kind not in PLANNED_KINDS
                return
            self.stats.add(record)
            if kind in PLANNED_KINDS:
                self.planned_done += 1
                key = RunKey(record.chronology, record.policy, record.model, record.repetition)
                self._made[key] = self._made.get(key, 0) + 1

    def conversation_ended(self, conversation: Conversation) -> None:
        """Count it; its planned calls it did not make (it ended early) leave the total."""
        key = conversation.key
        with self._lock:
            self.conversations_done += 1
            self.planned -= self._expected.pop(key, 0) - self._made.pop(key, 0)

    def snapshot(self) -> Snapshot:
        with self._lock:
            now = self.clock()
            left = self.planned - self.planned_done
            eta = (now - self._begun) * left / self.planned_done if self.planned_done else None
            return Snapshot(
                self.conversations_done,
                self.conversations_total,
                self.stats.calls,
                self.planned + self.extra_started,
                self.in_flight,
                self.stats.retries,
                self.stats.errors,
                self.stats.cached,
                now - self._started,
                eta,
            )


def conversation_line(done: int, total: int, conversation: Conversation, finished: Finished) -> str:
    """`[3/7] memory-drift · summary · local · rep 1: complete (9 calls, 0 retries, 0 errors)`."""
    c, s = conversation, finished.stats
    return (
        f"[{done}/{total}] {c.chronology.name} · {c.policy.label} · {c.model} · rep {c.repetition}: "
        f"{finished.status} ({s.calls} calls, {s.retries} retries, {s.errors} errors"
        f"{f', {s.cached} cached' if s.cached else ''})"
    )


def single_slot_note(plan: RunSpec, models: Mapping[str, Models]) -> str | None:
    """What to say when a model's servers answer fewer or more requests at once than
    `--concurrency` sends: one slot (one request at a time), or several servers (several
    `--base-url`) whose slots together differ from it; None when nothing is known to.

    Servers the harness started say so themselves; others are asked only when it matters
    (`--concurrency` above 1, or several servers)."""
    seen: dict[int, Any] = {}
    for group in models.values():
        for model in (group.answer, *group.roles.values(), group.judge):
            if model is not None:
                seen.setdefault(id(model), model)
    c = plan.concurrency
    notes = []
    for name, model in sorted(((getattr(m, "name", "?"), m) for m in seen.values()), key=lambda pair: pair[0]):
        servers = len(servers_of(model))
        try:
            slots = server_slots(model) if c > 1 or servers else known_slots(model)
        except PropsRedirected as exc:
            notes.append(f"the server of {name}: {exc}")
            continue
        if slots == 1:
            gain = (
                f"--concurrency {c} gains nothing there (requests queue)"
                if c > 1
                else "--concurrency gains nothing there"
            )
            notes.append(f"the server of {name} has 1 slot (one request at a time): {gain}")
        elif servers and slots is not None and slots != c:
            effect = (
                f"beyond {slots} requests queue"
                if c > slots
                else (f"{slots - c} slots stay idle" if slots - c > 1 else "1 slot stays idle")
            )
            notes.append(
                f"the {servers} servers of {name} answer {slots} requests at once: at --concurrency {c} {effect}"
            )
    return "; ".join(dict.fromkeys(notes)) or None


class Watcher(ABC):
    """Counts a batch's events and shows them; a subclass decides how."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.tally = Tally(clock)
        self.note: str | None = None  # the single-slot note, once known

    def begin(self, plan: RunSpec, todo: Sequence[Conversation], done: int, models: Mapping[str, Models]) -> None:
        """The batch is about to run `todo` (after `done` finished conversations of a resume)."""
        note = single_slot_note(plan, models)  # names models, as the user or a batch file gave them
        self.note = None if note is None else visible(note)
        total = done + len(todo)
        self.tally.begin(todo, done, total, plan.live, plan.options.judge is not None)
        if self.note:
            self.say(f"note: {self.note}")
        self.update()

    def call_started(self, kind: str) -> None:
        self.tally.call_started(kind)
        self.update()

    def call_ended(self, kind: str, record: CallRecord | None) -> None:
        self.tally.call_ended(kind, record)
        self.update()

    def conversation_ended(self, done: int, total: int, conversation: Conversation, finished: Finished) -> None:
        self.tally.conversation_ended(conversation)
        self.say(conversation_line(done, total, conversation, finished))
        self.update()

    @abstractmethod
    def say(self, line: str) -> None:
        """Print a line that stays (a finished conversation, a note), its control characters
        shown as escapes (`visible`)."""

    @abstractmethod
    def update(self) -> None:
        """The counts changed."""

    def __enter__(self) -> Watcher:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


class PlainProgress(Watcher):
    """Plain lines for logs: each finished conversation, and a summary at most every `every` seconds."""

    def __init__(
        self, stream: IO[str], every: float | None = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        super().__init__(clock)
        self.stream, self.clock = stream, clock
        self.every = SUMMARY_EVERY if every is None else every
        self._last = clock()
        self._lock = threading.Lock()

    def say(self, line: str) -> None:
        with self._lock:
            print(visible(line), file=self.stream, flush=True)

    def update(self) -> None:
        now = self.clock()
        with self._lock:
            due = now - self._last >= self.every
            if due:
                self._last = now
        if due:
            self.say(f"... {self.tally.snapshot().summary()}")


class LiveProgress(Watcher):
    """A live display on a terminal, drawn by `rich` (imported only here, only then).

    It is redrawn `REDRAWS` times a second by a thread of its own, which holds `drawing` while it
    writes; so does `say`. A fork waits for the redraw in progress and none starts until it is
    done (`held_across_forks`): a process forked meanwhile (a report's pool, `harness.base.forking`)
    would otherwise copy the terminal stream's lock, and the console's, held by a thread
    it does not have, and hang at its first message. (Lines other threads print through the
    redirected stderr are not held; a worker writes through streams of its own anyway,
    `harness.base.forking.own_streams`.)"""

    def __init__(self, console: Any = None, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(clock)
        from rich.console import Console

        self.console = console or Console(stderr=True)
        self.drawing = threading.RLock()  # RLock: a Ctrl-C notice may come while this thread says a line
        self._live: Any = None
        self._stop = threading.Event()
        self._redraws: threading.Thread | None = None

    def __enter__(self) -> LiveProgress:
        from rich.live import Live

        self._live = Live(
            console=self.console,
            get_renderable=self.render,
            auto_refresh=False,  # redrawn by `_redraw`, which a fork can hold
            redirect_stdout=False,
            redirect_stderr=True,  # other stderr lines (warnings, Ctrl-C notices) go above the display
        )
        with self.drawing:
            self._live.start()
        self._stop.clear()
        self._redraws = threading.Thread(target=self._redraw, name="progress-redraws", daemon=True)
        self._redraws.start()
        held_across_forks(self)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            _SHOWN.discard(self)
            self._stop.set()
            if self._redraws is not None:
                self._redraws.join()
            with self.drawing:
                self._live.stop()
            self._live = None

    def _redraw(self) -> None:
        """`REDRAWS` times a second (which also moves elapsed time during a long call)."""
        while not self._stop.wait(1 / REDRAWS):
            with self.drawing:
                if not self._stop.is_set():
                    self._live.refresh()

    def say(self, line: str) -> None:
        with self.drawing:
            self.console.print(visible(line), markup=False, highlight=False, soft_wrap=True)

    def update(self) -> None:
        """Nothing to do: the display redraws itself from the counts `REDRAWS` times a second, so each
        call shows within a fraction of a second without a redraw per call (the reference model
        makes thousands of calls a second)."""

    def render(self) -> Any:
        from rich.console import Group
        from rich.progress_bar import ProgressBar
        from rich.table import Table
        from rich.text import Text

        s = self.tally.snapshot()
        if not self.tally.begun:
            return Text(f"opening the models (a local model's server starts here) · {duration(s.elapsed)} elapsed")
        row = Table.grid(padding=(0, 1))
        row.add_row(ProgressBar(total=max(s.calls_total, 1), completed=s.calls_done, width=24), Text(s.summary()))
        return Group(row, Text(f"note: {self.note}", style="yellow")) if self.note else row


# The live displays of this process, held across every fork (`held_across_forks`).
_SHOWN: weakref.WeakSet[LiveProgress] = weakref.WeakSet()
_HELD: list[LiveProgress] = []  # those held by the fork in progress
_AT_FORK = False  # whether the hooks are registered (once per process: they cannot be removed)


def held_across_forks(display: LiveProgress) -> None:
    """Hold `display`'s drawing across every fork of this process while it is shown (registers
    the `os.register_at_fork` hooks at the first display, once: importing this module does not)."""
    global _AT_FORK
    _SHOWN.add(display)
    if not _AT_FORK:
        os.register_at_fork(before=_hold_drawing, after_in_parent=_release_drawing, after_in_child=_release_drawing)
        _AT_FORK = True


def _hold_drawing() -> None:
    """Before a fork: wait for each display's redraw in progress; start none until it is done."""
    for display in list(_SHOWN):
        display.drawing.acquire()
        _HELD.append(display)


def _release_drawing() -> None:
    """After a fork, in both processes: the displays draw again (in the child, which has no
    redraw thread, its copy is free for nothing but a line it would say)."""
    while _HELD:
        _HELD.pop().drawing.release()


@contextmanager
def watching(quiet: bool, stream: IO[str] | None = None) -> Iterator[Watcher | None]:
    """The watcher for a run: none with `--quiet`, a live display on a terminal, else plain lines."""
    if quiet:
        yield None
        return
    out = stream or sys.stderr
    watcher: Watcher = LiveProgress() if out.isatty() else PlainProgress(out)
    with watcher:
        yield watcher
