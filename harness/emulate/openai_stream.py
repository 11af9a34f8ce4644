"""A finished Responses API response told as the server-sent events the SDK types, in order.

`response.created`, `response.in_progress`, then per output item `response.output_item.added`;
for a message, per content part `response.content_part.added`, `response.output_text.delta`
(a word at a time), `response.output_text.done`, `response.content_part.done`; for a tool call
`response.function_call_arguments.delta` and `.done`; then `response.output_item.done`; last
`response.completed` (`response.incomplete` when the response is). Every event carries its
`sequence_number`, from 0. The emulator answers before it streams: the events replay a response
that is whole, so a streamed and an unstreamed request get the same output and usage.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

PIECE = re.compile(r"\s*\S+\s*|\s+")  # a delta: a word with the spaces around it


def stream_events(response: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The events that stream `response`, each with its `sequence_number`."""
    events: list[dict[str, Any]] = []

    def emit(kind: str, **fields: Any) -> None:
        events.append({"type": kind, "sequence_number": len(events), **fields})

    opening = {**copy.deepcopy(dict(response)), "status": "in_progress", "output": [], "usage": None}
    opening.update(incomplete_details=None, completed_at=None)
    emit("response.created", response=opening)
    emit("response.in_progress", response=opening)
    for index, item in enumerate(response["output"]):
        emit("response.output_item.added", output_index=index, item=_opening(item))
        if item["type"] == "message":
            for j, part in enumerate(item["content"]):
                _text_events(emit, index, item["id"], j, part)
        elif item["type"] == "function_call":
            place = {"item_id": item["id"], "output_index": index}
            emit("response.function_call_arguments.delta", **place, delta=item["arguments"])
            emit("response.function_call_arguments.done", **place, arguments=item["arguments"])
        emit("response.output_item.done", output_index=index, item=copy.deepcopy(item))
    final = "response.incomplete" if response.get("status") == "incomplete" else "response.completed"
    emit(final, response=copy.deepcopy(dict(response)))
    return events


def _opening(item: Mapping[str, Any]) -> dict[str, Any]:
    """An output item as `output_item.added` shows it: in progress, with no text yet."""
    opened = copy.deepcopy(dict(item))
    if "status" in opened:
        opened["status"] = "in_progress"
    if opened["type"] == "message":
        opened["content"] = []
    elif opened["type"] == "function_call":
        opened["arguments"] = ""
    return opened


def _text_events(emit: Any, index: int, item_id: str, j: int, part: Mapping[str, Any]) -> None:
    place = {"item_id": item_id, "output_index": index, "content_index": j}
    emit("response.content_part.added", **place, part={"type": "output_text", "text": "", "annotations": []})
    for piece in PIECE.findall(part["text"]):
        emit("response.output_text.delta", **place, delta=piece, logprobs=[])
    emit("response.output_text.done", **place, text=part["text"], logprobs=[])
    emit("response.content_part.done", **place, part=copy.deepcopy(dict(part)))


def sse(events: list[dict[str, Any]]) -> Iterator[bytes]:
    """The events as `text/event-stream` chunks (`event:` and `data:` lines), one per event."""
    for event in events:
        yield f"event: {event['type']}\ndata: {json.dumps(event, ensure_ascii=False)}\n\n".encode()
