"""The response cache: what it keeps, and what it never serves again."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from harness.cache import ResponseCache
from harness.models import Completion, Usage

FIRST_SCHEMA = ("CREATE TABLE responses (key TEXT PRIMARY KEY, text TEXT NOT NULL, prompt_tokens INTEGER, "
                "completion_tokens INTEGER, usage_reported INTEGER NOT NULL)")  # fmt: skip


def test_a_response_comes_back_with_its_usage_and_invalid_raw_values(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "responses.sqlite")
    cache.put("k", Completion("text", Usage(None, 3, {"prompt_tokens": str(10**30)}), attempts=2))
    cache.put("none", Completion("text"))
    assert cache.get("k") == Completion("text", Usage(None, 3, {"prompt_tokens": str(10**30)}), attempts=0)
    assert cache.get("none") == Completion("text", None, attempts=0) and cache.get("other") is None
    cache.close()


def test_the_first_tables_unchecked_rows_are_dropped_and_leave_no_trace_on_disk(tmp_path: Path) -> None:
    path = tmp_path / "responses.sqlite"
    with sqlite3.connect(path) as db:  # as an earlier version left it: a key echoed in an answer, usage -20
        db.execute(FIRST_SCHEMA)
        db.execute("INSERT INTO responses VALUES ('k', 'echo sk-OLD-SECRET-KEY', -20, 1, 1)")
    db.close()
    cache = ResponseCache(path)
    assert cache.get("k") is None
    cache.close()
    assert b"sk-OLD-SECRET-KEY" not in path.read_bytes()


def test_a_count_changed_on_disk_into_a_non_count_comes_back_invalid(tmp_path: Path) -> None:
    path = tmp_path / "responses.sqlite"
    cache = ResponseCache(path)
    cache.put("k", Completion("text", Usage(5, 3)))
    cache.close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE responses_v2 SET prompt_tokens = -5")
    db.close()
    cache = ResponseCache(path)
    assert cache.get("k") == Completion("text", Usage(None, 3, {"prompt_tokens": "-5"}), attempts=0)
    cache.close()
