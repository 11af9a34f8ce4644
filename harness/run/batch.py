"""A comparison batch: every chronology × policy × model × repetition, its manifest, and resume.

Conversations run concurrently up to `concurrency` (turns within one stay sequential). Each
finished conversation is recorded in `conversations.jsonl`; `resume` keeps those, drops the
partial records of the others, and runs them again. When the batch ends, every record file is
rewritten grouped by conversation in plan order, so a resumed or concurrent run leaves the
same files as a sequential one (latencies and timestamps aside).
"""

from __future__ import annotations

import functools
import sys
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from harness.base.errors import InputError, RunComplete
from harness.base.identity import RunKey
from harness.base.locking import RunLock
from harness.chronology.ledger import Ledger
from harness.models import Model, capabilities_of
from harness.models.cache import ResponseCache
from harness.models.options import ModelFactory, Models
from harness.models.reference import ReferenceModel
from harness.models.servers import conversation_scope
from harness.policy import PolicyRegistry
from harness.policy.tokens import TokenCounter
from harness.results.integrity import check, file_digests
from harness.results.order import rewrite_records
from harness.results.reader import each_record, read_manifest
from harness.results.rows import DIGESTS_FROM, Manifest
from harness.results.writer import ResultsWriter, write_json_atomic
from harness.run.conversation import Conversation, Planned
from harness.run.dispatch import Dispatch
from harness.run.events import BatchEvents, CallEvents, Finished, planned_calls
from harness.run.executor import Executor, RunOne, ThreadExecutor
from harness.run.interrupts import Interrupts, Notify
from harness.run.loaded import Chronologies
from harness.run.manifest import RunManifest, mark, new_manifest, spec_of, utc_now
from harness.run.replay import run_conversation
from harness.run.resume import CHANGED, kept_conversations
from harness.run.spec import RunSpec

CACHE_FILE = "responses.sqlite"  # the response cache, in --cache-dir
THREADS = ThreadExecutor()  # how a batch runs its conversations unless told otherwise (harness.run.executor)


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
    """Each model's settings as it runs (`describe()`; a model without it, a plug-in's: its name)
    and the capabilities it states, by its name on the command line."""
    first = models[plan.models[0]]
    named: dict[str, Model] = {name: models[name].answer for name in plan.models}
    named |= {plan.options.roles[role]: model for role, model in first.roles.items()}
    if first.judge is not None and plan.options.judge:
        named[plan.options.judge] = first.judge
    described = {name: (m.describe() if hasattr(m, "describe") else {"name": m.name}) for name, m in named.items()}
    return {name: described[name] | capabilities_of(m).as_record() for name, m in named.items()}


@dataclass(frozen=True)
class Runtime:
    """What a batch runs with besides its spec: the installed policies, what opens a model by
    its name, who watches (the progress display), where notices go (Ctrl-C), what runs its
    conversations (threads, `harness.run.executor`), and what loads their chronologies as they
    start (`harness.run.loaded`: a few at a time)."""

    registry: PolicyRegistry
    factory: ModelFactory = reference_factory
    events: BatchEvents | None = None
    notify: Notify = to_stderr
    executor: Executor = THREADS
    chronologies: Callable[[], Chronologies] = Chronologies


@dataclass
class Batch:
    """One batch being run into its results folder: the conversations not in `done` are to run."""

    spec: RunSpec
    directory: Path
    runtime: Runtime
    record: RunManifest  # the manifest as last set
    counter: TokenCounter
    done: set[RunKey] = field(default_factory=set)


def run_batch(spec: RunSpec, directory: Path, run_id: str, runtime: Runtime) -> Manifest:
    """Run every conversation of `spec` into a new `directory`; return the final manifest.

    The directory is locked for the whole run (RunInUse when another process holds it); one
    that already holds a run is refused: resume it instead.
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
    """Run the conversations not done on the runtime's executor, in the order `start_order`
    gives; rewrite the records in plan order; complete the manifest."""
    spec, runtime = batch.spec, batch.runtime
    conversations = spec.conversations()
    todo = [c for c in conversations if c.key not in batch.done]
    with ExitStack() as stack:
        models = open_models(spec, lambda name, stack: interrupts.guard(runtime.factory(name, stack)), stack)
        batch.record.set(model_settings=model_settings(spec, models))  # as run: effective timeouts, caps, weights
        prepare(spec, batch.directory, batch.record.manifest)
        work = BatchWork(batch, models, runtime.chronologies(), interrupts, todo)
        runtime.executor.run(start_order(spec, todo), spec.concurrency, work)
    if interrupts.requested.is_set():  # the first Ctrl-C: the calls in flight have finished
        raise KeyboardInterrupt
    if spec.concurrency > 1 or batch.done:  # a sequential fresh run already wrote them in plan order
        rewrite_records(batch.directory, {c.key: i for i, c in enumerate(conversations)})
    return complete(batch.directory, batch.record, len(conversations))


def prepare(spec: RunSpec, directory: Path, data: Manifest) -> None:
    """Before the first conversation: a response cache that cannot open stops the run here; the
    record files are made, and the manifest written."""
    with ExitStack() as stack:
        open_cache(spec, stack)
    with ResultsWriter(directory) as sink:
        sink.manifest(data)


def start_order(spec: RunSpec, todo: Sequence[Conversation]) -> Dispatch:
    """The order `todo` starts in: most expected calls first (`harness.run.dispatch`); one at a
    time, plan order (the records are then written in it as they go)."""
    if spec.concurrency == 1:
        return Dispatch.in_order(todo)
    judging = spec.options.judge is not None
    return Dispatch.of(todo, [planned_calls(c, spec.live, judging) for c in todo])


def complete(directory: Path, data: RunManifest, total: int) -> Manifest:
    """The manifest of a run whose conversations have all run: complete, with their statuses
    counted and the digests of its files as they end (from format version 3)."""
    statuses = Counter(r["status"] for r in each_record(directory / "conversations.jsonl"))
    counts = {"total": total, **dict(sorted(statuses.items()))}
    files = file_digests(directory) if data.manifest.format_version >= DIGESTS_FROM else None
    final = data.set(status="complete", ended_at=utc_now(), error=None, conversations=counts, files=files)
    write_json_atomic(directory / "manifest.json", final.as_record())
    return final


@dataclass
class BatchWork:
    """What a batch gives its executor (`harness.run.executor.Work`): how to run one of `todo`, and whom to tell."""

    batch: Batch
    models: Mapping[str, Models]
    chronologies: Chronologies  # loaded as their conversations start
    interrupts: Interrupts
    todo: Sequence[Conversation]
    _ledgers: dict[int, Ledger] = field(default_factory=dict)  # of chronologies the spec holds loaded

    @property
    def progress(self) -> BatchEvents | None:
        return self.batch.runtime.events

    def open(self, stack: ExitStack) -> RunOne:
        """A results writer and the response cache, closed with `stack`, and the function that runs a conversation with them."""
        sink = stack.enter_context(ResultsWriter(self.batch.directory))
        return functools.partial(self.run_one, sink, open_cache(self.batch.spec, stack))

    def run_one(
        self, sink: ResultsWriter, cache: ResponseCache | None, conversation: Conversation, events: CallEvents
    ) -> Finished:
        self.interrupts.check()  # after the first Ctrl-C a waiting conversation does not start
        with self.loaded(conversation) as (running, ledger), conversation_scope() as scope:
            # conversation_scope: with several --base-url, the server it runs on
            finished = run_conversation(
                running,
                self.batch.runtime.registry,
                self.models[conversation.model],
                self.batch.counter,
                sink,
                ledger,
                self.batch.spec.live,
                cache,
                events,
            )
        record = {**conversation.key._asdict(), "status": finished.status, **vars(finished.stats)}
        sink.finished({**record, "server": scope.server})
        return finished

    @contextmanager
    def loaded(self, conversation: Conversation) -> Iterator[tuple[Conversation, Ledger]]:
        """While it runs: the conversation with its chronology loaded (a file changed since the
        run was planned is refused: `ChronologyChanged`), and the chronology's ledger."""
        chronology = conversation.chronology
        if isinstance(chronology, Planned):
            with self.chronologies.using(chronology) as found:
                yield replace(conversation, chronology=found.chronology), found.ledger
            return
        ledger = self._ledgers.get(id(chronology))
        if ledger is None:
            ledger = self._ledgers.setdefault(id(chronology), Ledger(chronology))
        yield conversation, ledger

    def begin(self) -> None:
        if self.progress:
            self.progress.begin(self.batch.spec, self.todo, len(self.batch.done), self.models)

    def ended(self, position: int, conversation: Conversation, finished: Finished) -> None:
        if self.progress:
            done = len(self.batch.done)
            self.progress.conversation_ended(done + position + 1, done + len(self.todo), conversation, finished)


def open_cache(spec: RunSpec, stack: ExitStack) -> ResponseCache | None:
    """The response cache of `--cache-dir`, closed with `stack`; None with `--no-cache`."""
    cache = ResponseCache(spec.cache_dir / CACHE_FILE, spec.independent_samples) if spec.cache_dir else None
    if cache:
        stack.callback(cache.close)
    return cache


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
            refuse_whole(directory, recorded)
        spec = spec_of(recorded, runtime.registry)
        order = {c.key: i for i, c in enumerate(spec.conversations())}
        done = kept_conversations(directory, recorded, order, runtime.notify)
        rewrite_records(directory, {k: order[k] for k in done})  # drop partial conversations
        # running until it ends again, one way or another; its files change, so their digests go
        resumed = RunManifest(
            replace(
                recorded,
                resumed_at=[*recorded.resumed_at, utc_now()],
                status="running",
                ended_at=None,
                error=None,
                files=None,
            )
        )
        return execute(Batch(spec, directory, runtime, resumed, TokenCounter(spec.encoding), done))


def refuse_whole(directory: Path, recorded: Manifest) -> None:
    """A complete run is resumed only to repair it: RunComplete when its records are as written
    (or cannot be checked: format version 2). A merged folder is repaired by merging again."""
    verdict = check(directory, recorded)
    if not verdict.mismatches:
        raise RunComplete(f"--resume {directory}: this run is already complete")
    if recorded.shard and recorded.shard.get("index") is None:
        raise InputError(
            f"--resume {directory}: {verdict.summary()}: {CHANGED}; this folder is a merge of shards: "
            "resume the shard concerned, then merge them again into a new folder"
        )
