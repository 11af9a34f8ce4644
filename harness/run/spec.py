"""What a run compares, built once: from the command line's options or a batch file (both give
`harness.run.options.RunOptions`, which `build` checks into a `RunSpec`), or from a run's
manifest (`harness.run.manifest.spec_of`), which records it.

`RunSpec` is what runs: the
chronologies planned (`harness.run.conversation.Planned`: each loaded once to check it, then
only its name, file, sha256 and sizes kept; its turns are loaded again when its conversations
run, `harness.run.loaded`), the policies parsed, the models named and how they are reached, the
repetitions, seed and mode, whether policies share sampled answers, and how this machine runs
it (concurrency, cache, shard). Batch,
resume and merge read the spec or its record in the manifest, never the options again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.base.errors import InputError
from harness.chronology import Chronology
from harness.chronology.loading import summaries_from
from harness.models.catalog import capabilities_named, check_keys, check_model_name, check_model_names, model_roles
from harness.models.local import LocalOptions
from harness.models.options import ModelOptions
from harness.models.ratelimit import RateLimits
from harness.models.sampling import Sampling, parse_max_tokens
from harness.policy import PolicyRegistry, PolicySpec
from harness.policy.tokens import DEFAULT_ENCODING
from harness.results.plan import MAX_CONVERSATIONS, check_plan_size, plan_order, plan_size
from harness.run.conversation import Conversation, Planned, user_turns
from harness.run.options import RunOptions
from harness.run.shards import Shard, parse_shard, slice_of


@dataclass(frozen=True)
class RunSpec:
    """What a batch will run; validated before anything is written."""

    chronologies: Sequence[Chronology | Planned]  # planned by `build`; loaded ones run as they are
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
    # --independent-samples: each policy's calls are cached (and shared in flight) apart from the
    # other policies', so no two policies share a sampled answer (harness.models.cache)
    independent_samples: bool = False

    def conversations(self) -> list[Conversation]:
        """In a stable order: chronology, model, repetition, then policies as declared (of a
        shard: its slice of them, in the same order)."""
        every = [
            Conversation(*found)
            for found in plan_order(self.chronologies, self.models, self.repetitions_of, self.policies)
        ]
        if self.shard is None:
            return every
        turns = {id(c): user_turns(c) for c in self.chronologies}
        return slice_of(every, [turns[id(c.chronology)] for c in every], self.shard)

    def repetitions_of(self, model: str) -> int:
        """Repetitions run under `model`: one when every model its calls use is deterministic,
        since more would repeat identical results and only multiply n."""
        o = self.options
        deterministic = all(capabilities_named(m).deterministic for m in {model, *o.roles.values()})
        return 1 if deterministic and o.judge is None else self.repetitions

    def size(self) -> int:
        """The conversations of the whole batch (every shard), counted without building them."""
        return plan_size(len(self.chronologies), len(self.policies), [self.repetitions_of(m) for m in self.models])

    def check_size(self, what: str) -> None:
        """Raise InputError, before the plan is built, when it is past `MAX_CONVERSATIONS`; `what`
        names what asked for it (an option, a manifest)."""
        runs = " + ".join(f"{self.repetitions_of(m):,} repetitions of {m}" for m in self.models)
        runs = f"({runs})" if len(self.models) > 1 else runs
        plan = f"{len(self.chronologies):,} chronologies × {len(self.policies):,} policies × {runs}"
        check_plan_size(self.size(), f"{what} ({plan})")

    def run_once(self) -> list[str]:
        """The models whose requested repetitions collapse to one (deterministic)."""
        return [m for m in self.models if self.repetitions_of(m) < self.repetitions]


def build(options: RunOptions, registry: PolicyRegistry, batch: Mapping[str, Any] | None = None) -> RunSpec:
    """Check `options` into the spec of a run (`batch`: the batch file's record, if they came
    from one); every problem is an InputError naming the option and what to give instead."""
    o = options
    if o.repetitions > MAX_CONVERSATIONS:  # before any chronology is read
        raise InputError(
            f"--repetitions {o.repetitions}: a run holds at most {MAX_CONVERSATIONS:,} conversations; "
            "ask for fewer repetitions"
        )
    shard = parse_shard(o.shard) if o.shard is not None else None
    chronologies = summaries_from(o.paths, Planned.of)  # one loaded at a time, none kept
    policies = registry.parse_all(o.policies) or registry.default_specs()
    names = o.models or ("reference",)
    check_model_names(names)
    roles = model_roles(o.roles, {"summarizer": o.summarizer_model, "writer": o.writer_model})
    registry.check_roles(roles, policies)  # a misspelt role would map nothing
    registry.check_offline([*names, *roles.values()], policies)  # a provider's API is reached offline only
    if o.judge:
        check_model_name(o.judge, "--judge")
    if o.judge and not capabilities_named(o.judge).can_judge:
        raise InputError(f"--judge {o.judge}: the reference model cannot judge; give openai:NAME or local")
    reached = ModelOptions(
        o.base_url[0] if o.base_url else None,
        o.api_key_env,
        o.timeout,
        o.max_retries,
        roles,
        o.judge,
        Sampling(o.temperature, o.top_p, parse_max_tokens(o.max_tokens)),
        LocalOptions(o.local_model, o.local_context, o.local_threads, o.local_port),
        base_urls=o.base_url,
        max_response_bytes=o.max_response_bytes,
        # a batch split over N machines shares one limit: each shard gets its share
        rate_limits=RateLimits(o.max_rpm, o.max_tpm, shard.count if shard else 1),
    )
    check_keys(names, reached)
    spec = RunSpec(
        chronologies,
        policies,
        names,
        o.repetitions,
        o.concurrency,
        o.seed,
        o.live,
        options=reached,
        cache_dir=o.cache_dir if o.cache else None,
        shard=shard,
        batch=batch,
        independent_samples=o.independent_samples,
    )
    spec.check_size(f"--repetitions {o.repetitions}" if o.repetitions > 1 else "the plan")
    return spec
