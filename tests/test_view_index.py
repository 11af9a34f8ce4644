"""Views read one conversation at a time give exactly what reading both files whole gives."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.batch import BatchPlan, run_batch
from harness.loading import load_chronologies
from harness.policy import PolicyRegistry
from harness.records import identity_key, read_records
from harness.spans import SpanIndex
from harness.view_index import ViewIndex
from harness.views import ConversationViews

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    registry = PolicyRegistry.installed()
    chronologies = load_chronologies([ROOT / "chronologies" / f"{n}.yaml" for n in ("memory-drift", "two-sessions")])
    plan = BatchPlan(chronologies, registry.default_specs(), ["reference"], concurrency=3)
    directory = tmp_path_factory.mktemp("views") / "run"
    run_batch(plan, directory, "run", registry)
    return directory


def whole(directory: Path) -> dict[tuple[str, str, str, int], ConversationViews]:
    """Both files read whole, grouped by conversation: what the report did before."""
    grouped: dict[tuple[str, str, str, int], tuple[list, list]] = {}
    for index, name in enumerate(("messages.jsonl", "views.jsonl")):
        for record in read_records(directory / name):
            grouped.setdefault(identity_key(record), ([], []))[index].append(record)
    return {key: ConversationViews(messages, rows) for key, (messages, rows) in grouped.items()}


def test_every_turn_of_every_conversation_reads_back_the_same(run: Path) -> None:
    expected = whole(run)
    index = ViewIndex(run)
    assert len(expected) == 2 * 7
    for key, views in expected.items():
        found = index.conversation(key)
        assert found is not None
        for turn in views.rows:
            assert found.at(turn) == views.at(turn), (key, turn)


def test_each_conversation_is_one_span_after_the_final_rewrite(run: Path) -> None:
    """Concurrent conversations interleave their records; the plan-order rewrite groups them."""
    for name in ("messages.jsonl", "views.jsonl"):
        spans = SpanIndex(run / name).spans
        assert spans and all(len(found) == 1 for found in spans.values()), name


def test_an_unknown_conversation_has_no_views(run: Path) -> None:
    assert ViewIndex(run).conversation(("nope", "full-history", "reference", 1)) is None


def test_a_torn_last_line_is_left_out(run: Path, tmp_path: Path) -> None:
    for name in ("messages.jsonl", "views.jsonl", "manifest.json"):
        (tmp_path / name).write_bytes((run / name).read_bytes())
    lines = (run / "views.jsonl").read_bytes().splitlines(keepends=True)
    (tmp_path / "views.jsonl").write_bytes(b"".join(lines[:-1]) + lines[-1][:20])
    last = read_records(run / "views.jsonl")[-1]
    key = identity_key(last)
    found = ViewIndex(tmp_path).conversation(key)
    assert found is not None
    assert found.at(last["turn"]) is None
    assert found.rows and max(found.rows) == last["turn"] - 1
