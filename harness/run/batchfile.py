"""`harness run --batch FILE`: a comparison written down as a YAML file, reviewed in version control.

The file names what runs: chronologies (files, folders, `.txt` lists or globs, expanded within
bounds by `harness.run.globs`), policies with their parameters, models, and the run options (see
batches/default.yaml). Paths in it are relative to the file's folder, as in a `.txt` chronology
list. The file is read like a
chronology (`harness.chronology.loading`: a regular UTF-8 file within the size limit, YAML composed within
limits, every problem reported at once as `file:line: field: message`, exit 2), then each value
goes through the same checks as the command-line option it stands for. A file that names none of
the batch fields is some other file: said so at its line, and none of its text is quoted; a
message quotes the file's own text only short and printable (`safe_yaml.shown`). The manifest records the
file's path, sha256 and parsed content (`batch`).

The file gives `RunOptions` (`batch_options`), checked into the run's spec as the command
line's are (`harness.run.spec.build`). Beside `--batch`, the command line may give only what a
machine decides: where results and reports go (`--out`, `--reports`, `--run-id`, `--quiet`),
which shard it runs (`--shard`), and the machine's settings (`harness.run.options.MACHINE_SETTINGS`:
how many conversations at once, where the model servers are, the key's variable, the response
cache), which replace the file's values. Any other option is refused: the file says what runs,
so that the comparison it names is the one that ran.

A file does not choose on its own both which secret leaves the machine and where it goes: one
that names a key variable (`api_key_env`) other than the default and a server (`base_url`) that
is not this machine, for an `openai:` model, is refused unless the command line confirms the
variable with `--api-key-env` (or names the servers itself with `--base-url`). Otherwise a file
from elsewhere could send any variable of the environment (`GITHUB_TOKEN`) as a bearer token to a
server of its choosing.
"""

from __future__ import annotations

import functools
import hashlib
import os
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlsplit

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from harness.base.errors import ChronologyError, InputError, Problem
from harness.base.files import FileRefused, read_regular_file
from harness.chronology.safe_yaml import YamlRefused, compose, excerpt, shown
from harness.chronology.validation import (  # located problems, as chronologies have them
    Problems,
    Tree,
    kind_of,
    names_no_field,
    yaml_problem,
)
from harness.models.catalog import capabilities_named, check_model_name, model_roles
from harness.models.endpoint import check_base_url, check_key_variable, is_loopback, public_url
from harness.models.sampling import parse_max_tokens
from harness.policy import PolicyRegistry
from harness.run.globs import expand_glob, has_magic
from harness.run.options import DEFAULTS, MACHINE_SETTINGS, SETTING, SETTINGS, RunOptions, Setting
from harness.run.shards import MAX_SHARDS, parse_shard

__all__ = ["BatchSpec", "batch_options", "load_batch", "read_batch_bytes"]

# Options that are never in the file: where this machine writes, which shard it runs, whether its report has charts.
MACHINE_ONLY = frozenset({"batch", "shard", "out", "reports", "run_id", "quiet", "resume", "charts"})

Scalar = str | int | float | bool
# The keys whose value is not one value of the setting's kind (harness.run.options.Setting), by setting.
SHAPES: dict[str, Any] = {
    "paths": Annotated[list[str], Field(min_length=1)],
    "policies": list[str | dict[str, dict[str, Scalar] | None]],
    "models": Annotated[list[str], Field(min_length=1)],
    "base_url": str | Annotated[list[str], Field(min_length=1)],
    "roles": dict[str, str],
    "shard": Annotated[int, Field(ge=1, le=MAX_SHARDS)],
    "max_tokens": int | dict[str, int],
}
FILE_KINDS = {"text": str, "path": str, "flag": bool, "int": int, "float": float, "seconds": float}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


def key_type(setting: Setting) -> Any:
    """What a batch file's key of `setting` takes: its shape, or one value of its kind within its bounds."""
    if setting.name in SHAPES:
        return SHAPES[setting.name]
    kind = FILE_KINDS[setting.kind]
    low, high = setting.within
    bounds = {"ge": low, "le": high, "allow_inf_nan": False if kind is float else None}
    bounds = {k: v for k, v in bounds.items() if v is not None}
    return Annotated[kind, Field(**bounds)] if bounds else kind


@functools.cache
def batch_model(prefix: str = "") -> type[_Strict]:
    """The model of a batch file (of its keys within a group, as `local.`, given `prefix`): a field
    for each setting's key, in the table's order, each optional but the chronologies."""
    found: dict[str, Any] = {}
    for setting in SETTINGS:
        if setting.key is None or not setting.key.startswith(prefix):
            continue
        key, dot, _ = setting.key.removeprefix(prefix).partition(".")
        if dot and key not in found:
            found[key] = (batch_model(f"{prefix}{key}.") | None, None)
        elif not dot:
            found[key] = (key_type(setting), ...) if setting.name == "paths" else (key_type(setting) | None, None)
    name, doc = (
        (f"{prefix[:-1].title()}Spec", f"A batch file's `{prefix[:-1]}:`.") if prefix else ("BatchSpec", BATCH_DOC)
    )
    return create_model(name, __base__=_Strict, __doc__=doc, **found)


BATCH_DOC = "A batch file; each field stands for the `harness run` setting of its key (harness.run.options.SETTINGS)."


BatchSpec = batch_model()
LocalSpec = batch_model("local.")


def value_at(spec: BaseModel, key: str) -> Any:
    """The file's value at `key` (`local.model`: within `local:`); None: not given."""
    found: Any = spec
    for part in key.split("."):
        found = getattr(found, part) if found is not None else None
    return found


def read_batch_bytes(path: Path) -> bytes:
    """The file's bytes: a regular file within the size limit, or a located InputError."""
    try:
        return read_regular_file(str(path))
    except FileNotFoundError:
        raise problem(path, "no such file; give a batch file (e.g. batches/default.yaml)") from None
    except FileRefused as exc:
        raise problem(path, str(exc)) from None
    except OSError as exc:
        raise problem(path, f"cannot read it: {exc.strerror}") from None


def problem(path: Path, message: str, line: int | None = None, field: str = "") -> ChronologyError:
    return ChronologyError([Problem(str(path), line, field, message)])


def load_batch(path: Path) -> tuple[BatchSpec, Problems, dict[str, Any], bytes]:
    """The file's spec, its located problems so far (none), its parsed content, and its bytes."""
    data = read_batch_bytes(path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise problem(path, "not UTF-8 text; save it as UTF-8", data[: exc.start].count(b"\n") + 1) from None
    try:
        root, value = compose(text)
    except YamlRefused as exc:
        raise problem(path, exc.message, exc.line) from None
    except yaml.YAMLError as exc:
        raise ChronologyError([yaml_problem(str(path), text, exc)]) from None
    if root is None or not isinstance(value, dict):
        found = "nothing" if root is None else kind_of(value)
        raise problem(path, f"expected a mapping (chronologies:, policies:, models:, ...); found {found}")
    if names_no_field(value, BatchSpec.model_fields):  # some other file: its keys are its text, never listed
        raise problem(
            path,
            "not a batch file: none of its top-level keys is a batch field (chronologies, policies, models, ...); "
            "give a batch file (see batches/default.yaml)",
            root.start_mark.line + 1,
        )
    problems = Problems(str(path), Tree.of(root))
    for loc, line in problems.tree.duplicates:
        problems.add(loc, f"duplicate key {shown(str(loc[-1]))}; each field may appear once", line)
    problems.raise_if_any()
    try:
        spec = BatchSpec.model_validate(value)
    except ValidationError as exc:
        raise located(problems, exc) from None
    return spec, problems, value, data


def located(problems: Problems, exc: ValidationError) -> ChronologyError:
    """pydantic's errors at their lines; the members of a union tried at one place, as one problem."""
    found: dict[tuple[Any, ...], list[str]] = {}
    for error in exc.errors(include_url=False):
        parts = tuple(error["loc"])
        loc = tuple(part for part in parts[:-1] if not isinstance(part, str) or not is_type_tag(part))
        for last in parts[-1:]:  # an unknown key is the file's text, even one with a `[` in it
            if error["type"] == "extra_forbidden" or not isinstance(last, str) or not is_type_tag(last):
                loc += (last,)
        text = message(error, loc)
        if text not in found.setdefault(loc, []):
            found[loc].append(text)
    for loc, texts in found.items():
        if any(len(other) > len(loc) and other[: len(loc)] == loc for other in found):
            continue  # a union member that failed at the top, where another failed deeper: that one says more
        problems.add(loc, "; or ".join(texts))
    return ChronologyError(sorted(problems.found, key=lambda p: p.line or 0))


def is_type_tag(part: str) -> bool:
    """pydantic names the member of a union it tried (`str`, `list[str]`): not a place in the file."""
    return part in ("str", "int", "float", "bool", "[key]") or "[" in part or part.startswith("dict")


def message(error: Any, loc: tuple[Any, ...]) -> str:
    """A pydantic error as what to fix."""
    kind, value = error["type"], error.get("input")
    if kind == "missing":
        return "missing required field; name the chronologies to run (paths or globs)"
    if kind == "extra_forbidden":
        allowed = LocalSpec.model_fields if "local" in loc[:-1] else BatchSpec.model_fields
        return f"unknown field {shown(str(loc[-1]))}; allowed: {', '.join(allowed)}"
    if kind.endswith("_type") or kind.endswith("_parsing"):
        return f"{error['msg'].lower()}, found {kind_of(value)}"
    limit = error.get("ctx", {})
    if kind == "greater_than_equal":
        return f"{shown(value)} is too small: give at least {limit.get('ge')}"
    if kind == "less_than_equal":
        return f"{shown(value)} is too large: give at most {limit.get('le')}"
    if kind == "too_short":
        required = loc == ("chronologies",)
        return "empty list; give at least one entry" + ("" if required else ", or remove the field")
    return str(error["msg"])


def expand(pattern: str, folder: Path) -> list[str]:
    """A chronology entry: a path or glob relative to the batch file's folder; matches sorted.
    A glob is expanded within bounds (`harness.run.globs`): a recursive one only below the batch
    file's folder or the current folder."""
    joined = os.path.normpath(folder / pattern)
    if has_magic(joined):
        return expand_glob(joined, [folder, Path.cwd()])
    return [joined] if Path(joined).exists() else []


def policy_text(item: str | dict[str, dict[str, Scalar] | None], raw: Any = lambda loc: None) -> list[str]:
    """`last-turns:turns=5`, or `{last-turns: {turns: 5}}`, as `--policy` specs. A parameter's
    value is taken as written (`raw(loc)`, loc from the policy's name), so `provenance: on`
    stays `on` and is not YAML's boolean."""
    if isinstance(item, str):
        return [item]
    specs = []
    for name, params in item.items():
        pairs = ",".join(f"{k}={raw((name, k)) or v}" for k, v in (params or {}).items())
        specs.append(f"{name}:{pairs}" if pairs else name)
    return specs


def checked(problems: Problems, loc: tuple[Any, ...], check: Any, *args: Any) -> Any:
    """Run one option's own check; its InputError becomes a problem at `loc`."""
    try:
        return check(*args)
    except InputError as exc:
        problems.add(loc, str(exc))
        return None


def file_params(spec: BatchSpec, problems: Problems, path: Path, registry: PolicyRegistry) -> dict[str, Any]:
    """The `harness run` parameters the file sets, each checked as its option is."""
    folder = path.parent
    params: dict[str, Any] = {}
    paths: list[str] = []
    for i, pattern in enumerate(spec.chronologies):
        found = checked(problems, ("chronologies", i), expand, pattern, folder)
        if found is None:
            continue
        if not found:
            problems.add(("chronologies", i), f"{excerpt(pattern)}: matches no file or folder next to the batch file")
        paths += found
    params["paths"] = tuple(Path(p) for p in paths)
    if spec.policies is not None:
        written = [
            policy_text(item, lambda loc, i=i: problems.tree.raw(("policies", i, *loc)))
            for i, item in enumerate(spec.policies)
        ]
        texts = [t for specs in written for t in specs]
        parsed = [checked(problems, ("policies", i), registry.parse_all, specs) for i, specs in enumerate(written)]
        if all(p is not None for p in parsed):
            checked(problems, ("policies",), registry.parse_all, texts)  # the same policy twice
        params["policies"] = tuple(texts)
    if spec.models is not None:
        for i, name in enumerate(spec.models):
            checked(problems, ("models", i), check_model_name, name)
        if len(set(spec.models)) < len(spec.models):
            problems.add(("models",), "a model is named twice; results would mix both under one label")
        params["models"] = tuple(spec.models)
    if spec.model_roles is not None:
        pairs = tuple(f"{role}={model}" for role, model in spec.model_roles.items())
        checked(problems, ("model_roles",), model_roles, pairs, {})
        params["roles"] = pairs
    if spec.judge is not None:
        checked(problems, ("judge",), check_model_name, spec.judge, "judge")
        if not capabilities_named(spec.judge).can_judge:
            problems.add(("judge",), "the reference model cannot judge; give openai:NAME or local")
    if spec.base_url is not None:
        urls = [spec.base_url] if isinstance(spec.base_url, str) else spec.base_url
        for i, url in enumerate(urls):
            checked(problems, ("base_url",) if isinstance(spec.base_url, str) else ("base_url", i), check_base_url, url)
        params["base_url"] = tuple(urls)
    if spec.max_tokens is not None:
        caps = spec.max_tokens
        texts = (str(caps),) if isinstance(caps, int) else tuple(f"{k}={v}" for k, v in caps.items())
        checked(problems, ("max_tokens",), parse_max_tokens, texts)
        params["max_tokens"] = texts
    if spec.api_key_env is not None:
        checked(problems, ("api_key_env",), check_key_variable, spec.api_key_env)
    for setting in SETTINGS:  # the keys that take one value of the setting's kind
        value = value_at(spec, setting.key) if setting.key and setting.name not in SHAPES else None
        if value is not None and setting.kind == "path":  # relative to the file's folder
            value = Path(os.path.normpath(folder / value))
        if value is not None:
            params[setting.name] = float(value) if FILE_KINDS[setting.kind] is float else value
    return params


def check_key_destination(spec: BatchSpec, given: dict[str, Any], problems: Problems) -> None:
    """A problem at `api_key_env` when the file alone would send the key of a variable it names (not
    the default) to servers it names that are not this machine; the command line confirms the
    variable with `--api-key-env`, or chooses the servers with `--base-url`."""
    variable = spec.api_key_env
    if variable in (None, DEFAULTS.api_key_env) or "api_key_env" in given or "base_url" in given:
        return
    named = [*(spec.models or ()), *(spec.model_roles or {}).values(), spec.judge or ""]
    if not any(name.startswith("openai:") for name in named):
        return  # no model of the file is sent a key
    urls = [spec.base_url] if isinstance(spec.base_url, str) else spec.base_url or []
    hosts = sorted({_host(url) for url in urls if not is_loopback(url)})
    if hosts:
        problems.add(
            ("api_key_env",),
            f"the file would send the environment variable {variable} as a bearer token to {', '.join(hosts)}, "
            f"servers the file names: a batch file does not choose both a key and where it goes; if that is "
            f"meant, confirm the variable on the command line: --api-key-env {variable}",
        )


def _host(url: str) -> str:
    """A URL's host and port, as the user would recognise the server (no user:password@, no path)."""
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:  # not a URL: its own problem is reported at base_url
        port = None
    host = parts.hostname or public_url(url) or ""
    host = f"[{host}]" if ":" in host and parts.hostname else host  # an IPv6 address
    return f"{host}:{port}" if port else host


def batch_options(path: Path, given: dict[str, Any], registry: PolicyRegistry) -> tuple[RunOptions, dict[str, Any]]:
    """The options of `harness run --batch path` (the file's over the defaults, then the machine's
    settings given on the command line: MACHINE_SETTINGS), and the manifest's `batch` record;
    every problem is an InputError."""
    refused = [name for name in given if name not in MACHINE_SETTINGS | MACHINE_ONLY]
    if refused:
        shown = ", ".join(SETTING[n].label for n in refused)
        raise InputError(
            f"{shown} beside --batch {path}: the batch file says what runs; put it in the file, or run "
            f"without --batch (beside it: --shard, --out, --reports, --run-id, --quiet, --no-charts, "
            f"{', '.join(sorted('--' + n.replace('_', '-') for n in MACHINE_SETTINGS))})"
        )
    spec, problems, content, data = load_batch(path)
    params = file_params(spec, problems, path, registry)
    if spec.shards is not None and given.get("shard") is not None:
        shard = parse_shard(given["shard"])
        if shard.count != spec.shards:
            problems.add(
                ("shards",), f"the file splits the batch in {spec.shards}; --shard {shard.label} in {shard.count}"
            )
    check_key_destination(spec, given, problems)
    problems.raise_if_any()
    params |= {name: value for name, value in given.items() if name in MACHINE_SETTINGS or name == "shard"}
    record = {"path": str(path), "sha256": hashlib.sha256(data).hexdigest(), "content": content}
    return RunOptions.of(params), record
