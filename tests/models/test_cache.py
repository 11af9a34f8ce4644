"""The response cache: keyed by everything that determines a response, and nothing else; what it
keeps, and what it never serves again."""

from __future__ import annotations

import dataclasses
import os
import sqlite3
from pathlib import Path

import pytest

from harness.base.errors import InputError
from harness.base.messages import Message
from harness.models import CallRequest, Completion, ProviderRequest, Usage
from harness.models.cache import CacheUnusable, Damaged, ResponseCache, cache_key
from harness.models.served import ServedBy
from tests.conftest import user

FIRST_SCHEMA = (
    "CREATE TABLE responses (key TEXT PRIMARY KEY, text TEXT NOT NULL, prompt_tokens INTEGER, "
    "completion_tokens INTEGER, usage_reported INTEGER NOT NULL)"
)

IDENTITY = {"endpoint": "http://127.0.0.1:1/v1", "model": "m", "seed": 0, "temperature": 0.0, "max_tokens": None}
REQUEST = CallRequest("answer", (Message("user", "hello", origin="current", turn=1),), user(1, "hello"))


def test_the_key_is_stable_and_ignores_what_the_endpoint_never_sees() -> None:
    elsewhere = dataclasses.replace(
        REQUEST, messages=(Message("user", "hello", origin="history", turn=9),), turn=user(7, "other")
    )
    assert cache_key(IDENTITY, REQUEST, 1) == cache_key(dict(reversed(IDENTITY.items())), elsewhere, 1)


@pytest.mark.parametrize(
    "change",
    [
        lambda i, r, n: ({**i, "model": "m2"}, r, n),
        lambda i, r, n: ({**i, "temperature": 0.5}, r, n),
        lambda i, r, n: (i, dataclasses.replace(r, kind="summarizer"), n),
        lambda i, r, n: (i, dataclasses.replace(r, messages=(Message("user", "hello!"),)), n),
        lambda i, r, n: (i, dataclasses.replace(r, schema={"type": "object"}), n),
        lambda i, r, n: (i, r, n + 1),  # repetitions stay independent samples
        lambda i, r, n: (i, dataclasses.replace(r, provider=ProviderRequest("anthropic", {"compaction": {}})), n),
    ],
    ids=["model", "sampling", "role", "messages", "schema", "repetition", "provider-extras"],
)
def test_the_key_changes_with_anything_that_determines_the_response(change) -> None:
    assert cache_key(*change(IDENTITY, REQUEST, 1)) != cache_key(IDENTITY, REQUEST, 1)


def test_the_key_names_the_policy_only_when_each_policy_draws_its_own_samples() -> None:
    """By default two policies sending the same request share one response (one sampled answer);
    `--independent-samples` puts the policy's label in the key, so each gets its own."""
    shared = cache_key(IDENTITY, REQUEST, 1)
    assert cache_key(IDENTITY, REQUEST, 1, policy=None) == shared
    apart = {cache_key(IDENTITY, REQUEST, 1, policy=label) for label in ("full-history", "last-turns:turns=3")}
    assert len(apart) == 2 and shared not in apart


def test_a_key_without_a_policy_is_the_one_earlier_versions_stored() -> None:
    """Adding the option changed no default key: a cache filled before it still serves."""
    assert cache_key(IDENTITY, REQUEST, 1) == "a7556bc667812beb660d933acdf83c8862fe5d4d6b8a1797d588bb98ecd4b889"


def test_the_key_holds_the_cap_of_its_own_call_kind_only() -> None:
    caps = {**IDENTITY, "max_tokens": {"answer": 512, "judge": 48}}
    assert cache_key(caps, REQUEST, 1) == cache_key({**IDENTITY, "max_tokens": 512}, REQUEST, 1)
    assert cache_key(caps, REQUEST, 1) == cache_key({**caps, "max_tokens": {"answer": 512, "judge": 32}}, REQUEST, 1)
    assert cache_key(caps, REQUEST, 1) != cache_key({**caps, "max_tokens": {"answer": 256}}, REQUEST, 1)


@pytest.mark.parametrize(
    "usage",
    [Usage(12, 3), Usage(12, None), None, Usage(12, 3, cached_input=8, cache_write=0), Usage(12, 3, cached_input=8)],
    ids=["reported", "partial", "unknown", "prompt-cache", "prompt-cache-read-only"],
)
def test_a_response_comes_back_as_stored_across_instances(tmp_path: Path, usage: Usage | None) -> None:
    path = tmp_path / "cache" / "responses.sqlite"
    first = ResponseCache(path)
    first.put("k", Completion("text", usage, attempts=3))
    first.close()
    again = ResponseCache(path)
    assert again.get("k") == (Completion("text", usage, attempts=0), None)  # served, not requested: no attempts
    assert again.get("other") is None
    again.close()


def test_what_the_provider_reported_of_a_policys_extras_is_served_with_the_response(tmp_path: Path) -> None:
    """A provider policy reconciles its prediction with it (`applied_edits`), whether the answer is
    live or served from the cache."""
    cache = ResponseCache(tmp_path / "r.sqlite")
    reply = {"applied_edits": [{"type": "clear_tool_uses_20250919", "cleared_tool_uses": 2, "cleared_input_tokens": 9}]}
    cache.put("k", Completion("text", Usage(5, 1), provider_reply=reply))
    assert cache.get("k") == (Completion("text", Usage(5, 1), attempts=0, provider_reply=reply), None)


def test_a_later_put_replaces_the_response(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "r.sqlite")
    cache.put("k", Completion("old"))
    cache.put("k", Completion("new", Usage(1, 1)))
    assert cache.get("k") == (Completion("new", Usage(1, 1), attempts=0), None)


def test_a_response_comes_back_with_its_usage_and_invalid_raw_values(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "responses.sqlite")
    cache.put("k", Completion("text", Usage(None, 3, {"prompt_tokens": str(10**30)}), attempts=2))
    cache.put("none", Completion("text"))
    assert cache.get("k") == (Completion("text", Usage(None, 3, {"prompt_tokens": str(10**30)}), attempts=0), None)
    assert cache.get("none") == (Completion("text", None, attempts=0), None) and cache.get("other") is None
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


def test_a_count_changed_on_disk_in_a_row_without_a_digest_comes_back_invalid(tmp_path: Path) -> None:
    path = tmp_path / "responses.sqlite"
    cache = ResponseCache(path)
    cache.put("k", Completion("text", Usage(5, 3)))
    cache.close()
    with sqlite3.connect(path) as db:  # a row written before rows carried a digest, then edited
        db.execute("UPDATE responses_v3 SET prompt_tokens = -5, digest = NULL")
    db.close()
    cache = ResponseCache(path)
    assert cache.get("k") == (Completion("text", Usage(None, 3, {"prompt_tokens": "-5"}), attempts=0), None)
    cache.close()


STORED_NOTE = (
    "the stored response held {} lone surrogates or bytes that are not UTF-8 (not valid Unicode); "
    "each was replaced by U+FFFD"
)


def test_a_response_with_lone_surrogates_is_stored_and_served_as_valid_text(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "responses.sqlite")
    cache.put(
        "k", Completion("half \ud800", Usage(None, None, {"prompt_tokens": '"\udfff"'}), response_model="m\ud800")
    )
    served, _ = cache.get("k")
    assert (served.text, served.response_model, served.usage.invalid) == (
        "half \ufffd",
        "m\ufffd",
        {"prompt_tokens": '"\ufffd"'},
    )
    cache.close()


@pytest.mark.parametrize(
    ("column", "stored"),
    [
        ("text", b"half \xed\xa0\x80 \xff"),  # an encoded surrogate and a stray byte: not UTF-8
        ("said", b'{"response_model": "m\\ud800 \\udfff"}'),  # JSON escapes of lone halves
    ],
)
def test_an_undigested_row_holding_invalid_unicode_is_served_valid_and_says_so(tmp_path: Path, column, stored) -> None:
    path = tmp_path / "responses.sqlite"
    cache = ResponseCache(path)
    cache.put("k", Completion("text"))
    cache.close()
    with sqlite3.connect(path) as db:
        # A row without a digest (an earlier version's): an edit of a row with one is refused instead.
        db.execute(f"UPDATE responses_v3 SET {column} = CAST(? AS TEXT), digest = NULL", (stored,))
    db.close()
    cache = ResponseCache(path)
    served, _ = cache.get("k")
    assert "\ufffd" in (served.text if column == "text" else served.response_model)
    assert served.notes == (STORED_NOTE.format(4 if column == "text" else 2),)
    (served.text + str(served.response_model)).encode("utf-8")
    cache.close()


@pytest.mark.parametrize("kind", ["symlink", "fifo"])
def test_a_cache_file_that_is_a_link_or_a_fifo_is_refused_and_left_as_it_is(tmp_path: Path, kind: str) -> None:
    from harness.base.errors import InputError

    victim = tmp_path / "victim"
    victim.write_bytes(b"")  # an empty file: SQLite would make it a database
    path = tmp_path / "cache" / "responses.sqlite"
    path.parent.mkdir()
    path.symlink_to(victim) if kind == "symlink" else os.mkfifo(path)
    with pytest.raises(InputError, match="responses.sqlite: a (symbolic link|named pipe .FIFO.), where the harness"):
        ResponseCache(path)
    assert victim.read_bytes() == b""


def test_a_cache_file_with_another_name_is_refused_and_the_other_file_left_whole(tmp_path: Path) -> None:
    """A hard link at the cache's name is another file of the user's (or another cache):
    SQLite would write its tables into it."""
    from harness.base.errors import InputError

    victim = tmp_path / "victim"
    victim.write_bytes(b"")  # an empty file: SQLite would make it a database
    path = tmp_path / "cache" / "responses.sqlite"
    path.parent.mkdir()
    os.link(victim, path)
    with pytest.raises(InputError, match=r"responses\.sqlite: a file that has another name \(a hard link\)"):
        ResponseCache(path)
    assert victim.read_bytes() == b""


EDITS = {
    "text": ("UPDATE responses_v3 SET text = 'Billing'", "does not match the digest written with it"),
    "count": ("UPDATE responses_v3 SET prompt_tokens = -5", "does not match the digest written with it"),
    "said": ("UPDATE responses_v3 SET said = '{not json', digest = NULL", "holds no JSON object in `said`"),
    "said value": ("UPDATE responses_v3 SET said = '{\"response_model\": 5}', digest = NULL", "non-text value"),
    "served_by": ("UPDATE responses_v3 SET served_by = '[1]', digest = NULL", "no JSON object in `served_by`"),
    "served_by keys": ("UPDATE responses_v3 SET served_by = '{\"x\": 1}', digest = NULL", "unreadable `served_by`"),
    "text type": ("UPDATE responses_v3 SET text = X'ff00', digest = NULL", "holds a bytes as its text"),
    "invalid": ("UPDATE responses_v3 SET usage_invalid = 'x', digest = NULL", "no JSON object in `usage_invalid`"),
    "said too deep": (  # beyond the JSON bounds: a RecursionError before
        "UPDATE responses_v3 SET said = '" + "[" * 100_000 + "]" * 100_000 + "', digest = NULL",
        "holds no JSON object in `said`",
    ),
}


@pytest.mark.parametrize("edit, why", EDITS.values(), ids=EDITS.keys())
def test_a_row_edited_on_disk_is_never_served(tmp_path: Path, edit: str, why: str) -> None:
    path = tmp_path / "responses.sqlite"
    cache = ResponseCache(path)
    cache.put("k", Completion("Reporting", Usage(5, 3), response_model="m"), ServedBy("m", None, None))
    cache.close()
    with sqlite3.connect(path) as db:
        db.execute(edit)
    db.close()
    cache = ResponseCache(path)
    found = cache.get("k")
    cache.close()
    assert isinstance(found, Damaged) and why in found.why
    assert found.note().startswith("cached response not served: its stored row ")


def test_a_cache_file_that_is_not_a_database_is_refused_with_one_message(tmp_path: Path) -> None:
    path = tmp_path / "responses.sqlite"
    path.write_bytes(b"not a database, but a file someone left here" * 100)
    with pytest.raises(CacheUnusable, match=r"responses.sqlite: SQLite cannot use it \(file is not a database\)"):
        ResponseCache(path)
    assert issubclass(CacheUnusable, InputError)  # exit status 2, before the run starts


def test_a_fault_mid_run_turns_the_cache_off_with_one_warning(tmp_path: Path) -> None:
    warnings: list[str] = []
    cache = ResponseCache(tmp_path / "responses.sqlite", warn=warnings.append)
    cache.put("small", Completion("fits"))
    pages = cache._db.execute("PRAGMA page_count").fetchone()[0]  # type: ignore[union-attr]
    cache._db.execute(f"PRAGMA max_page_count = {pages}")  # type: ignore[union-attr]  # as a full disk
    cache.put("large", Completion("x" * 100_000))  # SQLite: database or disk is full
    cache.put("later", Completion("not stored"))
    assert cache.get("small") is None and cache.get("later") is None  # off: every call is asked live
    assert len(warnings) == 1 and "turned off for the rest of this run (database or disk is full)" in warnings[0]
    cache.close()
    again = ResponseCache(tmp_path / "responses.sqlite")  # the file itself is whole
    assert again.get("small") == (Completion("fits", attempts=0), None)
    again.close()
