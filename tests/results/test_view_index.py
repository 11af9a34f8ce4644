"""Views read one conversation at a time give exactly what reading both files whole gives."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.chronology.loading import load_chronologies
from harness.policy import PolicyRegistry
from harness.results.reader import identity_key, read_records
from harness.results.spans import SpanIndex, bisect
from harness.results.view_index import ViewIndex, plan_order
from harness.results.views import ConversationViews
from harness.run.batch import Runtime, run_batch
from harness.run.spec import RunSpec
from tests.paths import SHIPPED


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    registry = PolicyRegistry.installed()
    chronologies = load_chronologies([SHIPPED / f"{n}.yaml" for n in ("memory-drift", "two-sessions")])
    plan = RunSpec(chronologies, registry.default_specs(), ["reference"], concurrency=3)
    directory = tmp_path_factory.mktemp("views") / "run"
    run_batch(plan, directory, "run", Runtime(registry))
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


def test_bisection_on_plan_order_finds_what_the_whole_index_finds(run: Path) -> None:
    order = plan_order(run)
    assert order is not None and len(order) == 2 * 7
    for name in ("messages.jsonl", "views.jsonl"):
        whole_index = SpanIndex(run / name).spans
        for key in order:
            assert bisect(run / name, key, order) == whole_index[key], (name, key)
        assert bisect(run / name, ("nope", "full-history", "reference", 1), order) is None


def test_a_completed_run_reads_views_by_bisection_the_same(run: Path) -> None:
    expected = whole(run)
    index = ViewIndex(run, in_plan_order=True)
    for key, views in expected.items():
        found = index.conversation(key)
        assert found is not None
        for turn in views.rows:
            assert found.at(turn) == views.at(turn), (key, turn)


def test_a_file_out_of_plan_order_falls_back_to_the_whole_index(run: Path, tmp_path: Path) -> None:
    """Two conversations' records swapped: the bisection sees the disorder and the views still
    read back as written."""
    for name in ("messages.jsonl", "views.jsonl", "conversations.jsonl", "manifest.json"):
        (tmp_path / name).write_bytes((run / name).read_bytes())
    spans = SpanIndex(run / "views.jsonl").spans
    (first, (a,)), (second, (b,)) = list(spans.items())[:2]
    data = (run / "views.jsonl").read_bytes()
    assert a[0] + a[1] == b[0]
    swapped = data[: a[0]] + data[b[0] : b[0] + b[1]] + data[a[0] : a[0] + a[1]] + data[b[0] + b[1] :]
    (tmp_path / "views.jsonl").write_bytes(swapped)
    order = plan_order(tmp_path)
    assert order is not None
    assert (
        bisect(tmp_path / "views.jsonl", first, order) is None
        or bisect(tmp_path / "views.jsonl", second, order) is None
    )
    index = ViewIndex(tmp_path, in_plan_order=True)
    expected = whole(run)
    for key in (first, second, *list(expected)[2:4]):
        found = index.conversation(key)
        assert found is not None
        for turn in expected[key].rows:
            assert found.at(turn) == expected[key].at(turn), (key, turn)


def test_an_unknown_conversation_is_looked_up_in_the_whole_index_and_the_order_kept(run: Path) -> None:
    index = ViewIndex(run, in_plan_order=True)
    assert index.conversation(("nope", "full-history", "reference", 1)) is None
    key = next(iter(whole(run)))
    assert index.conversation(key) is not None
    assert index._views.order is not None  # an unknown key is no disorder: the order is not dropped


def test_results_of_a_completed_batch_bisect(run: Path) -> None:
    from harness.results.tables import load_results

    results = load_results(run)
    assert results.manifest.status == "complete"
    key = next(iter(whole(run)))
    assert results.view_at(*key, 1) == whole(run)[key].at(1)
    assert results._view_index._views.order is not None  # the bisection held: no whole index was made
    assert results._view_index._views._spans is None


def test_no_plan_order_when_a_conversation_is_listed_twice_or_a_line_has_no_identity(run: Path, tmp_path: Path) -> None:
    lines = (run / "conversations.jsonl").read_bytes().splitlines(keepends=True)
    (tmp_path / "conversations.jsonl").write_bytes(b"".join(lines) + lines[0] + b"{partial")
    assert plan_order(tmp_path) is None
    (tmp_path / "conversations.jsonl").write_bytes(b"".join(lines) + b"not json\n")
    assert plan_order(tmp_path) is None
    (tmp_path / "conversations.jsonl").write_bytes(b"".join(lines) + b"{torn")
    assert plan_order(tmp_path) == plan_order(run)
    for odd in (b'{"chronology": 1, "policy": "p", "model": "m", "repetition": 1}', b"[1]", b'{"chronology": "c"}'):
        (tmp_path / "conversations.jsonl").write_bytes(b"".join(lines) + odd + b"\n")
        assert plan_order(tmp_path) is None, odd
    odd = b'{"chronology": "c", "policy": "p", "model": "m", "repetition": 1.0}\n'
    (tmp_path / "conversations.jsonl").write_bytes(b"".join(lines) + odd)
    assert plan_order(tmp_path) is None  # a repetition is a whole number as written, never 1.0
