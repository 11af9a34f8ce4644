"""The plan-order rewrite replaces each record file through a temporary no one can plant a link at."""

from __future__ import annotations

import json
from pathlib import Path

from harness.results.order import rewrite_records


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
