"""The emulated Anthropic Messages API, driven by the official `anthropic` SDK over 127.0.0.1:
plain messages, a tool use round trip, requests refused as the API refuses them, streaming,
count_tokens, and each fault switch. Every reply parses with the SDK's own types."""

from __future__ import annotations

from typing import Any

import pytest

from harness.emulate.anthropic import AnthropicEmulator, Faults, headers_for
from harness.emulate.anthropic_view import TOKEN_COUNTER
from harness.emulate.anthropic_wire import ApiError
from tests.emulate.anthropic_fixtures import (
    EVENTS,
    ErrorResponse,
    anthropic,
    assistant,
    client,
    parsed,
    served_sdk,  # noqa: F401
    text,
    tool_result,
    tool_use,
    user,
)

RULE = "Never restart the database."


def test_a_plain_message_is_answered_by_the_reference_model_from_the_system_prompt(sdk: Any) -> None:
    raw = sdk.beta.messages.with_raw_response.create(
        model="reference", max_tokens=200, system=RULE, messages=[user("Can I restart the database?")]
    )
    message = raw.parse()
    assert message.content[0].type == "text"
    assert message.content[0].text == 'No — "Never restart the database"'
    assert message.stop_reason == "end_turn" and message.role == "assistant" and message.model == "reference"
    assert message.usage.input_tokens > 0 and message.usage.output_tokens > 0
    assert message.usage.cache_read_input_tokens == 0 and message.usage.iterations is None
    assert raw.headers["x-harness-token-counter"] == TOKEN_COUNTER


def test_a_tool_use_round_trip_answers_from_the_tool_result(sdk: Any) -> None:
    messages = [
        user("Read the runbook, then tell me: can I restart the cache?"),
        assistant(text("Reading it."), tool_use("toolu_1", path="runbook.md")),
        {"role": "user", "content": [tool_result("toolu_1", "Do not restart the cache during business hours.")]},
        assistant(text("Read.")),
        user("Can I restart the cache?"),
    ]
    message = sdk.beta.messages.create(model="reference", max_tokens=200, messages=messages)
    assert message.content[0].text.startswith('No — "Do not restart the cache')


def test_a_reply_longer_than_max_tokens_is_cut_and_says_so(sdk: Any) -> None:
    message = sdk.beta.messages.create(
        model="reference", max_tokens=2, system=RULE, messages=[user("Can I restart the database?")]
    )
    assert message.stop_reason == "max_tokens" and len(message.content[0].text) == 8


def test_reference_lossy_answers_too_and_an_unknown_model_is_not_found(sdk: Any) -> None:
    message = sdk.beta.messages.create(model="reference:lossy", max_tokens=50, messages=[user("Hello.")])
    assert message.content[0].text == "Noted."
    with pytest.raises(anthropic.NotFoundError) as refused:
        sdk.beta.messages.create(model="claude-opus-4-6", max_tokens=50, messages=[user("Hello.")])
    assert refused.value.body["error"]["type"] == "not_found_error"


REFUSED = [
    ("roles must alternate", [user("a"), user("b")]),
    ("the first message must use the user role", [assistant(text("hi")), user("a")]),
    (
        "tool_use ids were found without tool_result blocks immediately after: toolu_1",
        [user("a"), assistant(tool_use("toolu_1")), user("b")],
    ),
    (
        "unexpected tool_use_id found in tool_result blocks: toolu_9",
        [
            user("a"),
            assistant(tool_use("toolu_1")),
            {"role": "user", "content": [tool_result("toolu_1", "x"), tool_result("toolu_9", "y")]},
        ],
    ),
    (
        "tool_result block(s) provided when previous message does not contain tool_use",
        [{"role": "user", "content": [tool_result("toolu_1", "x")]}],
    ),
    (
        "tool_result blocks must come first",
        [
            user("a"),
            assistant(tool_use("toolu_1")),
            {"role": "user", "content": [text("b"), tool_result("toolu_1", "x")]},
        ],
    ),
    (
        "a thinking block cannot be sent in a user message",
        [{"role": "user", "content": [{"type": "thinking", "thinking": "t", "signature": "s"}]}],
    ),
    ("'image' blocks are not emulated", [{"role": "user", "content": [{"type": "image", "source": {}}]}]),
    ("all messages must have non-empty content", [{"role": "user", "content": []}]),
    (
        "tool changes are not emulated",
        [assistant({"type": "compaction", "content": "s", "tool_changes": [{"type": "tool_addition"}]}), user("a")],
    ),
]


@pytest.mark.parametrize(("says", "messages"), REFUSED, ids=[says for says, _ in REFUSED])
def test_a_conversation_the_api_refuses_answers_400_in_anthropics_shape(
    says: str, messages: list[dict[str, Any]]
) -> None:
    with pytest.raises(ApiError) as refused:
        AnthropicEmulator().create({"model": "reference", "max_tokens": 10, "messages": messages}, headers_for())
    assert refused.value.status == 400 and says in refused.value.message
    assert refused.value.body()["error"]["type"] == "invalid_request_error"


def test_the_sdk_sees_a_refusal_as_a_bad_request_with_the_apis_error_body(sdk: Any) -> None:
    with pytest.raises(anthropic.BadRequestError) as refused:
        sdk.beta.messages.create(model="reference", max_tokens=10, messages=[user("a"), user("b")])
    body = refused.value.body
    assert ErrorResponse.model_validate(body).request_id.startswith("req_emulated_")
    assert {key: body[key] for key in ("type", "error")} == {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "messages.1: roles must alternate between user and assistant",
        },
    }


def test_the_version_header_is_required_and_max_tokens_too() -> None:
    emulator, body = AnthropicEmulator(), {"model": "reference", "max_tokens": 10, "messages": [user("a")]}
    with pytest.raises(ApiError, match="anthropic-version: header is required"):
        emulator.create(body, {})
    with pytest.raises(ApiError, match="max_tokens: Field required"):
        emulator.create({**body, "max_tokens": None}, headers_for())


def test_a_streamed_reply_is_every_event_the_sdk_types_and_adds_up_to_the_whole_reply(sdk: Any) -> None:
    request = {
        "model": "reference",
        "max_tokens": 200,
        "system": RULE,
        "messages": [user("Can I restart the database?")],
    }
    whole = sdk.beta.messages.create(**request)
    with sdk.beta.messages.with_streaming_response.create(**request, stream=True) as raw:
        lines = [line for line in raw.iter_lines() if line.startswith("data: ")]
    with sdk.beta.messages.stream(**request) as stream:
        final = stream.get_final_message()
    kinds = [EVENTS.validate_json(line.removeprefix("data: ")).type for line in lines if '"ping"' not in line]
    assert kinds[0] == "message_start" and kinds[-2:] == ["message_delta", "message_stop"]
    assert kinds.count("content_block_delta") > 1  # the text arrives in pieces
    assert any('"type": "ping"' in line for line in lines)
    assert final.content[0].text == whole.content[0].text and final.stop_reason == "end_turn"
    assert final.usage.output_tokens == whole.usage.output_tokens


def test_count_tokens_gives_the_input_tokens_a_message_is_billed_for(sdk: Any) -> None:
    request = {"model": "reference", "system": RULE, "messages": [user("Can I restart the database?")]}
    counted = sdk.beta.messages.count_tokens(**request)
    message = sdk.beta.messages.create(**request, max_tokens=100)
    assert counted.input_tokens == message.usage.input_tokens == 14  # (27 + 27) characters / 4, rounded up
    assert counted.context_management is None


def test_a_rate_limit_answers_429_with_retry_after_and_the_sdk_retries_after_it() -> None:
    with client(Faults(rate_limited=1)) as sdk, pytest.raises(anthropic.RateLimitError) as limited:
        sdk.beta.messages.create(model="reference", max_tokens=10, messages=[user("a")])
    assert limited.value.response.headers["retry-after"] == "1"
    assert limited.value.body["error"]["type"] == "rate_limit_error"


@pytest.mark.slow  # waits the retry-after second
def test_the_sdk_retries_a_rate_limit_and_gets_the_answer() -> None:
    with client(Faults(rate_limited=1), max_retries=1) as sdk:
        message = sdk.beta.messages.create(model="reference", max_tokens=10, messages=[user("Hello.")])
    assert message.content[0].text == "Noted."


def test_a_server_error_answers_500_then_the_server_recovers() -> None:
    with client(Faults(server_errors=1)) as sdk:
        with pytest.raises(anthropic.InternalServerError) as failed:
            sdk.beta.messages.create(model="reference", max_tokens=10, messages=[user("a")])
        assert failed.value.status_code == 500 and failed.value.body["error"]["type"] == "api_error"
        assert sdk.beta.messages.create(model="reference", max_tokens=10, messages=[user("Hello.")]).content


def test_an_unknown_path_is_not_found() -> None:
    reply = AnthropicEmulator().handle("POST", "/v1/complete", headers_for(), b"{}")
    assert reply.status == 404 and b"not_found_error" in bytes(reply.body)  # type: ignore[arg-type]


def test_an_in_process_reply_is_the_message_the_sdk_reads() -> None:
    exchange = AnthropicEmulator().create(
        {"model": "reference", "max_tokens": 50, "messages": [user("Hello.")]}, headers_for()
    )
    assert parsed(exchange.message).content[0].text == "Noted."  # type: ignore[union-attr]
    assert [m.role for m in exchange.view] == ["user"]


@pytest.mark.parametrize(("clear_at", "answer"), [("never", "No"), ("next_user_message", "Yes")])
def test_a_system_message_cleared_at_the_next_user_message_stops_applying(clear_at: str, answer: str) -> None:
    messages = [
        user("Let us start."),
        assistant(text("Sure.")),
        {"role": "system", "content": RULE, "clear_at": clear_at},
        user("Fine."),
        assistant(text("Noted.")),
        user("Can I restart the database?"),
    ]
    exchange = AnthropicEmulator().create({"model": "reference", "max_tokens": 50, "messages": messages}, headers_for())
    assert exchange.message["content"][0]["text"].startswith(answer)
