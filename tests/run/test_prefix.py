"""The cacheable prefix of each call (harness.run.prefix): what it shares with the conversation's
previous request of its kind and session to the same model; recorded beside the provider's own
prompt-cache counts, which are never filled from it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.base.messages import Message
from harness.policy.tokens import TOKENS_PER_REQUEST, TokenCounter
from harness.run.prefix import Prefix, PrefixTracker
from tests.conftest import builtin_registry, run_through_cli
from tests.loopback import Recorded, Reply, ScriptedServer, chat_completion
from tests.paths import SHIPPED

SYSTEM = Message("system", "You are a support assistant.", origin="system")
U1, A1 = Message("user", "module=Billing"), Message("assistant", "Noted.")
U2 = Message("user", "Which module?", origin="current")


def measure(tracker: PrefixTracker, messages: list[Message], kind: str = "answer", session: str = "main") -> Prefix:
    return tracker.measure("m", kind, session, tuple(messages), tracker.counter.count(messages))


def test_a_full_history_keeps_the_whole_previous_request_as_its_prefix() -> None:
    tracker = PrefixTracker(counter := TokenCounter())
    first = [SYSTEM, U1]
    assert measure(tracker, first) == Prefix(0, 0, 0)  # nothing came before
    whole = counter.count(first)
    assert measure(tracker, [*first, A1, U2]) == Prefix(2, whole.chars, whole.tiktoken - TOKENS_PER_REQUEST)


def test_a_summary_in_place_of_the_history_breaks_the_prefix_after_the_system_message() -> None:
    tracker = PrefixTracker(TokenCounter())
    measure(tracker, [SYSTEM, U1, A1, U2])
    summary = Message("user", "Summary: module=Billing", origin="summary")
    found = measure(tracker, [SYSTEM, summary, Message("user", "Next?", origin="current")])
    assert (found.messages, found.chars) == (1, len(SYSTEM.content))


def test_a_message_recorded_with_another_origin_is_sent_alike_and_stays_in_the_prefix() -> None:
    tracker = PrefixTracker(TokenCounter())
    measure(tracker, [SYSTEM, U2])
    assert measure(tracker, [SYSTEM, Message("user", U2.content, origin="history", turn=2), A1]).messages == 2


def test_requests_of_another_kind_or_session_neither_share_nor_break_the_prefix() -> None:
    tracker = PrefixTracker(TokenCounter())
    measure(tracker, [SYSTEM, U1])
    assert measure(tracker, [Message("user", "judge this")], kind="judge").messages == 0
    assert measure(tracker, [SYSTEM, U1], session="other").messages == 0
    assert measure(tracker, [SYSTEM, U1, A1]).messages == 2


def test_without_the_encoding_the_prefix_has_no_token_count_but_its_size() -> None:
    tracker = PrefixTracker(TokenCounter("no-such-encoding"))
    measure(tracker, [SYSTEM, U1])
    assert measure(tracker, [SYSTEM, U1, A1]) == Prefix(2, len(SYSTEM.content) + len(U1.content), None)


# --- against a provider on 127.0.0.1 -------------------------------------------------------

CACHED = {"prompt_tokens_details": {"cached_tokens": 8, "cache_write_tokens": 3}}


def provider(cache_counts: dict[str, object]) -> object:
    """Replies as a provider would, its usage with `cache_counts`: JSON for a writer, text else."""

    def reply(request: Recorded) -> Reply:
        usage = {"prompt_tokens": 20, "completion_tokens": 2, **cache_counts}
        body = request.body or {}
        # a summary that changes with what it summarizes, as a model's would
        text = '{"facts": []}' if "response_format" in body else f"Noted: {len(json.dumps(body))} characters"
        return Reply(body=chat_completion(text, usage=usage))

    return reply


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as running:
        yield running


def calls(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "calls.jsonl").read_text().splitlines()]


def run_policies(server: ScriptedServer, root: Path, monkeypatch: pytest.MonkeyPatch, *policies: str) -> list[dict]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    options = ["--model", "openai:m", "--base-url", server.base_url, "--no-cache", "--no-charts"]
    options += [arg for policy in policies for arg in ("--policy", policy)]
    return calls(run_through_cli(root, [SHIPPED / "memory-drift.yaml"], "r", *options))


@pytest.mark.slow  # about 15 seconds: every policy of a plain run, each call over HTTP
def test_each_policys_calls_record_the_prefix_beside_the_providers_cache_counts(
    server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.default = provider(CACHED)
    records = run_policies(server, tmp_path, monkeypatch)  # a plain run's policies: every built-in one
    assert len({r["policy"] for r in records}) == len(builtin_registry().default_specs())
    for record in records:
        assert record["prefix_messages"] is not None and record["prefix_tiktoken_tokens"] is not None
        assert (record["reported_cached_tokens"], record["reported_cache_write_tokens"]) == (8, 3)
    answers = {
        policy: [r["prefix_messages"] for r in records if r["policy"] == policy and r["kind"] == "answer"]
        for policy in ("full-history", "summary")
    }
    assert answers["full-history"] == [0, 6, 16]  # each answer's request starts with the whole previous one
    assert answers["summary"] == [0, 1, 1]  # a new summary after the system message: only that is shared


def test_a_provider_that_reports_no_cache_counts_leaves_them_unknown_never_0(
    server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.default = provider({})
    records = run_policies(server, tmp_path, monkeypatch, "full-history", "summary")
    assert {(r["reported_cached_tokens"], r["reported_cache_write_tokens"]) for r in records} == {(None, None)}
    assert all(r["prefix_messages"] is not None for r in records)
