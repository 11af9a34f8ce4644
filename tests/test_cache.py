"""The response cache: keyed by everything that determines a response, and nothing else."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from harness.cache import ResponseCache, cache_key
from harness.messages import Message
from harness.models import CallRequest, Completion, Usage
from tests.conftest import user

IDENTITY = {"endpoint": "http://127.0.0.1:1/v1", "model": "m", "seed": 0, "temperature": 0.0, "max_tokens": None}
REQUEST = CallRequest("answer", (Message("user", "hello", origin="current", turn=1),), user(1, "hello"))


def test_the_key_is_stable_and_ignores_what_the_endpoint_never_sees() -> None:
    elsewhere = dataclasses.replace(REQUEST, messages=(Message("user", "hello", origin="history", turn=9),),
                                    turn=user(7, "other"))  # fmt: skip
    assert cache_key(IDENTITY, REQUEST, 1) == cache_key(dict(reversed(IDENTITY.items())), elsewhere, 1)


@pytest.mark.parametrize("change", [
    lambda i, r, n: ({**i, "model": "m2"}, r, n),
    lambda i, r, n: ({**i, "temperature": 0.5}, r, n),
    lambda i, r, n: (i, dataclasses.replace(r, kind="summarizer"), n),
    lambda i, r, n: (i, dataclasses.replace(r, messages=(Message("user", "hello!"),)), n),
    lambda i, r, n: (i, dataclasses.replace(r, schema={"type": "object"}), n),
    lambda i, r, n: (i, r, n + 1),  # repetitions stay independent samples
], ids=["model", "sampling", "role", "messages", "schema", "repetition"])  # fmt: skip
def test_the_key_changes_with_anything_that_determines_the_response(change) -> None:
    assert cache_key(*change(IDENTITY, REQUEST, 1)) != cache_key(IDENTITY, REQUEST, 1)


@pytest.mark.parametrize("usage", [Usage(12, 3), Usage(12, None), None], ids=["reported", "partial", "unknown"])
def test_a_response_comes_back_as_stored_across_instances(tmp_path: Path, usage: Usage | None) -> None:
    path = tmp_path / "cache" / "responses.sqlite"
    first = ResponseCache(path)
    first.put("k", Completion("text", usage, attempts=3))
    first.close()
    again = ResponseCache(path)
    assert again.get("k") == Completion("text", usage, attempts=0)  # served, not requested: no attempts
    assert again.get("other") is None
    again.close()


def test_a_later_put_replaces_the_response(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "r.sqlite")
    cache.put("k", Completion("old"))
    cache.put("k", Completion("new", Usage(1, 1)))
    assert cache.get("k") == Completion("new", Usage(1, 1), attempts=0)
    cache.close()
