"""`harness run`'s settings as a user states them (`--policy last-turns:turns=5`, a batch file's
`policies:`), with their defaults, before any check: `harness.run.spec.build` checks them into
the run's spec. The command line's options take their defaults from here (`DEFAULTS`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

# Settings that say how and where one machine runs a comparison, not what it compares: beside
# `--batch` the command line may replace them, and the shards of one batch may differ in them.
MACHINE_SETTINGS = frozenset(
    {"concurrency", "base_url", "api_key_env", "cache", "cache_dir", "max_rpm", "max_tpm"}
)  # rate limits: how fast, not what

# `--max-response-bytes` may be raised this far (1 GiB): past it, a cap would bound nothing.
LARGEST_RESPONSE_CAP = 1 << 30
# Conversations at once: each runs on a thread of its own; past this a machine runs out of threads
# long before an endpoint answers that many requests at once.
MAX_CONCURRENCY = 1024


@dataclass(frozen=True)
class RunOptions:
    """`harness run`'s settings as given (a command-line option or a batch file's field each),
    unchecked; the defaults here are the command line's."""

    paths: tuple[Path, ...] = ()  # chronology files, folders or .txt lists; none: chronologies/
    policies: tuple[str, ...] = ()  # specs or set names; none: every installed policy not in the set opt_in
    models: tuple[str, ...] = ()  # none: reference
    base_url: tuple[str, ...] = ()
    api_key_env: str = "OPENAI_API_KEY"
    timeout: float = 60.0
    max_retries: int = 4
    max_response_bytes: int = 4 * 1024 * 1024  # harness.models.options.MAX_RESPONSE_BYTES
    roles: tuple[str, ...] = ()  # ROLE=MODEL
    summarizer_model: str | None = None
    writer_model: str | None = None
    judge: str | None = None
    repetitions: int = 1
    concurrency: int = 1
    seed: int = 0
    live: bool = False
    cache: bool = True
    cache_dir: Path = Path(".harness-cache")
    independent_samples: bool = False  # the policy in every cache key: no two policies share a response
    temperature: float = 0.0
    top_p: float | None = None
    max_tokens: tuple[str, ...] = ()  # N or KIND=N
    local_model: Path | None = None
    local_context: int = 4096
    local_threads: int | None = None
    local_port: int | None = None
    shard: str | None = None  # K/N
    max_rpm: int | None = None  # requests per minute to each model, for the whole batch (harness.models.ratelimit)
    max_tpm: int | None = None  # tokens per minute likewise

    @classmethod
    def of(cls, values: Mapping[str, Any]) -> RunOptions:
        """The options among `values` (a command's parameters): other names are left out."""
        return cls(**{f.name: values[f.name] for f in fields(cls) if f.name in values})


DEFAULTS = RunOptions()
OPTION_NAMES = frozenset(f.name for f in fields(RunOptions))
