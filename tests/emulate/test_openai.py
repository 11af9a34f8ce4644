"""The emulated Responses API through the official SDK: answers from the offline model, items read
as the API reads them, chained responses, truncation, the output cap, and refusals worded and
shaped as OpenAI's."""

from __future__ import annotations

from typing import Any

import openai
import pytest

from harness.emulate.openai import OpenAIEmulator
from tests.emulate.openai_client import created, openai_client, replayed, user

RULE = "Never truncate the orders table."
ASK = "Can I truncate the orders table?"


def test_a_plain_request_is_answered_by_the_reference_model_with_usage_counted_as_an_estimate() -> None:
    with openai_client() as client:
        response = created(client, model="gpt-5.4", input=f"{RULE} {ASK}")
    assert response.status == "completed" and response.object == "response" and response.model == "gpt-5.4"
    assert response.output_text == f'No — "{RULE[:-1]}"'
    assert [item.type for item in response.output] == ["message"]
    usage = response.usage
    assert usage is not None and usage.input_tokens == -(-len(f"{RULE} {ASK}") // 4)  # characters/4, rounded up
    assert usage.output_tokens == -(-len(response.output_text) // 4)
    assert usage.total_tokens == usage.input_tokens + usage.output_tokens
    assert usage.input_tokens_details.cached_tokens == 0 and usage.output_tokens_details.reasoning_tokens == 0


def test_every_item_kind_is_read_and_the_output_goes_back_as_input() -> None:
    items: list[dict[str, Any]] = [
        {"role": "system", "content": "You help with databases."},
        {"role": "developer", "content": [{"type": "input_text", "text": RULE}]},
        user("Look the database up."),
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"type": "function_call", "call_id": "call_1", "name": "lookup", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "database=Orders"},
        {"role": "assistant", "content": [{"type": "output_text", "text": "Found it."}]},
        user("Which database?"),
    ]
    with openai_client() as client:
        first = created(client, model="m", input=items)
        second = created(client, model="m", input=[*items, *replayed(first), user(ASK)])
    assert first.output_text == "database=Orders"  # read from the tool's output
    assert second.output_text == f'No — "{RULE[:-1]}"'  # read from the developer message


def test_a_stored_response_chains_by_id_and_instructions_are_not_carried_over() -> None:
    with openai_client() as client:
        first = created(client, model="m", input=RULE, instructions="database=Billing")
        chained = created(client, model="m", input=ASK, previous_response_id=first.id)
        without = created(client, model="m", input="Which database?", previous_response_id=first.id)
        unstored = created(client, model="m", input=RULE, store=False)
        with pytest.raises(openai.BadRequestError) as lost:
            client.responses.create(model="m", input=ASK, previous_response_id=unstored.id)
    assert chained.output_text == f'No — "{RULE[:-1]}"' and chained.previous_response_id == first.id
    assert without.output_text == "no database in my context"
    assert lost.value.code == "previous_response_not_found"


def test_truncation_auto_drops_items_from_the_start_and_disabled_refuses_the_request() -> None:
    filler = [user(f"Note {n}: the nightly export ran without trouble today.") for n in range(6)]
    items = [user(RULE), *filler, user(ASK)]
    with openai_client(OpenAIEmulator(context_window=60)) as client:
        truncated = created(client, model="m", input=items, truncation="auto")
        with pytest.raises(openai.BadRequestError) as refused:
            client.responses.create(model="m", input=items, truncation="disabled")
        whole = created(client, model="m", input=[user(RULE), user(ASK)])
    assert truncated.output_text.startswith("Yes") and truncated.truncation == "auto"  # the rule was dropped
    assert truncated.usage is not None and truncated.usage.input_tokens <= 60
    assert refused.value.code == "context_length_exceeded" and refused.value.param == "input"
    assert whole.output_text.startswith("No")


def test_an_answer_longer_than_max_output_tokens_is_cut_and_the_response_incomplete() -> None:
    rule = "Never truncate the orders table of the billing database during the nightly maintenance window."
    with openai_client() as client:
        response = created(client, model="m", input=[user(rule), user(ASK)], max_output_tokens=16)
    assert response.status == "incomplete"
    assert response.incomplete_details is not None and response.incomplete_details.reason == "max_output_tokens"
    assert len(response.output_text) == 64 and response.output[0].status == "incomplete"  # type: ignore[union-attr]


REFUSALS = [
    ({"input": "hi"}, "model", "missing_required_parameter", "Missing required parameter: 'model'."),
    (
        {"model": "m", "input": [{"type": "web_search_call", "id": "ws_1"}]},
        "input[0].type",
        "invalid_value",
        "Invalid value: 'web_search_call'. Supported values are: 'message', 'function_call', "
        "'function_call_output', 'compaction', and 'reasoning'.",
    ),
    (
        {"model": "m", "input": [{"role": "tool", "content": "x"}]},
        "input[0].role",
        "invalid_value",
        "Invalid value: 'tool'. Supported values are: 'assistant', 'system', 'developer', and 'user'.",
    ),
    (
        {"model": "m", "input": [{"type": "function_call_output", "call_id": "call_9", "output": "ok"}]},
        "input",
        None,
        "No tool call found for function call output with call_id call_9.",
    ),
    (
        {"model": "m", "input": [{"type": "function_call", "call_id": "call_1", "name": "f", "arguments": "{}"}]},
        "input",
        None,
        "No tool output found for function call call_1.",
    ),
    (
        {"model": "m", "input": "hi", "context_management": [{"type": "compaction", "compact_threshold": "100"}]},
        "context_management[0].compact_threshold",
        "invalid_type",
        "Invalid type for 'context_management[0].compact_threshold': expected an integer, but got a string instead.",
    ),
    (
        {"model": "m", "input": "hi", "context_management": [{"type": "compaction", "compact_threshold": 0}]},
        "context_management[0].compact_threshold",
        "integer_below_min_value",
        "Invalid 'context_management[0].compact_threshold': integer below minimum value. Expected a value >= 1, "
        "but got 0 instead.",
    ),
    (
        {"model": "m", "input": "hi", "context_management": [{"type": "clear"}]},
        "context_management[0].type",
        "invalid_value",
        "Invalid value: 'clear'. Supported values are: 'compaction'.",
    ),
    (
        {"model": "m", "input": "hi", "truncation": "sometimes"},
        "truncation",
        "invalid_value",
        "Invalid value: 'sometimes'. Supported values are: 'auto', and 'disabled'.",
    ),
    (
        {"model": "m", "input": "hi", "max_output_tokens": 5},
        "max_output_tokens",
        "integer_below_min_value",
        "Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 16, but got 5 instead.",
    ),
    (
        {"model": "m", "input": [{"type": "compaction", "encrypted_content": "bm90IG91cnM="}]},
        "input[0].encrypted_content",
        "invalid_encrypted_content",
        "The encrypted content for item input[0] could not be verified.",
    ),
]


@pytest.mark.parametrize(("params", "param", "code", "message"), REFUSALS, ids=[r[1] for r in REFUSALS])
def test_an_invalid_request_is_refused_as_the_api_refuses_it(
    params: dict[str, Any], param: str, code: str | None, message: str
) -> None:
    with openai_client() as client, pytest.raises(openai.BadRequestError) as refused:
        client.responses.create(**params)
    assert refused.value.status_code == 400
    assert refused.value.body == {"message": message, "type": "invalid_request_error", "param": param, "code": code}


def test_an_unknown_parameter_and_an_unemulated_one_are_refused_not_ignored() -> None:
    with openai_client() as client:
        with pytest.raises(openai.BadRequestError) as unknown:
            client.responses.create(model="m", input="hi", extra_body={"colour": "blue"})
        with pytest.raises(openai.BadRequestError) as unemulated:
            client.responses.create(model="m", input="hi", background=True)
    assert unknown.value.code == "unknown_parameter" and unknown.value.param == "colour"
    assert unemulated.value.param == "background" and "does not emulate" in unemulated.value.message


def test_an_unknown_route_is_not_found() -> None:
    with openai_client() as client, pytest.raises(openai.NotFoundError):
        client.models.list()
