"""The span index (an annex to the plain scan of harness.results.conversations): one
conversation's records, found by the bytes its lines start with or by bisection, are exactly
what reading the files whole gives, and what the plain scan gives, whatever the key order."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.base.identity import RunKey
from harness.results.conversations import Scan
from harness.results.reader import RECORD_FILES, read_records
from harness.results.spans import IDENTITY, SpanIndex, bisect, identity, plan_order, view_reader
from tests.conftest import COMPARISON
from tests.results.conftest import whole


def test_every_turn_of_every_conversation_reads_back_the_same(run: Path) -> None:
    expected = whole(run)
    index = view_reader(run)
    assert len(expected) == 2 * len(COMPARISON)
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
    assert view_reader(run).conversation(("nope", "full-history", "reference", 1)) is None


def test_a_torn_last_line_is_left_out(run: Path, tmp_path: Path) -> None:
    for name in ("messages.jsonl", "views.jsonl", "manifest.json"):
        (tmp_path / name).write_bytes((run / name).read_bytes())
    lines = (run / "views.jsonl").read_bytes().splitlines(keepends=True)
    (tmp_path / "views.jsonl").write_bytes(b"".join(lines[:-1]) + lines[-1][:20])
    last = read_records(run / "views.jsonl")[-1]
    key = RunKey.of(last)
    found = view_reader(tmp_path).conversation(key)
    assert found is not None
    assert found.at(last["turn"]) is None
    assert found.rows and max(found.rows) == last["turn"] - 1


def test_bisection_on_plan_order_finds_what_the_whole_index_finds(run: Path) -> None:
    order = plan_order(run)
    assert order is not None and len(order) == 2 * len(COMPARISON)
    for name in ("messages.jsonl", "views.jsonl"):
        whole_index = SpanIndex(run / name).spans
        for key in order:
            assert bisect(run / name, key, order) == whole_index[key], (name, key)
        assert bisect(run / name, ("nope", "full-history", "reference", 1), order) is None


def test_a_completed_run_reads_views_by_bisection_the_same(run: Path) -> None:
    expected = whole(run)
    index = view_reader(run, in_plan_order=True)
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
    index = view_reader(tmp_path, in_plan_order=True)
    expected = whole(run)
    for key in (first, second, *list(expected)[2:4]):
        found = index.conversation(key)
        assert found is not None
        for turn in expected[key].rows:
            assert found.at(turn) == expected[key].at(turn), (key, turn)


def test_an_unknown_conversation_is_looked_up_in_the_whole_index_and_the_order_kept(run: Path) -> None:
    index = view_reader(run, in_plan_order=True)
    assert index.conversation(("nope", "full-history", "reference", 1)) is None
    key = next(iter(whole(run)))
    assert index.conversation(key) is not None
    assert index.views.order is not None  # an unknown key is no disorder: the order is not dropped


def test_results_of_a_completed_batch_bisect(run: Path) -> None:
    from harness.results.tables import load_results

    results = load_results(run, view_reader)
    assert results.manifest.status == "complete"
    key = next(iter(whole(run)))
    assert results.view_at(*key, 1) == whole(run)[key].at(1)
    assert results._view_reader.views.order is not None  # the bisection held: no whole index was made
    assert results._view_reader.views._spans is None


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


def test_every_record_a_batch_writes_starts_with_its_identity_as_the_index_reads_it(run: Path) -> None:
    """The index's one assumption about the writer (harness.results.writer, the record types in
    harness.results.rows): each record starts with its identity, keys in this order and
    spelling, as `json.dumps` separates them. If this fails, the writer changed: change
    `spans.IDENTITY` with it (until then the index parses every line: right, but slow)."""
    for name in (n for n in RECORD_FILES if n.endswith(".jsonl")):
        lines = (run / name).read_bytes().splitlines(keepends=True)
        assert lines, name
        for line in lines:
            assert IDENTITY.match(line), f"{name}: a record no longer starts as spans.IDENTITY reads it: {line[:120]!r}"
            key, prefix = identity(line)
            assert key == RunKey.of(json.loads(line)) and prefix != b"\0", (name, line[:120])


def test_a_call_record_written_alone_starts_with_its_identity(tmp_path: Path) -> None:
    from dataclasses import fields

    from harness.results.rows import CallRecord
    from harness.results.writer import ResultsWriter

    names = [f.name for f in fields(CallRecord)]
    assert names[:4] == ["chronology", "policy", "model", "repetition"]
    values = {"chronology": "c", "policy": 'p "q"', "model": "m", "repetition": 12}
    record = CallRecord(**{**{f.name: None for f in fields(CallRecord)}, **values})
    with ResultsWriter(tmp_path) as writer:
        writer.call(record)
        writer.facts({**values, "turn": 1})
    for name in ("calls.jsonl", "facts.jsonl"):
        line = (tmp_path / name).read_bytes()
        assert identity(line) == (("c", 'p "q"', "m", 12), IDENTITY.match(line).group(0)), name


def reordered(line: bytes) -> bytes:
    """A record line with its keys in reverse order: the same record, other bytes."""
    return json.dumps(dict(reversed(json.loads(line).items())), ensure_ascii=False).encode() + b"\n"


@pytest.mark.parametrize("every", [1, 3])
@pytest.mark.parametrize("in_plan_order", [False, True])
def test_records_written_with_their_keys_in_another_order_read_as_the_plain_scan_reads_them(
    run: Path, tmp_path: Path, every: int, in_plan_order: bool
) -> None:
    for name in ("messages.jsonl", "views.jsonl", "conversations.jsonl", "manifest.json"):
        lines = (run / name).read_bytes().splitlines(keepends=True)
        if name in ("messages.jsonl", "views.jsonl"):
            lines = [reordered(line) if n % every == 0 else line for n, line in enumerate(lines)]
        (tmp_path / name).write_bytes(b"".join(lines))
    expected, reader = whole(run), view_reader(tmp_path, in_plan_order)
    for key, views in expected.items():
        found = reader.conversation(key)
        assert found is not None
        assert {turn: found.at(turn) for turn in views.rows} == {turn: views.at(turn) for turn in views.rows}, key
    for name in ("messages.jsonl", "views.jsonl"):
        index, scan = SpanIndex(tmp_path / name), Scan(tmp_path / name)
        assert {key: index.conversation(key) for key in expected} == {key: scan.conversation(key) for key in expected}
        assert set(index.spans) == set(expected)


def test_a_record_whose_identity_is_not_the_one_it_starts_with_turns_the_file_to_the_plain_scan(
    tmp_path: Path,
) -> None:
    """A key written twice: the line starts with one conversation's identity and JSON reads
    the last. The record read back is another conversation's, so the file is scanned."""
    start = '{"chronology": "a", "policy": "p", "model": "m", "repetition": 1, '
    lines = [start + '"n": 0}', start + '"n": 1, "chronology": "b"}', start + '"n": 2}']
    not_utf8 = b'{"chronology": "a\xff", "policy": "p", "model": "m", "repetition": 1, "n": 3}\n'  # not UTF-8
    (tmp_path / "facts.jsonl").write_bytes("\n".join(lines).encode() + b"\n" + not_utf8)
    assert identity(not_utf8) == (None, b"\0")
    index, scan = SpanIndex(tmp_path / "facts.jsonl"), Scan(tmp_path / "facts.jsonl")
    assert index.conversation(("a", "p", "m", 1)) == scan.conversation(("a", "p", "m", 1))
    assert [r["n"] for r in index.conversation(("a", "p", "m", 1))] == [0, 2]
    assert index.scan is not None
    assert [r["n"] for r in index.conversation(("b", "p", "m", 1))] == [1]
    assert index.bodies(("a", "p", "m", 1))[0].startswith(start.encode())  # left whole once scanned
