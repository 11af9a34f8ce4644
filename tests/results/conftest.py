"""A completed batch whose views, messages and facts the reading tests read back."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.base.identity import RunKey
from harness.chronology.loading import load_chronologies
from harness.policy import PolicyRegistry
from harness.results.reader import read_records
from harness.results.views import ConversationViews
from harness.run.batch import Runtime, run_batch
from harness.run.spec import RunSpec
from tests.paths import SHIPPED


@pytest.fixture(scope="package")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two shipped chronologies under every default policy, three conversations at a time (so
    their records interleave until the final rewrite puts them in plan order)."""
    registry = PolicyRegistry.installed()
    chronologies = load_chronologies([SHIPPED / f"{n}.yaml" for n in ("memory-drift", "two-sessions")])
    plan = RunSpec(chronologies, registry.default_specs(), ["reference"], concurrency=3)
    directory = tmp_path_factory.mktemp("views") / "run"
    run_batch(plan, directory, "run", Runtime(registry))
    return directory


def whole(directory: Path) -> dict[tuple[str, str, str, int], ConversationViews]:
    """Both view files read whole, grouped by conversation: what the report did before."""
    grouped: dict[tuple[str, str, str, int], tuple[list, list]] = {}
    for index, name in enumerate(("messages.jsonl", "views.jsonl")):
        for record in read_records(directory / name):
            grouped.setdefault(RunKey.of(record), ([], []))[index].append(record)
    return {key: ConversationViews(messages, rows) for key, (messages, rows) in grouped.items()}
