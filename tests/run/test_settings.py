"""Each `harness run` setting is declared once (a field of `harness.run.options.RunOptions`, its
`Setting` in `SETTINGS`) and reaches every place from there: the command line's options, a batch
file's keys, the spec and the manifest's record, what a resume compares and restores, and what a
merge compares. A setting declared without reaching the spec, or read back from where it is not
recorded, fails here (shown below for each setting), and so does an option, a batch-file key or
a resume check that the table lacks."""

from __future__ import annotations

from dataclasses import fields, replace
from pathlib import Path
from typing import Any, get_type_hints

import pytest
import yaml

from harness.base.errors import InputError
from harness.cli.commands import Output, main
from harness.policy.tokens import TokenCounter
from harness.results.rows import Manifest
from harness.run import spec
from harness.run.batchfile import SHAPES, BatchSpec, batch_options
from harness.run.manifest import comparison, new_manifest, spec_of
from harness.run.options import DEFAULTS, SETTING, SETTINGS, RunOptions
from harness.run.resume import FREE, RECORDED, refuse_conflicts
from tests.conftest import builtin_registry
from tests.paths import SHIPPED

REGISTRY = builtin_registry()
NAMES = [s.name for s in SETTINGS]
BASE = RunOptions(paths=(SHIPPED / "correct-then-forget.yaml",), policies=("summary", "bounded-facts"))

# Per setting: a value other than BASE's, and how a batch file writes it (None: as the value).
EXAMPLES: dict[str, tuple[Any, Any]] = {
    "paths": ((SHIPPED / "memory-drift.yaml",), None),
    "policies": (("full-history", "last-turns:turns=2"), None),
    "models": (("reference:lossy",), None),
    "base_url": (("http://127.0.0.1:9/v1",), None),
    "api_key_env": ("OTHER_KEY", None),
    "timeout": (5.0, None),
    "max_retries": (1, None),
    "max_response_bytes": (1000, None),
    "roles": (("summarizer=reference:lossy",), {"summarizer": "reference:lossy"}),
    "summarizer_model": ("reference:lossy", None),
    "writer_model": ("reference:lossy", None),
    "judge": ("openai:gpt-4o-mini", None),
    "repetitions": (3, None),
    "concurrency": (2, None),
    "max_rpm": (60, None),
    "max_tpm": (6000, None),
    "seed": (7, None),
    "live": (True, None),
    "cache": (False, None),
    "cache_dir": (Path("elsewhere"), None),
    "independent_samples": (True, None),
    "shard": ("2/3", None),
    "temperature": (0.5, None),
    "top_p": (0.9, None),
    "max_tokens": (("judge=32",), {"judge": 32}),
    "local_model": (Path("m.gguf"), None),
    "local_context": (8192, None),
    "local_threads": (2, None),
    "local_port": (8081, None),
}


def test_each_field_of_the_options_declares_its_setting_whose_kind_is_the_fields_type() -> None:
    assert sorted(EXAMPLES) == sorted(NAMES)  # a new setting needs an example here too
    kinds = {"text": str, "path": Path, "flag": bool, "int": int, "float": float, "seconds": float}
    for s in SETTINGS:
        kind = kinds[s.kind]
        assert get_type_hints(RunOptions)[s.name] == (
            tuple[kind, ...] if s.multiple else kind if s.default is not None else kind | None
        ), s.name


def test_harness_run_takes_an_option_for_each_setting_and_no_other() -> None:
    params = [p.name for p in main.commands["run"].params]
    outside = {f.name for f in fields(Output)} | {"resume", "batch"}  # where it writes, and its modes
    assert [n for n in params if n not in outside] == NAMES


def test_a_batch_file_takes_every_setting_but_the_aliases_of_its_model_roles() -> None:
    assert [s.name for s in SETTINGS if s.key is None] == ["summarizer_model", "writer_model"]
    assert set(SHAPES) <= set(NAMES)  # the keys the file reads in a shape of their own are settings'
    assert set(BatchSpec.model_fields) == {s.key.split(".")[0] for s in SETTINGS if s.key}


def test_a_resume_compares_each_option_of_harness_run_or_takes_it_freely() -> None:
    params = {p.name for p in main.commands["run"].params}
    assert params - FREE <= set(RECORDED) and not params & FREE & set(RECORDED)


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OTHER_KEY", "sk-test")


def recorded_run(options: RunOptions, tmp_path: Path) -> Manifest:
    return new_manifest(spec.build(options, REGISTRY), "r", TokenCounter())


def round_trip_faults(name: str, tmp_path: Path) -> list[str]:
    """What goes wrong when a run is given setting `name` (its example), recorded, and resumed."""
    value, faults = EXAMPLES[name][0], []
    recorded = recorded_run(replace(BASE, **{name: value}), tmp_path)
    directory = tmp_path / "results" / "r"
    for given, same in ((value, True), ("1/3" if name == "shard" else getattr(BASE, name), False)):
        try:
            refuse_conflicts(directory, recorded, {name: given}, REGISTRY)
            faults += [] if same else ["a resume accepts it changed"]
        except InputError as exc:
            assert "a resume finishes the run with the settings it started with" in str(exc)
            faults += ["a resume refuses it repeated"] if same else []
    if name != "shard":  # a shard's plan is its slice: the restored spec plans the same slice
        again = new_manifest(spec_of(recorded, REGISTRY), "r", TokenCounter())
        faults += [] if replace(again, started_at=None) == replace(recorded, started_at=None) else ["not restored"]
    return faults


@pytest.mark.parametrize("name", NAMES)
def test_a_setting_is_recorded_and_a_resume_accepts_it_repeated_refuses_it_changed_and_restores_it(
    name: str, tmp_path: Path, keys: None
) -> None:
    assert round_trip_faults(name, tmp_path) == []


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("missing", ["built into the spec", "read back where it is recorded"])
def test_a_setting_declared_but_not_built_into_the_spec_or_read_back_fails_its_round_trip(
    name: str, missing: str, tmp_path: Path, keys: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    if missing == "built into the spec":
        built = spec.build
        monkeypatch.setattr(spec, "build", lambda o, *rest: built(replace(o, **{name: getattr(DEFAULTS, name)}), *rest))
    else:
        elsewhere = replace(SETTING[name], at="model_options.nowhere", reader=None)
        monkeypatch.setitem(RECORDED, name, (elsewhere.label, elsewhere.recorded))
    assert "a resume refuses it repeated" in round_trip_faults(name, tmp_path)


@pytest.mark.parametrize("name", NAMES)
def test_a_merge_tells_shards_apart_by_each_setting_but_where_and_how_fast_one_machine_ran(
    name: str, tmp_path: Path, keys: None
) -> None:
    """The machine's settings (and which shard) are left out of what a merge compares
    (`harness.run.manifest.comparison`); every other setting is in it."""
    ours, other = (recorded_run(replace(BASE, **{name: v}), tmp_path) for v in (EXAMPLES[name][0], getattr(BASE, name)))
    alike = comparison(ours.as_record()) == comparison(other.as_record())
    assert alike == (SETTING[name].machine or name == "shard")


@pytest.mark.parametrize("setting", [s for s in SETTINGS if s.key], ids=lambda s: s.name)
def test_a_setting_written_in_a_batch_file_reaches_the_options(setting: Any, tmp_path: Path, keys: None) -> None:
    value, written = EXAMPLES[setting.name]
    written = value if written is None else written
    if isinstance(written, tuple | Path):  # a path as the file's folder would not change it
        written = [str(v) for v in written] if isinstance(written, tuple) else str(written.resolve())
    if setting.name == "base_url":
        written = written[0]
    *group, key = setting.key.split(".")
    content: dict[str, Any] = {"chronologies": [str(SHIPPED / "correct-then-forget.yaml")]}
    content.setdefault("policies", ["summary", "bounded-facts"])
    (content.setdefault(group[0], {}) if group else content)[key] = written
    if setting.name == "shard":
        content["shards"] = 3
    path = tmp_path / "b.yaml"
    path.write_text(yaml.safe_dump(content))
    given = {"shard": value} if setting.name == "shard" else {}
    options, _ = batch_options(path, given, REGISTRY)
    expected = Path(value).resolve() if isinstance(value, Path) else value
    found = getattr(options, setting.name)
    assert (Path(found).resolve() if isinstance(found, Path) else found) == expected
