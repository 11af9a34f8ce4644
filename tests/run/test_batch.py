"""Batches: concurrency, finished records in plan order, resume after an interruption."""

from __future__ import annotations

import json
from contextlib import ExitStack
from pathlib import Path

import pytest

from harness.base.errors import InputError
from harness.chronology.loading import load_chronologies
from harness.models.options import ModelFactory, ModelOptions
from harness.run.batch import Runtime, reference_factory, resume_batch, run_batch
from harness.run.manifest import recorded_roles
from harness.run.spec import RunSpec
from tests.conftest import COMPARISON, SHIPPED, assert_same_results, builtin_registry
from tests.conftest import shipped_plan as plan
from tests.scripted import ScriptedModel, serving

REGISTRY = builtin_registry()


@pytest.mark.slow
def test_concurrent_conversations_leave_the_same_results_as_sequential_ones(tmp_path: Path) -> None:
    run_batch(plan(), tmp_path / "seq", "seq", Runtime(REGISTRY))
    run_batch(plan(concurrency=4), tmp_path / "par", "par", Runtime(REGISTRY))
    assert_same_results(tmp_path / "seq", tmp_path / "par")


def test_the_manifest_counts_conversations_by_status(tmp_path: Path) -> None:
    data = run_batch(plan(), tmp_path / "r", "r", Runtime(REGISTRY))
    assert data.status == "complete"
    assert (
        data.conversations["total"]
        == 2 * len(COMPARISON)
        == sum(v for k, v in data.conversations.items() if k != "total")
    )


class Interrupt(BaseException):
    """Stands for the process being killed: not an error the runner may catch."""


def dies_after(calls: int) -> ModelFactory:
    """The reference model, for `calls` calls; the process is killed at the next."""
    return serving(ScriptedModel(fails=Interrupt(), from_call=calls + 1))


@pytest.mark.parametrize("calls", [0, 7, 60])
@pytest.mark.slow
def test_a_resumed_run_equals_an_uninterrupted_one(tmp_path: Path, calls: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(SHIPPED.parent)  # chronology paths in the manifest are relative to where the run started
    run_batch(plan(), tmp_path / "whole", "whole", Runtime(REGISTRY))
    with pytest.raises(Interrupt):
        run_batch(plan(), tmp_path / "cut", "cut", Runtime(REGISTRY, factory=dies_after(calls)))
    assert json.loads((tmp_path / "cut" / "manifest.json").read_text())["status"] == "running"
    data = resume_batch(tmp_path / "cut", Runtime(REGISTRY))
    assert data.status == "complete" and len(data.resumed_at) == 1
    assert_same_results(tmp_path / "whole", tmp_path / "cut")


def test_resuming_a_complete_run_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_batch(plan(), tmp_path / "r", "r", Runtime(REGISTRY))
    with pytest.raises(InputError, match="already complete"):
        resume_batch(tmp_path / "r", Runtime(REGISTRY))


def test_resuming_after_a_chronology_changed_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "c.yaml").write_text((SHIPPED / "memory-drift.yaml").read_text())
    one = RunSpec(load_chronologies(["c.yaml"]), REGISTRY.default_specs()[:1], ["reference"])
    with pytest.raises(Interrupt):
        run_batch(one, tmp_path / "r", "r", Runtime(REGISTRY, factory=dies_after(0)))
    (tmp_path / "c.yaml").write_text((SHIPPED / "memory-drift.yaml").read_text() + "\n# edited\n")
    with pytest.raises(InputError, match="changed since the run started"):
        resume_batch(tmp_path / "r", Runtime(REGISTRY))


def test_the_default_factory_knows_only_the_reference_model() -> None:
    with pytest.raises(InputError, match="unknown model"):
        reference_factory("openai:x", ExitStack())


@pytest.mark.parametrize(
    ("options", "roles"),
    [
        (
            ModelOptions(roles={"writer": "openai:w", "critic": "local"}).as_record(),
            {"critic": "local", "writer": "openai:w"},
        ),
        ({"summarizer_model": "openai:s", "writer_model": None}, {"summarizer": "openai:s"}),  # before model_roles
    ],
)
def test_resume_reads_the_role_mapping_the_manifest_recorded(options: dict, roles: dict) -> None:
    assert recorded_roles(options) == roles


def test_only_deterministic_roles_let_a_deterministic_model_run_once() -> None:
    assert plan(repetitions=3, options=ModelOptions(roles={"critic": "reference"})).run_once() == ["reference"]
    assert plan(repetitions=3, options=ModelOptions(roles={"critic": "openai:c"})).run_once() == []


@pytest.mark.slow
def test_a_resume_tolerates_writes_torn_inside_a_utf8_character(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(SHIPPED.parent)
    run_batch(plan(), tmp_path / "whole", "whole", Runtime(REGISTRY))
    with pytest.raises(Interrupt):
        run_batch(plan(), tmp_path / "cut", "cut", Runtime(REGISTRY, factory=dies_after(30)))
    for name, torn in (
        ("calls.jsonl", b'{"chronology": "caf\xc3'),
        ("turns.csv", b"memory-drift,summary,reference,1,3,\xc3"),
    ):
        with (tmp_path / "cut" / name).open("ab") as handle:
            handle.write(torn)  # the kill cut a two-byte character in half
    assert resume_batch(tmp_path / "cut", Runtime(REGISTRY)).status == "complete"
    assert_same_results(tmp_path / "whole", tmp_path / "cut")


def test_a_resumed_run_keeps_its_sampling_and_local_options(monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.models.local import LocalOptions
    from harness.models.sampling import Sampling
    from harness.policy.tokens import TokenCounter
    from harness.results.rows import Manifest
    from harness.run.manifest import new_manifest, spec_of

    monkeypatch.chdir(SHIPPED.parent)
    options = ModelOptions(
        sampling=Sampling(0.5, 0.9, {"answer": 100, "judge": 32}), local=LocalOptions(Path("w.gguf"), 2048, 2, 9000)
    )
    plan = RunSpec(
        load_chronologies([Path("chronologies/memory-drift.yaml")]),
        [builtin_registry().parse("full-history")],
        ["reference"],
        options=options,
    )
    recorded = Manifest(**json.loads(json.dumps(new_manifest(plan, "r", TokenCounter()).as_record())))
    assert spec_of(recorded, builtin_registry()).options == options


SAME_REQUESTS = (  # under full-history and last-turns:turns=9 every request is the same
    "title: t\nprohibitions:\n  p:\n    present: never restart\n    violated_by: '^Yes'\n"
    "turns:\n  - user: never restart it\n    assistant: ok\n  - user: Can I restart?\n    probe: q\n"
)


def sampled_run(tmp_path: Path, independent: bool) -> tuple[ScriptedModel, Path]:
    """Two policies whose requests are identical, on a cacheable model that draws anew at every
    request (`draw N`), at temperature 0.7, with the response cache on."""
    from itertools import count

    from harness.models.sampling import Sampling

    (tmp_path / "c.yaml").write_text(SAME_REQUESTS)
    draws = count(1)
    model = ScriptedModel("openai:m", lambda request: f"draw {next(draws)}", cache_identity={"model": "m"})
    spec = RunSpec(
        load_chronologies([tmp_path / "c.yaml"]),
        [REGISTRY.parse("full-history"), REGISTRY.parse("last-turns:turns=9")],
        ["openai:m"],
        options=ModelOptions(sampling=Sampling(0.7)),
        cache_dir=tmp_path / "cache",
        independent_samples=independent,
    )
    run_batch(spec, tmp_path / "r", "r", Runtime(REGISTRY, factory=serving(model)))
    return model, tmp_path / "r"


@pytest.mark.parametrize(
    "independent, answers, samples",
    [
        (False, ["draw 1", "draw 1"], "shared across policies within a repetition"),
        (True, ["draw 1", "draw 2"], "independent per policy"),
    ],
    ids=["shared", "independent"],
)
def test_policies_share_a_sampled_answer_unless_samples_are_independent_and_the_manifest_says_which(
    tmp_path: Path, independent: bool, answers: list[str], samples: str
) -> None:
    from harness.results.tables import load_results

    model, directory = sampled_run(tmp_path, independent)
    calls = load_results(directory).calls
    assert calls[calls.kind == "answer"].response.tolist() == answers and model.calls == len(set(answers))
    manifest = json.loads((directory / "manifest.json").read_text())
    assert manifest["independent_samples"] is independent and manifest["samples"].startswith(samples)


def test_a_resumed_run_keeps_its_choice_of_independent_samples(tmp_path: Path) -> None:
    from harness.results.reader import read_manifest
    from harness.run.manifest import spec_of

    _, directory = sampled_run(tmp_path, independent=True)
    assert spec_of(read_manifest(directory), REGISTRY).independent_samples is True
