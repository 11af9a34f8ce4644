"""Which model answered: a stored response is served only by the model that answers live."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from harness.base.messages import Message
from harness.models import Completion
from harness.models.cache import ResponseCache
from harness.models.options import Models
from harness.models.served import LiveModels, ServedBy, listing_digest
from harness.policy.tokens import TokenCounter
from harness.results.rows import CallRecord
from harness.run.calls import Caller
from harness.run.conversation import Conversation
from tests.conftest import builtin_registry, chronology, user
from tests.scripted import ScriptedModel

TURN = user(1, "hello")


def named(served_as: str) -> ScriptedModel:
    """A cacheable model whose replies name `served_as`, like an endpoint's `model` field."""
    return ScriptedModel(
        "openai:m",
        lambda request: Completion(f"{served_as}: {request.messages[-1].content}", response_model=served_as),
        cache_identity={"endpoint": "http://127.0.0.1:1/v1", "model": "m"},
    )


class Sink(list):
    """The results writer's `call`, kept in memory as the record it writes."""

    def call(self, record: CallRecord) -> None:
        self.append(record.as_record())


def ask(model: ScriptedModel, cache: ResponseCache, *texts: str) -> Sink:
    conversation = Conversation(chronology(TURN), builtin_registry().parse("full-history"), "m", 1)
    sink = Sink()
    caller = Caller(conversation, Models(model), TokenCounter(), sink, cache)  # type: ignore[arg-type]
    for text in texts:
        caller.for_turn(TURN).call("critic", (Message("user", text),))
    return sink


def test_a_stored_response_of_another_model_is_refused_and_asked_again(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite"
    first = ResponseCache(path)
    ask(named("small-a"), first, "one", "two")
    first.close()
    swapped, cache = named("small-b"), ResponseCache(path)  # a new run: the same URL and name, other weights
    records = ask(swapped, cache, "one", "two")
    cache.close()
    assert [r["cached"] for r in records] == [False, False] and len(swapped.requests) == 2
    assert records[1]["response"] == "small-b: two"
    assert "cached response not served: it came from model small-a" in records[1]["notes"][0]


def test_the_same_model_is_served_from_the_cache_after_one_live_call(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite"
    first = ResponseCache(path)
    ask(named("small-a"), first, "one", "two", "three")
    first.close()
    again, cache = named("small-a"), ResponseCache(path)
    records = ask(again, cache, "one", "two", "three")
    cache.close()
    # No listing to read: the first call asks live, to learn which model answers; the rest are served.
    assert [r["cached"] for r in records] == [False, True, True] and records[1]["notes"] == []


def test_a_listing_decides_before_any_live_response() -> None:
    live = LiveModels()
    stored = ServedBy("m", None, "abc")
    assert live.verdict("s", stored, "abc") is None
    assert "listing is now" in str(live.verdict("s", stored, "def"))
    assert live.verdict("s", stored, None) == "unknown"
    live.learn("s", ServedBy("m", "fp2", "abc"))
    assert "now answers as model m, fingerprint fp2" in str(live.verdict("s", stored, "abc"))


def test_a_listing_digest_reads_stable_fields_of_the_named_entry_or_of_all() -> None:
    one = {"data": [{"id": "a.gguf", "created": 1, "meta": {"n_params": 135}}]}
    same = {"data": [{"id": "a.gguf", "created": 2, "meta": {"n_params": 135}}]}
    assert listing_digest(one, "x") == listing_digest(same, "x")  # `created` is the time of the request
    assert listing_digest({"data": [{"id": "b.gguf", "meta": {"n_params": 360}}]}, "x") != listing_digest(one, "x")
    offered = {"data": [{"id": "gpt-x"}, {"id": "new-model"}]}
    assert listing_digest(offered, "gpt-x") == listing_digest({"data": [{"id": "gpt-x"}]}, "gpt-x")
    assert listing_digest({"error": "no"}, "x") is None and listing_digest([], "x") is None


class Alias(ScriptedModel):
    """An endpoint whose alias `gpt-x` answers as `served_as`; its `/v1/models` listing never changes."""

    def __init__(self, served_as: str) -> None:
        super().__init__(
            "openai:gpt-x",
            lambda request: Completion(f"{served_as}: {request.messages[-1].content}", response_model=served_as),
            cache_identity={"endpoint": "http://127.0.0.1:1/v1", "model": "gpt-x"},
        )

    def listing(self) -> str:
        return "same-listing-digest"


def test_an_alias_that_moved_behind_an_unchanged_listing_is_asked_live_and_said(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite"
    first = ResponseCache(path)
    ask(Alias("gpt-x-2025-01"), first, "one", "two")
    first.close()
    moved, cache = Alias("gpt-x-2025-06"), ResponseCache(path)  # the alias now resolves to other weights
    records = ask(moved, cache, "one", "two")
    cache.close()
    assert [r["cached"] for r in records] == [False, False] and len(moved.requests) == 2
    assert [r["response"] for r in records] == ["gpt-x-2025-06: one", "gpt-x-2025-06: two"]
    for record in records:
        assert "it came from model gpt-x-2025-01" in record["notes"][0]
        assert "now answers as model gpt-x-2025-06" in record["notes"][0]


def test_an_alias_that_stayed_is_served_after_one_live_call(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite"
    first = ResponseCache(path)
    ask(Alias("gpt-x-2025-01"), first, "one", "two", "three")
    first.close()
    same, cache = Alias("gpt-x-2025-01"), ResponseCache(path)
    records = ask(same, cache, "one", "two", "three")
    cache.close()
    assert [r["cached"] for r in records] == [False, True, True] and records[0]["notes"] == []


def test_a_name_answered_as_asked_is_served_on_the_listing_alone(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite"
    first = ResponseCache(path)
    ask(Alias("gpt-x"), first, "one", "two")
    first.close()
    again, cache = Alias("gpt-x"), ResponseCache(path)  # llama.cpp and vLLM answer with the name asked
    records = ask(again, cache, "one", "two")
    cache.close()
    assert [r["cached"] for r in records] == [True, True] and again.requests == []


def test_a_damaged_row_is_asked_again_and_the_call_says_why(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite"
    first = ResponseCache(path)
    ask(named("small-a"), first, "one")
    first.close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE responses_v3 SET text = 'small-a: something else'")  # edited on disk
    db.close()
    model, cache = named("small-a"), ResponseCache(path)
    records = ask(model, cache, "one")
    cache.close()
    assert records[0]["cached"] is False and records[0]["response"] == "small-a: one" and len(model.requests) == 1
    assert records[0]["notes"] == [
        "cached response not served: its stored row does not match the digest written with it "
        "(edited or damaged on disk); asked again"
    ]
