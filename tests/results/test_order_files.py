"""The plan-order rewrite replaces each record file through a temporary no one can plant a link at,
holding a span per run of a conversation's records, not per record."""

from __future__ import annotations

import json
from pathlib import Path

from harness.results.order import record_spans, rewrite_records


def record(policy: str) -> str:
    return json.dumps({"chronology": "c", "policy": policy, "model": "m", "repetition": 1}) + "\n"


def test_a_link_planted_at_the_old_temporary_name_of_a_record_file_is_not_followed(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    run = tmp_path / "run"
    run.mkdir()
    (run / "calls.jsonl").write_text(record("b") + record("a"))
    (run / ".calls.jsonl.tmp").symlink_to(victim)
    rewrite_records(run, {("c", "a", "m", 1): 0, ("c", "b", "m", 1): 1})
    assert victim.read_text() == "precious\n"
    assert (run / "calls.jsonl").read_text() == record("a") + record("b")
    assert not (run / "calls.jsonl").is_symlink()


def test_a_conversations_records_in_a_row_are_one_span_to_copy(tmp_path: Path) -> None:
    run, line, junk = tmp_path, len(record("a")), "not a record\n"
    (run / "calls.jsonl").write_text(record("a") * 3 + record("b") * 2 + record("a") + junk + record("b"))
    order = {("c", "a", "m", 1): 0, ("c", "b", "m", 1): 1}
    _, spans = record_spans(run / "calls.jsonl", order)
    assert spans == [(0, 0, 3 * line), (1, 3 * line, 2 * line), (0, 5 * line, line), (1, 6 * line + len(junk), line)]
    rewrite_records(run, order)
    assert (run / "calls.jsonl").read_text() == record("a") * 4 + record("b") * 3
