"""The `openai:` client's Responses API routes (a `ProviderRequest` on the call: a provider policy's answers and
compactions), against a scripted server on 127.0.0.1: the same retries, redaction and cache rules
as chat completions, the reply read as the Responses API shapes it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from harness.base.errors import ModelError
from harness.base.messages import Message
from harness.models import CallRequest, ProviderRequest, Usage
from harness.models.cache import cache_key
from harness.models.openai import OpenAIModel
from tests.conftest import user
from tests.loopback import MISSING, Reply, ScriptedServer, error_body

KEY = "sk-loopback-test-KEY-5b1d0e9f"
KEY_ENV = "HARNESS_TEST_API_KEY"
TURN = user(1, "Can I restart production now?")
MESSAGES = (Message("system", "SYS"), Message("user", "Can I restart production now?"))
ITEMS = [{"type": "compaction", "encrypted_content": "c2VhbGVk"}, {"type": "message", "role": "user", "content": "Hi"}]
ANSWER = CallRequest(
    "answer",
    MESSAGES,
    TURN,
    provider=ProviderRequest("responses", {"instructions": "SYS", "input": ITEMS, "truncation": "auto"}),
)
COMPACT = CallRequest("compaction", MESSAGES, TURN, provider=ProviderRequest("responses/compact", {"input": ITEMS}))


def response(text: str = "No.", usage: Any = MISSING, status: str = "completed", reason: str | None = None) -> dict:
    """A Responses API body: one reasoning item, then the assistant's message."""
    body: dict[str, Any] = {
        "id": "resp_loopback",
        "object": "response",
        "model": "gpt-loopback-2026",
        "status": status,
        "incomplete_details": {"reason": reason} if reason else None,
        "output": [
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "content": [{"type": "output_text", "text": text[:2], "annotations": []}]
                + [{"type": "output_text", "text": text[2:], "annotations": []}],
            },
        ],
    }
    if usage is not MISSING:
        body["usage"] = usage
    return body


def compacted(sealed: str = "ZW5jcnlwdGVk", usage: Any = MISSING) -> dict:
    """A `/responses/compact` body: the user's message kept, then the compaction item."""
    body: dict[str, Any] = {
        "id": "resp_compact",
        "object": "response.compaction",
        "output": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Hi"}]},
            {"type": "compaction", "id": "cmp_1", "encrypted_content": sealed},
        ],
    }
    if usage is not MISSING:
        body["usage"] = usage
    return body


class Sleeps(list):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as running:
        yield running


@pytest.fixture
def model(server: ScriptedServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAIModel]:
    monkeypatch.setenv(KEY_ENV, KEY)
    with OpenAIModel(
        "test-model",
        base_url=server.base_url,
        api_key_env=KEY_ENV,
        timeout=2,
        max_retries=2,
        seed=7,
        max_tokens={"answer": 300, "compaction": 50},
        backoff_base=0.01,
        sleep=Sleeps(),
    ) as model:
        yield model


def test_an_answer_with_the_responses_route_is_posted_there_with_the_runs_sampling_and_cap(model, server) -> None:
    usage = {"input_tokens": 40, "output_tokens": 3, "input_tokens_details": {"cached_tokens": 32}}
    server.enqueue(Reply(body=response("No, not now.", usage)))
    completion = model.complete(ANSWER)
    [request] = server.requests
    assert (request.method, request.path) == ("POST", "/v1/responses")
    assert request.body == {
        "model": "test-model",
        "instructions": "SYS",
        "input": ITEMS,  # the compaction item sent back as it came
        "truncation": "auto",
        "temperature": 0,
        "max_output_tokens": 300,  # the answer's cap; the Responses API takes no seed
    }
    assert completion.text == "No, not now."  # every output_text part of the message, reasoning skipped
    assert completion.usage == Usage(40, 3, cached_input=32)
    assert (completion.finish_reason, completion.response_id, completion.response_model) == (
        "stop",
        "resp_loopback",
        "gpt-loopback-2026",
    )


@pytest.mark.parametrize(("usage", "expected"), [(MISSING, None), (None, None), ({"input_tokens": 9}, Usage(9, None))])
def test_usage_a_responses_reply_leaves_out_is_unknown_never_0(model, server, usage, expected) -> None:
    server.enqueue(Reply(body=response(usage=usage)))
    assert model.complete(ANSWER).usage == expected


def test_a_reply_cut_by_max_output_tokens_finishes_with_length(model, server) -> None:
    server.enqueue(Reply(body=response(status="incomplete", reason="max_output_tokens")))
    assert model.complete(ANSWER).finish_reason == "length"  # as the reports read a cut answer


def test_a_compaction_is_posted_to_responses_compact_and_its_item_comes_back_sealed(model, server) -> None:
    server.enqueue(Reply(body=compacted("ZW5jcnlwdGVk", {"input_tokens": 120, "output_tokens": 30})))
    completion = model.complete(COMPACT)
    [request] = server.requests
    assert request.path == "/v1/responses/compact"
    assert request.body == {"model": "test-model", "input": ITEMS}  # no sampling: the endpoint takes none
    assert completion.text == "ZW5jcnlwdGVk"  # the encrypted_content, as sent: never read
    assert completion.usage == Usage(120, 30)


def test_a_compaction_reply_without_its_item_fails_and_is_not_retried(model, server) -> None:
    server.enqueue(Reply(body={"id": "resp_x", "output": []}))
    with pytest.raises(ModelError) as caught:
        model.complete(COMPACT)
    assert "no compaction item" in str(caught.value) and caught.value.attempts == 1


def test_a_429_on_the_responses_route_is_retried_like_a_chat_call(model, server) -> None:
    server.enqueue(
        Reply(status=429, headers={"Retry-After": "0"}, body=error_body("slow down", 429)),
        Reply(body=response("No.", {"input_tokens": 5, "output_tokens": 1})),
    )
    completion = model.complete(ANSWER)
    assert completion.attempts == 2 and [r.path for r in server.requests] == ["/v1/responses"] * 2


def test_the_key_echoed_in_a_responses_reply_is_redacted(model, server) -> None:
    server.enqueue(Reply(body=response(f"your key is {KEY}")))
    assert KEY not in model.complete(ANSWER).text


def test_the_cache_keys_a_routed_call_apart_from_a_chat_call_and_by_its_body() -> None:
    identity = {"endpoint": "http://127.0.0.1:1/v1", "model": "m"}
    chat = CallRequest("answer", MESSAGES, TURN)
    keys = {
        cache_key(identity, request, 1)
        for request in (
            chat,
            ANSWER,
            CallRequest("answer", MESSAGES, TURN, provider=ProviderRequest("responses", {"input": ITEMS[1:]})),
            CallRequest("answer", MESSAGES, TURN, provider=ProviderRequest("responses/compact", {"input": ITEMS})),
        )
    }
    assert len(keys) == 4
