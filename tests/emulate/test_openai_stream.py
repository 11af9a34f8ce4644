"""`stream: true`: the server-sent events the SDK types, in order, numbered, each one valid, and
telling the same response an unstreamed request gets."""

from __future__ import annotations

from typing import Any

from openai.types.responses import ResponseStreamEvent
from pydantic import TypeAdapter

from harness.emulate.openai import OpenAIEmulator
from tests.emulate.openai_client import created, openai_client, user

EVENT = TypeAdapter(ResponseStreamEvent)
RULE = "Never truncate the orders table."
ASK = "Can I truncate the orders table?"


def streamed(emulator: OpenAIEmulator | None = None, **params: Any) -> list[Any]:
    """Every event of a streamed create, each validated strictly as the SDK's event union."""
    with openai_client(emulator) as client, client.responses.create(stream=True, **params) as stream:
        return [EVENT.validate_python(event.model_dump(mode="json")) for event in stream]


def test_a_streamed_message_is_told_by_the_typed_events_in_order() -> None:
    events = streamed(model="m", input=[user(RULE), user(ASK)])
    assert [e.type for e in events[:4]] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
    ]
    assert {e.type for e in events[4:-4]} == {"response.output_text.delta"}
    assert [e.type for e in events[-4:]] == [
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert [e.sequence_number for e in events] == list(range(len(events)))
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert text == events[-4].text == f'No — "{RULE[:-1]}"'
    assert events[0].response.status == "in_progress" and events[0].response.output == []
    assert events[-1].response.status == "completed" and events[-1].response.usage is not None


def test_the_stream_tells_the_same_response_as_an_unstreamed_request() -> None:
    params = {"model": "m", "input": [user(RULE), user("database=Billing"), user(ASK)]}
    threshold = [{"type": "compaction", "compact_threshold": 10}]
    events = streamed(**params, context_management=threshold)
    with openai_client() as client:
        whole = created(client, **params, context_management=threshold)
    final = events[-1].response
    assert final.output_text == whole.output_text and final.usage == whole.usage
    assert [item.type for item in final.output] == ["compaction", "message"]
    added = [e.item.type for e in events if e.type == "response.output_item.added"]
    assert added == ["compaction", "message"]


def test_the_sdks_stream_helper_accumulates_the_final_response() -> None:
    with openai_client() as client, client.responses.stream(model="m", input=[user(RULE), user(ASK)]) as stream:
        for _ in stream:
            pass
        final = stream.get_final_response()
    assert final.output_text == f'No — "{RULE[:-1]}"' and final.status == "completed"


def test_a_response_cut_by_its_output_cap_streams_as_incomplete() -> None:
    rule = "Never truncate the orders table of the billing database during the nightly maintenance window."
    events = streamed(model="m", input=[user(rule), user(ASK)], max_output_tokens=16)
    assert events[-1].type == "response.incomplete"
    assert events[-1].response.incomplete_details.reason == "max_output_tokens"
