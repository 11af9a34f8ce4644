"""The fault switches: each reproduces a documented failure as a client meets it through the SDK."""

from __future__ import annotations

import openai
import pytest

from harness.base.errors import InputError
from harness.emulate.openai import OpenAIEmulator
from harness.emulate.openai_faults import parse_fault
from tests.emulate.openai_client import created, openai_client, replayed, user

LOOKUP = {"type": "function", "name": "lookup", "parameters": {"type": "object", "properties": {}}, "strict": False}


@pytest.mark.parametrize(
    ("fault", "error", "status", "code"),
    [
        ("rate-limit", openai.RateLimitError, 429, "rate_limit_exceeded"),
        ("server-error", openai.InternalServerError, 500, None),
        ("overloaded", openai.InternalServerError, 503, None),
    ],
)
def test_a_status_fault_answers_its_status_for_its_first_n_requests_then_the_api_answers(
    fault: str, error: type[openai.APIStatusError], status: int, code: str | None
) -> None:
    with openai_client(OpenAIEmulator(faults=[f"{fault}:2"])) as client:
        for _ in range(2):
            with pytest.raises(error) as refused:
                client.responses.create(model="m", input="hi")
            assert refused.value.status_code == status and refused.value.code == code
        answered = created(client, model="m", input="hi")
    assert answered.status == "completed"
    if fault == "rate-limit":
        assert refused.value.response.headers["retry-after"] == "1"


@pytest.mark.slow  # waits the retry-after second
def test_the_sdk_retries_a_rate_limit_after_its_retry_after() -> None:
    with openai_client(OpenAIEmulator(faults=["rate-limit:1"]), max_retries=1) as client:
        raw = client.responses.with_raw_response.create(model="m", input="hi")
    assert raw.retries_taken == 1 and raw.parse().status == "completed"


def test_without_usage_a_response_still_parses_and_says_nothing_of_its_tokens() -> None:
    """`/responses/compact` keeps its usage: the SDK's `CompactedResponse` types it as required."""
    with openai_client(OpenAIEmulator(faults=["no-usage"])) as client:
        bare = created(client, model="m", input="hi")
        compacted = client.responses.compact(model="m", input="hi")
    with openai_client(OpenAIEmulator(faults=["no-usage:1"])) as client:
        first, second = created(client, model="m", input="hi"), created(client, model="m", input="hi")
    assert bare.usage is None and compacted.usage.input_tokens == 1
    assert first.usage is None and second.usage is not None


def test_compacting_before_the_tool_output_is_in_the_chain_is_refused() -> None:
    """openai-agents-python #2317: the model called a tool; compaction ran before its output was sent."""
    with openai_client(OpenAIEmulator(faults=["unanswered-tool-call"])) as client:
        called = created(client, model="m", input="Look the order up.", tools=[LOOKUP])
        [call] = called.output
        assert call.type == "function_call" and call.name == "lookup"
        with pytest.raises(openai.BadRequestError) as refused:
            client.responses.compact(model="m", previous_response_id=called.id)
        output = {"type": "function_call_output", "call_id": call.call_id, "output": "database=Orders"}
        answered = created(client, model="m", previous_response_id=called.id, input=[output], tools=[LOOKUP])
        compacted = client.responses.compact(model="m", previous_response_id=answered.id)
    assert refused.value.message.endswith(f"No tool output found for function call {call.call_id}.")
    assert refused.value.type == "invalid_request_error" and refused.value.param == "input"
    assert answered.output_text and compacted.output[-1].type == "compaction"


def test_a_compacted_history_keeping_message_ids_without_their_reasoning_breaks_the_session() -> None:
    """openai-agents-python #2727: gpt-5.4's compact kept assistant message ids, stripped reasoning."""
    with openai_client(OpenAIEmulator(faults=["orphaned-message-ids"])) as client:
        first = created(client, model="m", input="database=Billing")
        assert [item.type for item in first.output] == ["reasoning", "message"]
        history = [user("database=Billing"), *replayed(first), user("customer=Acme")]
        created(client, model="m", input=history)  # with its reasoning item, the message is accepted
        body = client.responses.with_raw_response.compact(model="m", input=history).http_response.json()
        kept = body["output"]
        assert [item.get("role", item["type"]) for item in kept] == ["user", "assistant", "user", "compaction"]
        message_id = first.output[1].id
        failures = []
        for turn in ("Which database?", "Which customer?"):
            with pytest.raises(openai.BadRequestError) as refused:
                client.responses.create(model="m", input=[*kept, user(turn)])
            failures.append(refused.value.body["message"])  # type: ignore[index]
    reasoning_id = first.output[0].id
    expected = (
        f"Item '{message_id}' of type 'message' was provided without its required 'reasoning' item: '{reasoning_id}'."
    )
    assert failures == [expected, expected]  # every later request: the session is broken for good


def test_without_the_fault_compact_keeps_only_user_messages_and_the_session_goes_on() -> None:
    with openai_client() as client:
        first = created(client, model="m", input="database=Billing")
        history = [user("database=Billing"), *replayed(first), user("customer=Acme")]
        kept = client.responses.with_raw_response.compact(model="m", input=history).http_response.json()["output"]
        answered = created(client, model="m", input=[*kept, user("Which database?")])
    assert [item.get("role", item["type"]) for item in kept] == ["user", "user", "compaction"]
    assert answered.output_text == "database=Billing"


@pytest.mark.parametrize("spec", ["no-such-fault", "rate-limit:0", "rate-limit:x", "Rate-Limit"])
def test_an_unknown_fault_is_refused_naming_the_known_ones(spec: str) -> None:
    with pytest.raises(InputError, match="unknown fault; use NAME or NAME:N with NAME one of unanswered-tool-call"):
        parse_fault(spec)


def test_a_fault_given_twice_is_refused() -> None:
    with pytest.raises(InputError, match="given twice"):
        OpenAIEmulator(faults=["rate-limit", "rate-limit:2"])
