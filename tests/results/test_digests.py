"""The digests a results folder records of itself: of each conversation's records as the writer
appends them, of each setting of the manifest, of each conversation's own record."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path

from harness.policy.tokens import TokenCounter
from harness.results.digests import TALLIED, canonical, changed_settings, record_digest
from harness.results.writer import ResultsWriter
from harness.run.manifest import new_manifest
from tests.conftest import IDENTITY, call_record, shipped_plan, turn_row

OTHER = {**IDENTITY, "policy": "q"}


def lines_of(path: Path, policy: str) -> list[bytes]:
    return [
        line
        for line in path.read_bytes().splitlines(keepends=True)
        if f",{policy},".encode() in line or f'"policy": "{policy}"'.encode() in line
    ]


def test_a_finished_conversation_records_the_count_and_sha256_of_its_records_as_written(tmp_path: Path) -> None:
    with ResultsWriter(tmp_path) as writer:
        writer.turn(turn_row(turn=1, status="answered"))
        writer.turn(replace(turn_row(turn=1, status="answered"), policy="q"))  # another conversation between
        writer.call(call_record(kind="answer", response='a "quoted"\nanswer'))
        writer.turn(turn_row(turn=2, status="answered", policy_note="a, b"))
        writer.finished({**IDENTITY, "status": "complete"})
    record = json.loads((tmp_path / "conversations.jsonl").read_text())
    assert set(record["records"]) == set(TALLIED)
    for name, count in (("turns.csv", 2), ("calls.jsonl", 1), ("facts.jsonl", 0)):
        lines = lines_of(tmp_path / name, "p")
        assert record["records"][name] == {"count": count, "sha256": hashlib.sha256(b"".join(lines)).hexdigest()}
    assert record["sha256"] == record_digest(record)


def test_a_record_digest_is_of_its_canonical_json_so_it_survives_a_json_round_trip() -> None:
    record = {"b": (1, 2.5), "a": "café", "records": {"x": {"count": 1}}}
    assert canonical(record) == canonical(json.loads(json.dumps(record, indent=3, ensure_ascii=False)))
    assert record_digest({**record, "sha256": "anything"}) == record_digest(record)
    assert record_digest({**record, "a": "cafe"}) != record_digest(record)


def test_each_setting_has_a_digest_of_its_own_so_a_message_names_it() -> None:
    manifest = new_manifest(shipped_plan(), "r", TokenCounter())
    assert changed_settings(manifest.as_record()) == []
    assert changed_settings(replace(manifest, seed=7, live=True).as_record()) == ["seed", "live"]
    assert changed_settings(replace(manifest, status="complete", error="x").as_record()) == []  # not settings
    assert changed_settings({**manifest.as_record(), "settings_sha256": None}) != []
