"""A response cache, so a rerun does not pay for the same model calls twice.

Keyed by the model's identity (endpoint, model, sampling parameters), the call kind, the exact
messages and the repetition index: repetitions stay independent samples. The key has no policy,
so within a repetition policies that send an identical request share one response: with
sampling, one draw (common random numbers for paired comparisons, not independent answers). A
cache opened `per_policy` (`--independent-samples`) adds the policy's label to every key, so each
policy gets a response of its own. Only models that declare a `cache_identity` are cached; the
offline `reference` model is never cached (it is free, and its scripted outputs are not part
of the messages).

Rows live in the `responses_v3` table: usage as checked by `harness.models.usage` (a count, or None
with the invalid raw value beside it), texts as the model returned them after redaction, what
the endpoint said about the reply (model, fingerprint, finish reason, id, structured-output
form) and which model answered (`harness.models.served.ServedBy`: a stored response is served only
when the live endpoint answers as the same model). Earlier tables are dropped when a cache is
opened (with SQLite's secure delete, so their text does not linger in free pages), and what
they held is asked again, never served: `responses` held usage unchecked and texts unredacted,
`responses_v2` did not record which model answered.

Text is stored and served as valid Unicode (`harness.base.text.valid_unicode`): a lone surrogate
that reaches `put` is stored as U+FFFD, and a row whose text, or what the endpoint said, is not
valid Unicode (edited on disk, bytes that are not UTF-8, a JSON escape of half a UTF-16 pair) is
served with each bad character as U+FFFD and a note saying how many (`STORED_NOTE`).

The cache also holds the run's in-flight requests (`harness.models.inflight`) and what each model
answers as live (`harness.models.served.LiveModels`): both are per run, like the cache instance.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

from harness.base.files import check_own_file
from harness.base.text import valid_unicode
from harness.models import CallRequest, Completion
from harness.models.inflight import InFlight
from harness.models.served import LiveModels, ServedBy
from harness.models.usage import Usage, parse_usage

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS responses_v3 (key TEXT PRIMARY KEY, text TEXT NOT NULL, "
    "prompt_tokens INTEGER, completion_tokens INTEGER, usage_reported INTEGER NOT NULL, "
    "usage_invalid TEXT, said TEXT NOT NULL, served_by TEXT)"
)
DROPPED = ("responses", "responses_v2")
# What the endpoint said about a reply, kept with it (Completion fields).
SAID = ("response_model", "fingerprint", "finish_reason", "response_id", "structured_form")
STORED_NOTE = (
    "the stored response held {} lone surrogates or bytes that are not UTF-8 (not valid Unicode); "
    "each was replaced by U+FFFD"
)


def cache_key(identity: dict[str, Any], request: CallRequest, repetition: int, policy: str | None = None) -> str:
    """A stable digest of everything that determines a response; `policy`: the label of the policy
    that asks, when each policy draws its own samples (None: policies share, and the key is the one
    earlier versions stored)."""
    caps = identity.get("max_tokens")
    if isinstance(caps, dict):  # caps per call kind: only this call's counts (a kind not listed: the answer's)
        identity = {**identity, "max_tokens": caps.get(request.kind, caps.get("answer"))}
    material = {
        "model": identity,
        "kind": request.kind,
        "repetition": repetition,
        "messages": [m.as_openai() for m in request.messages],
    }
    if request.schema is not None:  # the structured output asked for shapes the reply
        material["schema"] = request.schema
    if policy is not None:
        material["policy"] = policy
    return hashlib.sha256(json.dumps(material, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


class ResponseCache:
    """An SQLite file of responses; safe to share between threads. `per_policy`: this run keeps
    each policy's responses apart (its callers put the policy in every key)."""

    def __init__(self, path: Path, per_policy: bool = False) -> None:
        self.per_policy = per_policy
        path.parent.mkdir(parents=True, exist_ok=True)  # --cache-dir: the user's folder, may be a link
        check_own_file(path)  # the file is the harness's: SQLite would write through a link planted there
        self._db = sqlite3.connect(path, check_same_thread=False)
        self._db.text_factory = _stored_text  # a row that is not UTF-8 is read, then made valid (`get`)
        self._db.execute("PRAGMA secure_delete = ON")  # a dropped row's text must not linger in free pages
        for table in DROPPED:
            self._db.execute(f"DROP TABLE IF EXISTS {table}")
        self._db.execute(SCHEMA)
        self._db.commit()
        self._lock = threading.Lock()
        self.inflight = InFlight()  # this run's requests in flight
        self.live = LiveModels()  # what each model answers as, in this run

    def get(self, key: str) -> tuple[Completion, ServedBy | None] | None:
        """The stored response (attempts 0: no request is made) and what answered it; None if absent."""
        with self._lock:
            row = self._db.execute(
                "SELECT text, prompt_tokens, completion_tokens, usage_reported, usage_invalid, said, served_by "
                "FROM responses_v3 WHERE key = ?",
                (key,),
            ).fetchone()
        if row is None:
            return None
        text, prompt, completion, reported, invalid, said, served = row
        text, replaced = valid_unicode(text)
        invalid, also = valid_unicode(invalid) if invalid else (invalid, 0)
        fields, more = _valid_said(said)
        stored = Completion(text, _stored_usage(prompt, completion, invalid) if reported else None, attempts=0)
        stored = replace(stored, **fields)
        if replaced + also + more:
            stored = replace(stored, notes=(STORED_NOTE.format(replaced + also + more),))
        return stored, ServedBy(**json.loads(served)) if served else None

    def put(self, key: str, completion: Completion, served: ServedBy | None = None) -> None:
        usage = completion.usage
        invalid = json.dumps(dict(usage.invalid), ensure_ascii=False) if usage and usage.invalid else None
        said = json.dumps({k: getattr(completion, k) for k in SAID}, ensure_ascii=False)
        # Valid Unicode only: SQLite stores UTF-8, which cannot hold a lone surrogate.
        text, said = valid_unicode(completion.text)[0], valid_unicode(said)[0]
        invalid = valid_unicode(invalid)[0] if invalid else None
        values = (
            key,
            text,
            usage.prompt_tokens if usage else None,
            usage.completion_tokens if usage else None,
            int(usage is not None),
            invalid,
            said,
            json.dumps(served.as_record()) if served else None,
        )
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO responses_v3 VALUES (?, ?, ?, ?, ?, ?, ?, ?)", values)
            self._db.commit()

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _valid_said(said: str) -> tuple[dict[str, Any], int]:
    """What the endpoint said about a stored reply (its `SAID` fields) as valid Unicode, and how
    many characters were not: bad bytes, or a JSON escape of half a UTF-16 pair."""
    said, replaced = valid_unicode(said)
    fields = {}
    for name, value in json.loads(said).items():
        if name not in SAID:
            continue
        if isinstance(value, str):
            value, halves = valid_unicode(value)
            replaced += halves
        fields[name] = value
    return fields, replaced


def _stored_text(data: bytes) -> str:
    """A TEXT value as SQLite holds it: UTF-8, or its bad bytes kept as lone surrogates, which
    `get` replaces and counts (SQLite's own decoding would fail the whole read)."""
    return data.decode("utf-8", "surrogateescape")


def _stored_usage(prompt: object, completion: object, invalid: str | None) -> Usage:
    """A row's usage, checked again: a count changed on disk into a non-count becomes invalid."""
    checked = parse_usage({"prompt_tokens": prompt, "completion_tokens": completion}) or Usage(None, None)
    stored = json.loads(invalid) if invalid else {}
    return Usage(checked.prompt_tokens, checked.completion_tokens, {**stored, **checked.invalid})
