"""A response cache, so a rerun does not pay for the same model calls twice.

Keyed by the model's identity (endpoint, model, sampling parameters), the call kind, the exact
messages and the repetition index: repetitions stay independent samples. Only models that
declare a `cache_identity` are cached; the offline `reference` model is never cached (it is
free, and its scripted outputs are not part of the messages).

Rows live in the `responses_v2` table: usage as checked by `harness.usage` (a count, or None
with the invalid raw value beside it) and texts as the model returned them after redaction.
The first table (`responses`) held usage unchecked and texts unredacted; it is dropped when a
cache is opened (with SQLite's secure delete, so its text does not linger in free pages), and
what it held is asked again, never served.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

from harness.models import CallRequest, Completion
from harness.usage import Usage, parse_usage

SCHEMA = "CREATE TABLE IF NOT EXISTS responses_v2 (key TEXT PRIMARY KEY, text TEXT NOT NULL, " \
         "prompt_tokens INTEGER, completion_tokens INTEGER, usage_reported INTEGER NOT NULL, " \
         "usage_invalid TEXT)"  # fmt: skip


def cache_key(identity: dict[str, Any], request: CallRequest, repetition: int) -> str:
    """A stable digest of everything that determines a response."""
    material = {
        "model": identity, "kind": request.kind, "repetition": repetition,
        "messages": [m.as_openai() for m in request.messages],
    }  # fmt: skip
    if request.schema is not None:  # the structured output asked for shapes the reply
        material["schema"] = request.schema
    return hashlib.sha256(json.dumps(material, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


class ResponseCache:
    """An SQLite file of responses; safe to share between threads."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, check_same_thread=False)
        self._db.execute("PRAGMA secure_delete = ON")  # a dropped row's text must not linger in free pages
        self._db.execute("DROP TABLE IF EXISTS responses")
        self._db.execute(SCHEMA)
        self._db.commit()
        self._lock = threading.Lock()

    def get(self, key: str) -> Completion | None:
        with self._lock:
            row = self._db.execute(
                "SELECT text, prompt_tokens, completion_tokens, usage_reported, usage_invalid FROM responses_v2 "
                "WHERE key = ?", (key,)
            ).fetchone()
        if row is None:
            return None
        text, prompt, completion, reported, invalid = row
        return Completion(text, _stored_usage(prompt, completion, invalid) if reported else None, attempts=0)

    def put(self, key: str, completion: Completion) -> None:
        usage = completion.usage
        invalid = json.dumps(dict(usage.invalid), ensure_ascii=False) if usage and usage.invalid else None
        values = (key, completion.text, usage.prompt_tokens if usage else None,
                  usage.completion_tokens if usage else None, int(usage is not None), invalid)  # fmt: skip
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO responses_v2 VALUES (?, ?, ?, ?, ?, ?)", values)
            self._db.commit()

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _stored_usage(prompt: object, completion: object, invalid: str | None) -> Usage:
    """A row's usage, checked again: a count changed on disk into a non-count becomes invalid."""
    checked = parse_usage({"prompt_tokens": prompt, "completion_tokens": completion}) or Usage(None, None)
    stored = json.loads(invalid) if invalid else {}
    return Usage(checked.prompt_tokens, checked.completion_tokens, {**stored, **checked.invalid})
