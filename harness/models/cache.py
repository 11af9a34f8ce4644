"""A response cache, so a rerun does not pay for the same model calls twice.

Keyed by the model's identity (endpoint, model, sampling parameters), the call kind, the exact
messages and the repetition index: repetitions stay independent samples. The key has no policy,
so within a repetition policies that send an identical request share one response: with
sampling, one draw (common random numbers for paired comparisons, not independent answers). A
cache opened `per_policy` (`--independent-samples`) adds the policy's label to every key, so each
policy gets a response of its own. Only models that declare a `cache_identity` are cached; the
offline `reference` model and `reference:lossy` are never cached (they are free, and their
scripted outputs are not part of the messages), so no entry is shared between them.

Rows live in the `responses_v3` table: usage as checked by `harness.models.usage` (a count, or None
with the invalid raw value beside it), texts as the model returned them after redaction, what
the endpoint said about the reply (model, fingerprint, finish reason, id, structured-output
form) and which model answered (`harness.models.served.ServedBy`: a stored response is served only
when the live endpoint answers as the same model). Earlier tables are dropped when a cache is
opened (with SQLite's secure delete, so their text does not linger in free pages), and what
they held is asked again, never served: `responses` held usage unchecked and texts unredacted,
`responses_v2` did not record which model answered.

Each row carries a digest of its stored fields (`digest`), written with them: a row whose fields
no longer match it, or cannot be read back as what `put` wrote (text that is no string, `said`
that is no JSON object), was edited or damaged on disk, and is refused (`Damaged`: the caller
asks again and records why) instead of served. Rows written before the digest have none and are
read as before.

SQLite's own faults never stop a run: a cache file that is not a database, or that cannot be
opened, is refused when the run starts (`CacheUnusable`, one message naming the file); a fault
once the run is under way (a full disk, a damaged page, a lock held too long by another process)
turns the cache off for the rest of the run with one warning: later calls are asked live
and not stored.

Text is stored and served as valid Unicode (`harness.base.text.valid_unicode`): a lone surrogate
that reaches `put` is stored as U+FFFD, and a row without a digest (written by an earlier
version) whose text, or what the endpoint said, is not valid Unicode (bytes that are not UTF-8,
a JSON escape of half a UTF-16 pair) is served with each bad character as U+FFFD and a note
saying how many (`STORED_NOTE`); a row with a digest that was edited so is refused, as any edit.

The cache also holds the run's in-flight requests (`harness.models.inflight`) and what each model
answers as live (`harness.models.served.LiveModels`): both are per run, like the cache instance.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from harness.base import json_bounded
from harness.base.errors import InputError
from harness.base.files import check_own_file
from harness.base.text import valid_unicode
from harness.models import RESPONSES_ROUTES, CallRequest, Completion
from harness.models.inflight import InFlight
from harness.models.served import LiveModels, ServedBy
from harness.models.usage import Usage, parse_usage

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS responses_v3 (key TEXT PRIMARY KEY, text TEXT NOT NULL, "
    "prompt_tokens INTEGER, completion_tokens INTEGER, usage_reported INTEGER NOT NULL, "
    "usage_invalid TEXT, said TEXT NOT NULL, served_by TEXT)"
)
DROPPED = ("responses", "responses_v2")
COLUMNS = "text, prompt_tokens, completion_tokens, usage_reported, usage_invalid, said, served_by"
# What the endpoint said about a reply, kept with it (Completion fields).
SAID = ("response_model", "fingerprint", "finish_reason", "response_id", "structured_form")
# The key in `said` of a response's prompt-cache counts (`Usage.cached_input`, `cache_write`),
# present only when the provider reported one: rows without it read as before (unknown).
CACHE_COUNTS = "usage_cache"
PROVIDER_REPLY = "provider_reply"  # the key in `said` of `Completion.provider_reply`, when there is one
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
    if (route := request.for_api(*RESPONSES_ROUTES)) is not None:  # not a chat answer: its route and body shape it
        material["api"] = {"path": route.api, "body": dict(route.body)}
    elif request.provider is not None:  # a provider policy's extras shape the reply (a compaction, edits)
        sent = request.provider.messages
        material["provider"] = {
            "api": request.provider.api,
            "body": request.provider.body,
            "betas": list(request.provider.betas),
            "messages": None if sent is None else [m.as_openai() for m in sent],
        }
    if policy is not None:
        material["policy"] = policy
    return hashlib.sha256(json.dumps(material, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


class CacheUnusable(InputError):
    """The cache file cannot be opened as a response cache: the run stops before it starts."""


@dataclass(frozen=True)
class Damaged:
    """A stored row that was edited or damaged on disk: never served, asked again."""

    why: str

    def note(self) -> str:
        """The note the call that asks again records."""
        return f"cached response not served: its stored row {self.why}; asked again"


def _warn(text: str) -> None:
    """Where the cache's one warning goes by default: stderr, beside the progress lines."""
    print(text, file=sys.stderr, flush=True)


class ResponseCache:
    """An SQLite file of responses; safe to share between threads. `per_policy`: this run keeps
    each policy's responses apart (its callers put the policy in every key). `warn` is told, once,
    when a fault turns the cache off mid-run."""

    def __init__(self, path: Path, per_policy: bool = False, warn: Callable[[str], None] = _warn) -> None:
        self.per_policy = per_policy
        self.path, self.warn = path, warn
        self._lock = threading.Lock()
        self._db = _opened(path)
        self.inflight = InFlight()  # this run's requests in flight
        self.live = LiveModels()  # what each model answers as, in this run

    def get(self, key: str) -> tuple[Completion, ServedBy | None] | Damaged | None:
        """The stored response (attempts 0: no request is made) and what answered it; None if
        absent (or the cache is off); `Damaged` when the row cannot be trusted."""
        row = self._guarded(
            lambda db: db.execute(f"SELECT {COLUMNS}, digest FROM responses_v3 WHERE key = ?", (key,)).fetchone()
        )
        if row is None:
            return None
        try:
            return _stored(key, row)
        except _RowDamage as exc:
            return Damaged(str(exc))

    def put(self, key: str, completion: Completion, served: ServedBy | None = None) -> None:
        values = _row_values(completion, served)
        self._guarded(
            lambda db: db.execute(
                f"INSERT OR REPLACE INTO responses_v3 (key, {COLUMNS}, digest) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (key, *values, row_digest(key, values)),
            )
        )

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    def _guarded(self, step: Callable[[sqlite3.Connection], Any]) -> Any:
        """One statement (committed); a fault of SQLite's turns the cache off (one warning) and gives None."""
        with self._lock:
            if self._db is None:
                return None
            try:
                found = step(self._db)
                self._db.commit()
                return found
            except sqlite3.Error as exc:
                self._turn_off(exc)
                return None

    def _turn_off(self, exc: sqlite3.Error) -> None:
        """Stop using the file for the rest of the run (the lock is held)."""
        try:
            assert self._db is not None
            self._db.close()
        except sqlite3.Error:
            pass
        self._db = None
        self.warn(
            f"warning: response cache {self.path} turned off for the rest of this run ({exc}); "
            "later calls are asked live and not stored"
        )


def _opened(path: Path) -> sqlite3.Connection:
    """The cache file opened, its schema made; CacheUnusable (one message) when SQLite cannot use it."""
    db = None
    path.parent.mkdir(parents=True, exist_ok=True)  # --cache-dir: the user's folder, may be a link
    check_own_file(path)  # the file is the harness's: SQLite would write through a link planted there
    try:
        db = sqlite3.connect(path, check_same_thread=False)
        # A TEXT value as SQLite holds it: UTF-8, or its bad bytes kept as lone surrogates, which
        # `_stored` replaces and counts (SQLite's own decoding would fail the whole read).
        db.text_factory = lambda data: data.decode("utf-8", "surrogateescape")
        db.execute("PRAGMA secure_delete = ON")  # a dropped row's text must not linger in free pages
        for table in DROPPED:
            db.execute(f"DROP TABLE IF EXISTS {table}")
        db.execute(SCHEMA)
        if "digest" not in {row[1] for row in db.execute("PRAGMA table_info(responses_v3)")}:
            db.execute("ALTER TABLE responses_v3 ADD COLUMN digest TEXT")  # rows written before it have none
        db.commit()
        return db
    except (sqlite3.Error, OSError) as exc:
        if db is not None:
            db.close()
        raise CacheUnusable(
            f"response cache {path}: SQLite cannot use it ({exc}); move the file away, give another "
            "--cache-dir, or run with --no-cache"
        ) from None


def row_digest(key: str, values: tuple[Any, ...]) -> str:
    """The sha256 of a row's key and stored fields, as written: an edit on disk changes it."""
    material = json.dumps([key, *values], ensure_ascii=True)  # ASCII: any text has a form, lone surrogates too
    return hashlib.sha256(material.encode("ascii")).hexdigest()


def _row_values(completion: Completion, served: ServedBy | None) -> tuple[Any, ...]:
    """The stored fields of a response, in COLUMNS order."""
    usage = completion.usage
    invalid = json.dumps(dict(usage.invalid), ensure_ascii=False) if usage and usage.invalid else None
    said_fields: dict[str, Any] = {k: getattr(completion, k) for k in SAID}
    if usage and (usage.cached_input is not None or usage.cache_write is not None):  # else as before they existed
        said_fields[CACHE_COUNTS] = {"cached_input": usage.cached_input, "cache_write": usage.cache_write}
    if completion.provider_reply is not None:  # a provider policy reconciles with it, served or live
        said_fields[PROVIDER_REPLY] = dict(completion.provider_reply)
    said = json.dumps(said_fields, ensure_ascii=False)
    # Valid Unicode only: SQLite stores UTF-8, which cannot hold a lone surrogate.
    said, invalid = valid_unicode(said)[0], valid_unicode(invalid)[0] if invalid else None
    return (
        valid_unicode(completion.text)[0],
        usage.prompt_tokens if usage else None,
        usage.completion_tokens if usage else None,
        int(usage is not None),
        invalid,
        said,
        json.dumps(served.as_record()) if served else None,
    )


class _RowDamage(Exception):
    """Why a stored row cannot be served (its message completes `its stored row ...`)."""


def _stored(key: str, row: tuple[Any, ...]) -> tuple[Completion, ServedBy | None]:
    """A row read back as what `put` wrote; _RowDamage when it was edited or damaged."""
    *values, digest = row
    if digest is not None and digest != row_digest(key, tuple(values)):
        raise _RowDamage("does not match the digest written with it (edited or damaged on disk)")
    text, prompt, completion, reported, invalid, said, served = values
    if not isinstance(text, str):
        raise _RowDamage(f"holds a {type(text).__name__} as its text")
    # A row written before the digest (or by an older harness) may hold text that is not valid
    # Unicode: each bad character is served as U+FFFD, and the note says how many.
    text, replaced = valid_unicode(text)
    invalid, also = valid_unicode(invalid) if isinstance(invalid, str) else (invalid, 0)
    said_fields = _json_object(valid_unicode(said)[0] if isinstance(said, str) else said, "said")
    if any(k in said_fields and not isinstance(said_fields[k], str | None) for k in SAID):
        raise _RowDamage("holds a non-text value in `said`")
    fields = {}
    for name, value in said_fields.items():
        if name in SAID:
            fields[name], halves = valid_unicode(value) if isinstance(value, str) else (value, 0)
            replaced += halves
    usage = _stored_usage(prompt, completion, invalid, said_fields.get(CACHE_COUNTS)) if reported else None
    stored = Completion(text, usage, attempts=0)
    stored = replace(stored, **fields)
    if isinstance(said_fields.get(PROVIDER_REPLY), dict):
        stored = replace(stored, provider_reply=said_fields[PROVIDER_REPLY])
    if replaced + also:
        stored = replace(stored, notes=(STORED_NOTE.format(replaced + also),))
    return stored, _served_by(served)


def _json_object(value: object, column: str) -> dict[str, Any]:
    try:
        # A cache file may be damaged or someone else's: read within the bounds (a RecursionError before)
        found = json_bounded.loads(value, what=f"`{column}`") if isinstance(value, str | bytes) else None
    except ValueError:  # JsonBounded too
        found = None
    if not isinstance(found, dict):
        raise _RowDamage(f"holds no JSON object in `{column}`")
    return found


def _served_by(served: object) -> ServedBy | None:
    if served is None:
        return None
    fields = _json_object(served, "served_by")
    if set(fields) - set(ServedBy.__dataclass_fields__) or not all(isinstance(v, str | None) for v in fields.values()):
        raise _RowDamage("holds an unreadable `served_by`")
    return ServedBy(**fields)


def _stored_usage(prompt: object, completion: object, invalid: object, cache_counts: object = None) -> Usage:
    """A row's usage, checked again: a count changed on disk into a non-count becomes invalid."""
    counts = cache_counts if isinstance(cache_counts, dict) else {}
    read = {"prompt_tokens": prompt, "completion_tokens": completion}
    read |= {"cache_read_input_tokens": counts.get("cached_input"), "cache_write_tokens": counts.get("cache_write")}
    checked = parse_usage(read) or Usage(None, None)
    stored = _json_object(invalid, "usage_invalid") if invalid is not None else {}
    if not all(isinstance(v, str) for v in stored.values()):
        raise _RowDamage("holds a non-text raw value in `usage_invalid`")
    return replace(checked, invalid={**stored, **checked.invalid})
