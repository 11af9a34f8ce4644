"""What a batch runs: chronologies × policies × models × repetitions, with the run's options."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.chronology import Chronology
from harness.models.options import ModelOptions
from harness.policy import PolicySpec
from harness.policy.tokens import DEFAULT_ENCODING
from harness.run.conversation import Conversation
from harness.run.shards import Shard, plan_order, slice_of


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
    options: ModelOptions = field(default_factory=ModelOptions)
    cache_dir: Path | None = None  # None: no response cache
    shard: Shard | None = None  # --shard K/N: run only that slice of the batch (harness.run.shards)
    batch: Mapping[str, Any] | None = None  # --batch FILE: its path, sha256 and content, for the manifest

    def conversations(self) -> list[Conversation]:
        """In a stable order: chronology, model, repetition, then policies as declared (of a
        shard: its slice of them, in the same order)."""
        every = [
            Conversation(*found)
            for found in plan_order(self.chronologies, self.models, self.repetitions_of, self.policies)
        ]
        if self.shard is None:
            return every
        return slice_of(every, [len(c.chronology.user_turns) for c in every], self.shard)

    def repetitions_of(self, model: str) -> int:
        """Repetitions run under `model`: one when every model its calls use is deterministic,
        since more would repeat identical results and only multiply n."""
        o = self.options
        deterministic = {model, *o.roles.values()} <= DETERMINISTIC_MODELS
        return 1 if deterministic and o.judge is None else self.repetitions

    def run_once(self) -> list[str]:
        """The models whose requested repetitions collapse to one (deterministic)."""
        return [m for m in self.models if self.repetitions_of(m) < self.repetitions]


# Models whose every answer is a function of the request alone: repeating them adds nothing.
DETERMINISTIC_MODELS = frozenset({"reference"})
