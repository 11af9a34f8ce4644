"""Compaction, as the Responses API offers it: at a threshold inside `responses.create`, and on
demand with `responses.compact`; the summary is the reference summarizer's, sealed so that the
client cannot read it, and what follows it answers from it."""

from __future__ import annotations

import base64

import openai
import pytest
from openai.types.responses import ResponseCompactionItem, ResponseUsage
from openai.types.responses.response_input_item import Message

from harness.emulate.openai import OpenAIEmulator
from tests.emulate.openai_client import created, openai_client, replayed, user

RULE = "Never truncate the orders table."
ASK = "Can I truncate the orders table?"
NO = f'No — "{RULE[:-1]}"'
HISTORY = [user(RULE), {"role": "assistant", "content": "Noted."}, user("database=Billing")]
THRESHOLD = [{"type": "compaction", "compact_threshold": 10}]


def test_crossing_the_threshold_puts_a_sealed_compaction_item_before_the_message() -> None:
    with openai_client() as client:
        response = created(client, model="m", input=HISTORY, context_management=THRESHOLD)
    assert [item.type for item in response.output] == ["compaction", "message"]
    sealed = response.output[0].encrypted_content  # type: ignore[union-attr]
    assert "orders" not in sealed and b"orders" not in base64.b64decode(sealed)  # the client cannot read it
    usage = response.usage
    assert usage is not None and usage.output_tokens > -(-len(response.output_text) // 4)  # the summary counts


def test_below_the_threshold_nothing_is_compacted() -> None:
    with openai_client() as client:
        response = created(
            client, model="m", input=HISTORY, context_management=[{"type": "compaction", "compact_threshold": 1000}]
        )
    assert [item.type for item in response.output] == ["message"]


def test_a_follow_up_may_start_at_the_compaction_item_and_still_reads_what_it_summarised() -> None:
    with openai_client() as client:
        compacted = created(client, model="m", input=HISTORY, context_management=THRESHOLD)
        follow_up = created(client, model="m", input=[*replayed(compacted), user(ASK)])
        dropped_without_it = created(client, model="m", input=[*replayed(compacted)[1:], user(ASK)])
        whole = created(client, model="m", input=[*HISTORY, *replayed(compacted), user(ASK)])
    assert follow_up.output_text == NO  # the summary kept the rule: the items before it could go
    assert dropped_without_it.output_text.startswith("Yes")
    assert whole.output_text == NO


def test_a_chained_response_after_a_compaction_reads_what_a_client_keeping_only_the_item_sends() -> None:
    with openai_client() as client:
        first = created(client, model="m", input=HISTORY)
        compacted = created(
            client, model="m", input="customer=Acme", previous_response_id=first.id, context_management=THRESHOLD
        )
        chained = created(client, model="m", input=ASK, previous_response_id=compacted.id)
        stateless = created(client, model="m", input=[*replayed(compacted), user(ASK)])
    assert chained.output_text == stateless.output_text == NO
    assert chained.usage is not None and stateless.usage is not None
    assert chained.usage.input_tokens == stateless.usage.input_tokens  # the server pruned what it summarised


def test_responses_compact_returns_the_user_messages_then_one_compaction_item_with_its_usage() -> None:
    """The SDK types `CompactedResponse.output` as output items, whose message is the assistant's;
    the user messages it holds are validated as the input messages they are, and are sent back
    as the JSON came (dumping the SDK's object would serialise them as assistant text)."""
    with openai_client() as client:
        raw = client.responses.with_raw_response.compact(model="m", input=HISTORY)
        compacted, body = raw.parse(), raw.http_response.json()
        follow_up = created(client, model="m", input=[*body["output"], user(ASK)])
    assert compacted.object == "response.compaction" and compacted.output[-1].type == "compaction"
    *messages, last = body["output"]
    assert [Message.model_validate(m).content[0].text for m in messages] == [RULE, "database=Billing"]  # type: ignore[union-attr]
    assert all(m["role"] == "user" and m["id"].startswith("msg_") for m in messages)
    ResponseCompactionItem.model_validate(last)
    usage = ResponseUsage.model_validate(body["usage"])
    assert usage.input_tokens == -(-sum(len(m["content"]) for m in HISTORY) // 4) and usage.output_tokens > 0
    assert follow_up.output_text == NO


def test_compacting_a_response_whose_tool_call_has_no_output_yet_is_refused() -> None:
    """openai-agents-python #2317: the output must be in the chain before it can be compacted."""
    call = {"type": "function_call", "call_id": "call_7", "name": "lookup", "arguments": "{}"}
    with openai_client() as client, pytest.raises(openai.BadRequestError) as refused:
        client.responses.compact(model="m", input=[user("Look it up."), call])
    assert refused.value.message.endswith("No tool output found for function call call_7.")


def test_a_compaction_item_another_server_sealed_or_a_client_altered_is_refused() -> None:
    with openai_client() as client:
        compacted = created(client, model="m", input=HISTORY, context_management=THRESHOLD)
        item = replayed(compacted)[0]
        altered = {**item, "encrypted_content": item["encrypted_content"][:-8] + "AAAAAAA="}
        with pytest.raises(openai.BadRequestError) as refused:
            client.responses.create(model="m", input=[altered, user(ASK)])
    assert refused.value.code == "invalid_encrypted_content"


def test_the_default_threshold_is_nine_tenths_of_the_declared_window() -> None:
    notes = [user(f"Note {n:02}: the nightly export ran fine.") for n in range(15)]  # 37 characters each
    asked = [{"type": "compaction"}]
    with openai_client(OpenAIEmulator(context_window=200)) as client:
        kept = created(client, model="m", input=notes, context_management=asked)  # 139 tokens: under 180
        compacted = created(client, model="m", input=notes * 2, context_management=asked)  # 278: over
    assert [item.type for item in kept.output] == ["message"]
    assert [item.type for item in compacted.output] == ["compaction", "message"]
