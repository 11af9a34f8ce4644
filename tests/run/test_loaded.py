"""A batch plans with what it needs of each chronology and loads its turns as its conversations
start: a few at a time however many it names, each checked to be the file planned."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness.chronology.loading import load_chronology, load_each
from harness.run.batch import Runtime, run_batch
from harness.run.conversation import Conversation, Planned
from harness.run.events import planned_calls
from harness.run.loaded import Chronologies, ChronologyChanged
from harness.run.spec import RunSpec
from tests.conftest import SHIPPED, assert_same_results, builtin_registry, shipped_plan

REGISTRY = builtin_registry()
PAIR = [SHIPPED / "correct-then-forget.yaml", SHIPPED / "memory-drift.yaml"]


def planned_plan(paths: list[Path], **overrides: object) -> RunSpec:
    """The plan `harness run` makes: chronologies planned (`Planned`), not held loaded."""
    return RunSpec(load_each(paths, Planned.of), REGISTRY.default_specs(), ["reference"], **overrides)  # type: ignore[arg-type]


def copies(folder: Path, count: int) -> list[Path]:
    """`count` chronology files of the same content under different names."""
    folder.mkdir()
    for n in range(count):
        shutil.copy(SHIPPED / "memory-drift.yaml", folder / f"drift-{n}.yaml")
    return sorted(folder.glob("*.yaml"))


@pytest.mark.parametrize("concurrency", [1, 3])
@pytest.mark.slow
def test_a_planned_batch_leaves_the_same_results_as_one_holding_its_chronologies(
    tmp_path: Path, concurrency: int
) -> None:
    run_batch(shipped_plan(), tmp_path / "held", "held", Runtime(REGISTRY))
    run_batch(planned_plan(PAIR, concurrency=concurrency), tmp_path / "planned", "planned", Runtime(REGISTRY))
    assert_same_results(tmp_path / "held", tmp_path / "planned")


def test_a_plan_holds_no_turns_and_counts_what_the_loaded_chronology_would() -> None:
    drift = load_chronology(PAIR[1])
    plan = Planned.of(drift)
    assert not hasattr(plan, "turns")
    assert (plan.name, plan.sha256, plan.user_turns) == (drift.name, drift.sha256, len(drift.user_turns))
    policy = REGISTRY.parse("summary")
    for live in (False, True):
        for judging in (False, True):
            held = planned_calls(Conversation(drift, policy, "m", 1), live, judging)
            assert planned_calls(Conversation(plan, policy, "m", 1), live, judging) == held


@pytest.mark.slow
def test_a_sequential_batch_loads_each_chronology_once_and_holds_few_at_a_time(tmp_path: Path) -> None:
    paths = copies(tmp_path / "many", 6)
    loader = Chronologies(capacity=1)
    run_batch(planned_plan(paths), tmp_path / "r", "r", Runtime(REGISTRY, chronologies=lambda: loader))
    assert loader.loads == 6  # its conversations (11 policies) run one after another
    assert loader.most_alive <= 2  # the one kept, and the one a conversation runs


@pytest.mark.slow
def test_a_concurrent_batch_holds_at_most_the_cache_and_one_per_conversation_running(tmp_path: Path) -> None:
    paths = copies(tmp_path / "many", 6)
    loader = Chronologies(capacity=1)
    run_batch(planned_plan(paths, concurrency=3), tmp_path / "r", "r", Runtime(REGISTRY, chronologies=lambda: loader))
    assert 6 <= loader.loads and loader.most_alive <= 1 + 3


@pytest.mark.slow
def test_a_concurrent_batch_starts_a_chronology_s_policies_together_and_loads_it_a_few_times(tmp_path: Path) -> None:
    # 6 chronologies x 14 policies at concurrency 3; the start order once ordered them policy by
    # policy (each policy's rate learned slightly apart): 40 to 65 loads
    paths = copies(tmp_path / "many", 6)
    loader = Chronologies()
    run_batch(planned_plan(paths, concurrency=3), tmp_path / "r", "r", Runtime(REGISTRY, chronologies=lambda: loader))
    assert loader.loads <= 3 * len(paths)


def test_a_chronology_changed_after_the_plan_is_refused_when_its_conversations_start(tmp_path: Path) -> None:
    paths = copies(tmp_path / "many", 2)
    plan = planned_plan(paths)
    paths[1].write_text(paths[1].read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    with pytest.raises(ChronologyChanged, match=r"drift-1\.yaml: changed since the run started \(sha256 differs"):
        run_batch(plan, tmp_path / "r", "r", Runtime(REGISTRY))
    assert '"status": "failed"' in (tmp_path / "r" / "manifest.json").read_text()
    assert ChronologyChanged.exit_code == 2
