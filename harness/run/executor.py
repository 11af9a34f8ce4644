"""How a batch runs its conversations at once: the `Executor` seam.

The batch (`harness.run.batch.finish`) decides what runs and in what order: a `Dispatch` hands
out its conversations one at a time, as slots come free (`harness.run.dispatch`). An executor
runs them. It opens what the conversations write with where they run (`Work.open`: a results
writer, the response cache), tells the batch when it is ready (`Work.begin`: the progress's
first counts), starts the conversation the dispatch gives whenever one of its `concurrency`
slots is free, tells the dispatch and the progress of each call (`Dispatch.events`), and tells
the batch of each finished conversation in the order they started (`Work.ended`).

Whatever the executor, the rest is the batch's: the records are rewritten in plan order at the
end, so the files do not depend on it. What every executor keeps:

- **Ctrl-C** (`harness.run.interrupts`): after the first, a conversation that needed another
  call raises `Stopped` and is not told; the executor waits for the calls in flight. The second
  (`KeyboardInterrupt` in the main thread) abandons them: the executor returns at once.
- **A fault** in one conversation starts no new one; the others end, then the error is raised.

The core's executor runs the conversations on threads of this process (`ThreadExecutor`): they
wait on their model calls, not on the interpreter. At 200 and 500 ms per call, at concurrency 16
and 64, a batch on threads takes 1.00-1.02x the time of a bare HTTP client making the same calls
(benchmarks/batch_latency.py), so more interpreters buy nothing there (forked workers took
1.00-1.01x the threads' time).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, suppress
from typing import TYPE_CHECKING, Protocol

from harness.run.conversation import Conversation
from harness.run.dispatch import Dispatch
from harness.run.interrupts import Stopped

if TYPE_CHECKING:
    from harness.run.events import CallEvents, Finished

# Runs one conversation with what `Work.open` opened: (conversation, its call events) -> how it ended.
RunOne = Callable[[Conversation, "CallEvents"], "Finished"]


class Work(Protocol):
    """The batch's side of the seam: how to run its conversations, and whom to tell."""

    progress: CallEvents | None  # told of each call's start and end, after the dispatch

    def open(self, stack: ExitStack) -> RunOne:
        """What conversations write with in the process that runs them (a results writer, the
        response cache), closed with `stack`; and the function that runs one with them."""

    def begin(self) -> None:
        """The executor is ready; no conversation has started yet."""

    def ended(self, position: int, conversation: Conversation, finished: Finished) -> None:
        """The conversation started `position`-th (from 0) has finished; told in the order they started."""


class Executor(Protocol):
    """Runs a batch's conversations (see the module's docstring)."""

    def run(self, dispatch: Dispatch, concurrency: int, work: Work) -> None:
        """Run every conversation of `dispatch.todo`, at most `concurrency` at once, each free slot
        starting the one `dispatch` takes; tell `work` of each finished one in the order they started."""


class ThreadExecutor:
    """The conversations on `concurrency` threads of this process, sharing one results writer and one cache."""

    def run(self, dispatch: Dispatch, concurrency: int, work: Work) -> None:
        with ExitStack() as stack:
            run_one = work.open(stack)
            work.begin()
            todo = dispatch.todo

            def next_one() -> tuple[int, Finished]:
                index = dispatch.take()
                assert index is not None  # one take per conversation
                return index, run_one(todo[index], dispatch.events(index, work.progress))

            pool = ThreadPoolExecutor(max_workers=concurrency)
            try:
                futures = [pool.submit(next_one) for _ in todo]
                for position, future in enumerate(futures):
                    with suppress(Stopped):
                        index, finished = future.result()
                        work.ended(position, todo[index], finished)
            except KeyboardInterrupt:  # the second Ctrl-C: abandon the calls in flight
                pool.shutdown(wait=False, cancel_futures=True)
                raise
            except BaseException:  # a fault: start nothing new, let the others end before the files close
                pool.shutdown(cancel_futures=True)
                raise
            pool.shutdown()
