"""The results files: streamed, flushed, blank for unknown."""

from __future__ import annotations

import json
from pathlib import Path

from harness.records import PROBE_COLUMNS, TURN_COLUMNS, ResultsWriter, csv_cell


def test_records_are_readable_before_the_writer_closes(tmp_path: Path) -> None:
    writer = ResultsWriter(tmp_path)
    writer.call({"turn": 1})
    writer.turn({"chronology": "c", "turn": 1})
    assert json.loads((tmp_path / "calls.jsonl").read_text()) == {"turn": 1}
    assert (tmp_path / "turns.csv").read_text().splitlines()[1].startswith("c,")
    writer.close()


def test_headers_are_the_contract_columns_written_once(tmp_path: Path) -> None:
    ResultsWriter(tmp_path).close()
    ResultsWriter(tmp_path).close()  # reopening appends, never repeats the header
    assert (tmp_path / "turns.csv").read_text().splitlines() == [",".join(TURN_COLUMNS)]
    assert (tmp_path / "probes.csv").read_text().splitlines() == [",".join(PROBE_COLUMNS)]


def test_unknown_is_blank_never_zero_and_booleans_are_words() -> None:
    assert [csv_cell(None), csv_cell(0), csv_cell(True), csv_cell(False)] == ["", 0, "true", "false"]


def test_the_manifest_is_replaced_whole(tmp_path: Path) -> None:
    with ResultsWriter(tmp_path) as writer:
        writer.manifest({"status": "running"})
        writer.manifest({"status": "complete"})
    assert json.loads((tmp_path / "manifest.json").read_text()) == {"status": "complete"}
    assert not list(tmp_path.glob(".*.tmp"))


def test_rewriting_copies_each_record_as_written_grouped_in_plan_order(tmp_path: Path) -> None:
    import json as _json

    from harness.records import rewrite_records

    lines = [
        _json.dumps({"chronology": "c", "policy": p, "model": "m", "repetition": 1, "n": n}, ensure_ascii=False)
        for n, p in enumerate(["b", "a", "b", "gone", "a"])
    ]
    (tmp_path / "calls.jsonl").write_text("\n".join(lines) + "\n" + '{"chronology": "c", "pol', encoding="utf-8")
    rewrite_records(tmp_path, {("c", "a", "m", 1): 0, ("c", "b", "m", 1): 1})
    assert (tmp_path / "calls.jsonl").read_text(encoding="utf-8").splitlines() == [
        lines[1],
        lines[4],
        lines[0],
        lines[2],
    ]
