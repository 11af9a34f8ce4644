"""A comparison batch: every chronology × policy × model × repetition, its manifest, and resume.

Conversations run concurrently up to `concurrency` (turns within one stay sequential). Each
finished conversation is recorded in `conversations.jsonl`; `resume` keeps those, drops the
partial records of the others, and runs them again. When the batch ends, every record file is
rewritten grouped by conversation in plan order, so a resumed or concurrent run leaves the
same files as a sequential one (latencies and timestamps aside).
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, suppress
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from harness.base.errors import InputError, RunComplete
from harness.chronology.ledger import Ledger
from harness.models import Model
from harness.models.cache import ResponseCache
from harness.models.options import ModelFactory, Models
from harness.models.reference import ReferenceModel
from harness.models.servers import conversation_scope
from harness.policy import PolicyRegistry
from harness.policy.tokens import TokenCounter
from harness.results.locking import RunLock
from harness.results.order import rewrite_records
from harness.results.reader import identity_key, read_manifest, read_records
from harness.results.rows import Manifest
from harness.results.writer import ResultsWriter, write_json_atomic
from harness.run.conversation import Conversation
from harness.run.dispatch import Dispatch
from harness.run.events import BatchEvents, CallEvents, Finished, planned_calls
from harness.run.interrupts import Interrupts, Notify, Stopped
from harness.run.manifest import RunManifest, mark, new_manifest, spec_of, utc_now
from harness.run.processes import RunOne, run_in_processes
from harness.run.replay import run_conversation
from harness.run.spec import RunSpec

CACHE_FILE = "responses.sqlite"  # the response cache, in --cache-dir
Key = tuple[str, str, str, int]


def to_stderr(text: str) -> None:
    """The default for notices (Ctrl-C) when the batch is run from Python rather than the CLI."""
    print(text, file=sys.stderr, flush=True)


def reference_factory(name: str, stack: ExitStack) -> Model:
    """The models available without an extra: `reference`."""
    if name == "reference":
        return ReferenceModel()
    raise InputError(f"--model {name}: unknown model; available: reference")


def open_models(plan: RunSpec, factory: ModelFactory, stack: ExitStack) -> dict[str, Models]:
    """The models of each answering model name, opened once and closed with `stack`."""
    opened: dict[str, Model] = {}

    def get(name: str) -> Model:
        if name not in opened:
            opened[name] = factory(name, stack)
        return opened[name]

    options = plan.options
    judge = get(options.judge) if options.judge else None
    return {
        name: Models(get(name), {role: get(model) for role, model in options.roles.items()}, judge)
        for name in plan.models
    }


def model_settings(plan: RunSpec, models: Mapping[str, Models]) -> dict[str, Any]:
    """Each model's settings as it runs (`describe()`), by its name on the command line; a model
    without `describe` (the reference): its name only."""
    first = models[plan.models[0]]
    named: dict[str, Model] = {name: models[name].answer for name in plan.models}
    named |= {plan.options.roles[role]: model for role, model in first.roles.items()}
    if first.judge is not None and plan.options.judge:
        named[plan.options.judge] = first.judge
    return {name: (m.describe() if hasattr(m, "describe") else {"name": m.name}) for name, m in named.items()}


@dataclass(frozen=True)
class Runtime:
    """What a batch runs with besides its spec: the installed policies, what opens a model by
    its name, who watches (the progress display), where notices go (Ctrl-C), and how many
    processes run its conversations."""

    registry: PolicyRegistry
    factory: ModelFactory = reference_factory
    events: BatchEvents | None = None
    notify: Notify = to_stderr
    processes: int = 1


@dataclass
class Batch:
    """One batch being run into its results folder: the conversations not in `done` are to run."""

    spec: RunSpec
    directory: Path
    runtime: Runtime
    record: RunManifest  # the manifest as last set
    counter: TokenCounter
    done: set[Key] = field(default_factory=set)


def run_batch(spec: RunSpec, directory: Path, run_id: str, runtime: Runtime) -> Manifest:
    """Run every conversation of `spec` into a new `directory`; return the final manifest.

    The directory is locked for the whole run (RunInUse when another process holds it); one
    that already holds a run is refused: resume it instead. With `runtime.processes` above 1
    (and `concurrency` above 1) the conversations run in that many forked processes
    (`harness.run.processes`); the results are the same.
    """
    counter = TokenCounter(spec.encoding)
    batch = Batch(spec, directory, runtime, RunManifest(new_manifest(spec, run_id, counter)), counter)
    directory.mkdir(parents=True, exist_ok=True)
    with RunLock(directory, "run"):
        if (directory / "manifest.json").exists():
            raise InputError(f"{directory} already holds a run; resume it, or give a new directory")
        return execute(batch)


def execute(batch: Batch) -> Manifest:
    """Run the batch's conversations not done yet, then finish the results files.

    A fault once the manifest exists leaves it saying so (`failed`, with the error, or
    `interrupted`), never `running`; a process killed outright leaves `running`. Ctrl-C
    while conversations run: see `harness.run.interrupts`.
    """
    try:
        with Interrupts(batch.runtime.notify) as interrupts:
            return finish(batch, interrupts)
    except KeyboardInterrupt:
        mark(batch.directory, batch.record, "interrupted", None)
        raise
    except Exception as exc:
        mark(batch.directory, batch.record, "failed", f"{type(exc).__name__}: {exc}")
        raise


def finish(batch: Batch, interrupts: Interrupts) -> Manifest:
    """Run the conversations not done (on `processes` processes: `harness.run.processes`);
    rewrite the records in plan order; complete the manifest."""
    plan, directory, data, done = batch.spec, batch.directory, batch.record, batch.done
    registry, factory, progress, processes = (
        batch.runtime.registry,
        batch.runtime.factory,
        batch.runtime.events,
        batch.runtime.processes,
    )
    counter = batch.counter
    ledgers = {c.name: Ledger(c) for c in plan.chronologies}
    conversations = plan.conversations()
    todo = [c for c in conversations if key_of(c) not in done]
    with ExitStack() as stack:
        models = open_models(plan, lambda name, stack: interrupts.guard(factory(name, stack)), stack)
        data.set(model_settings=model_settings(plan, models))  # as run: effective timeouts, caps, weights
        cache = open_cache(plan, stack)  # here, so that a cache that cannot open stops the run before it starts
        sink = stack.enter_context(ResultsWriter(directory))
        sink.manifest(data.manifest)

        def one(
            conversation: Conversation, sink: ResultsWriter, cache: ResponseCache | None, events: CallEvents | None
        ) -> Finished:
            interrupts.check()  # after the first Ctrl-C a waiting conversation does not start
            with conversation_scope() as scope:  # with several --base-url: the server it runs on
                finished = run_conversation(
                    conversation,
                    registry,
                    models[conversation.model],
                    counter,
                    sink,
                    ledgers[conversation.chronology.name],
                    plan.live,
                    cache,
                    events,
                )
            record = {**conversation.identity(), "status": finished.status, **vars(finished.stats)}
            sink.finished({**record, "server": scope.server})
            return finished

        def ended(index: int, conversation: Conversation, finished: Finished) -> None:
            if progress:
                progress.conversation_ended(len(done) + index + 1, len(conversations), conversation, finished)

        def begin() -> None:
            if progress:
                progress.begin(plan, todo, len(done), models)

        judging = plan.options.judge is not None
        planned = [planned_calls(c, plan.live, ledgers[c.chronology.name] if judging else None) for c in todo]
        dispatch = Dispatch.of(todo, planned) if plan.concurrency > 1 else Dispatch.in_order(todo)
        if processes > 1 and plan.concurrency > 1 and len(todo) > 1:

            def setup() -> tuple[RunOne, Callable[[], None]]:
                """A worker's own results writer and response cache, opened after the fork."""
                own = ExitStack()
                writer = own.enter_context(ResultsWriter(directory))
                stored = open_cache(plan, own)
                return (lambda conversation, events: one(conversation, writer, stored, events)), own.close

            if cache:  # each worker opens its own: an SQLite connection must not cross a fork
                cache.close()
            # `begin` (the progress's first counts and notes) once the workers are forked; the
            # live display's refresh thread runs already, and a fork copies no thread.
            run_in_processes(dispatch, plan.concurrency, processes, setup, interrupts, progress, ended, begin)
        else:
            begin()
            run_in_threads(
                dispatch, plan.concurrency, lambda i: one(todo[i], sink, cache, dispatch.events(i, progress)), ended
            )
    if interrupts.requested.is_set():  # the first Ctrl-C: the calls in flight have finished
        raise KeyboardInterrupt
    if plan.concurrency > 1 or done:  # a sequential fresh run already wrote them in plan order
        rewrite_records(directory, {key_of(c): i for i, c in enumerate(conversations)})
    statuses = Counter(r["status"] for r in read_records(directory / "conversations.jsonl"))
    counts = {"total": len(conversations), **dict(sorted(statuses.items()))}
    final = data.set(status="complete", ended_at=utc_now(), error=None, conversations=counts)
    write_json_atomic(directory / "manifest.json", final.as_record())
    return final


def open_cache(plan: RunSpec, stack: ExitStack) -> ResponseCache | None:
    """The response cache of `--cache-dir`, closed with `stack`; None with `--no-cache`."""
    cache = ResponseCache(plan.cache_dir / CACHE_FILE) if plan.cache_dir else None
    if cache:
        stack.callback(cache.close)
    return cache


def run_in_threads(
    dispatch: Dispatch,
    concurrency: int,
    one: Callable[[int], Finished],
    ended: Callable[[int, Conversation, Finished], None],
) -> None:
    """Run `dispatch.todo` on `concurrency` threads, each free thread starting the conversation
    `dispatch` takes (`one(i)` runs the one at position `i`); `ended(n, ...)` is told of each
    finished conversation in the order they started (one stopped by a Ctrl-C is not told)."""
    todo = dispatch.todo

    def next_one() -> tuple[int, Finished]:
        index = dispatch.take()
        assert index is not None  # one take per conversation
        return index, one(index)

    pool = ThreadPoolExecutor(max_workers=concurrency)
    try:
        futures = [pool.submit(next_one) for _ in todo]
        for position, future in enumerate(futures):
            with suppress(Stopped):
                index, finished = future.result()
                ended(position, todo[index], finished)
    except KeyboardInterrupt:  # the second Ctrl-C: abandon the calls in flight
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    except BaseException:  # a fault: start nothing new, let the others end before the files close
        pool.shutdown(cancel_futures=True)
        raise
    pool.shutdown()


def key_of(conversation: Conversation) -> Key:
    return identity_key(conversation.identity())


def resume_batch(directory: Path, runtime: Runtime) -> Manifest:
    """Finish an interrupted run: keep finished conversations, redo the others. The run's
    models open with `runtime.factory`, made from the options its manifest records
    (`harness.run.manifest.options_of`).

    The directory is locked for the whole resume (RunInUse when another process holds it).
    A complete run raises RunComplete: there is nothing to redo.
    """
    if not (directory / "manifest.json").is_file():  # checked before locking: a run claiming it has no manifest yet
        read_manifest(directory)
    with RunLock(directory, "resume"):
        recorded = read_manifest(directory)
        if recorded.status == "complete":
            raise RunComplete(f"--resume {directory}: this run is already complete")
        spec = spec_of(recorded, runtime.registry)
        order = {key_of(c): i for i, c in enumerate(spec.conversations())}
        finished = {identity_key(r) for r in read_records(directory / "conversations.jsonl")}
        done = {k for k in finished if k in order}
        rewrite_records(directory, {k: order[k] for k in done})  # drop partial conversations
        # running until it ends again, one way or another
        resumed = RunManifest(
            replace(recorded, resumed_at=[*recorded.resumed_at, utc_now()], status="running", ended_at=None, error=None)
        )
        return execute(Batch(spec, directory, runtime, resumed, TokenCounter(spec.encoding), done))
