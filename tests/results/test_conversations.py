"""The plain scan: one conversation's records, read line by line, are the records reading the
file whole gives for it; the views of one conversation read back as written."""

from __future__ import annotations

import json
from pathlib import Path

from harness.base.identity import RunKey
from harness.results.conversations import Scan, ViewReader, scanning
from harness.results.reader import RECORD_FILES, read_records
from harness.results.tables import load_results
from tests.results.conftest import whole


def test_each_conversation_s_records_are_those_of_the_whole_file(run: Path) -> None:
    for name in (n for n in RECORD_FILES if n.endswith(".jsonl")):
        grouped: dict[tuple, list] = {}
        for record in read_records(run / name):
            grouped.setdefault(RunKey.of(record), []).append(record)
        assert grouped, name
        for key, records in grouped.items():
            assert Scan(run / name).conversation(key) == records, (name, key)


def test_every_turn_of_every_conversation_reads_back_as_written(run: Path) -> None:
    reader = scanning(run)
    for key, views in whole(run).items():
        found = reader.conversation(key)
        assert found is not None
        assert {turn: found.at(turn) for turn in views.rows} == {turn: views.at(turn) for turn in views.rows}, key
    assert reader.conversation(("nope", "full-history", "reference", 1)) is None


def test_load_results_reads_views_by_the_plain_scan_unless_told_otherwise(run: Path) -> None:
    results = load_results(run)
    key = next(iter(whole(run)))
    assert results.view_at(*key, 1) == whole(run)[key].at(1)
    assert isinstance(results._view_reader, ViewReader) and isinstance(results._view_reader.views, Scan)


def test_a_torn_last_line_and_a_line_that_is_no_record_are_left_out(tmp_path: Path) -> None:
    identity = {"chronology": "c", "policy": "p", "model": "m", "repetition": 1}
    lines = [json.dumps(identity | {"n": 0}), "not json", "[1]", json.dumps(identity | {"repetition": 1.0})]
    lines += [json.dumps(identity | {"n": 1}, ensure_ascii=False)]
    (tmp_path / "facts.jsonl").write_text("\n".join(lines) + "\n" + lines[0][:-2], encoding="utf-8")
    assert Scan(tmp_path / "facts.jsonl").conversation(("c", "p", "m", 1)) == [identity | {"n": 0}, identity | {"n": 1}]
    assert Scan(tmp_path / "missing.jsonl").conversation(("c", "p", "m", 1)) == []
