"""A response message as the server-sent events of a streamed reply (`stream: true`).

The order and shapes are the SDK's (`BetaRawMessageStreamEvent`) and the documentation's
(Streaming Messages, https://platform.claude.com/docs/en/build-with-claude/streaming):
`message_start` (the message with empty content, `stop_reason` null), a `ping`, then per content
block `content_block_start`, its deltas, `content_block_stop`; then `message_delta` (the stop
reason, the final usage with `iterations`, `context_management`) and `message_stop`.

A text block is started empty and streamed as `text_delta`s of at most `TEXT_CHUNK` characters;
a compaction block is started with its signature and null content, and its summary arrives whole
in one `compaction_delta` (the SDK's accumulator sets the block's content from that one delta).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

TEXT_CHUNK = 24  # characters per text_delta: a reply is seen arriving in pieces, as it would be


def events(message: Mapping[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(event name, data) of each event of `message` streamed."""
    usage = message["usage"]
    start_usage = {**usage, "output_tokens": 0}
    start_usage.pop("iterations", None)
    yield (
        "message_start",
        {
            "type": "message_start",
            "message": {
                **message,
                "content": [],
                "stop_reason": None,
                "usage": start_usage,
                "context_management": None,
            },
        },
    )
    yield "ping", {"type": "ping"}
    for index, block in enumerate(message["content"]):
        yield from _block(index, block)
    delta_usage = {
        key: usage[key]
        for key in (
            "input_tokens",
            "output_tokens",
            "cache_creation_input_tokens",
            "cache_read_input_tokens",
            "iterations",
        )
        if key in usage
    }
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
            "usage": delta_usage,
            "context_management": message.get("context_management"),
        },
    )
    yield "message_stop", {"type": "message_stop"}


def _block(index: int, block: Mapping[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    if block["type"] == "compaction":
        yield (
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": {**block, "content": None}},
        )
        delta = {
            "type": "compaction_delta",
            "content": block["content"],
            "encrypted_content": block.get("encrypted_content"),
        }
        yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
    else:  # text: the only other block the emulated model writes
        yield (
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}},
        )
        text = block["text"]
        for at in range(0, len(text), TEXT_CHUNK):
            delta = {"type": "text_delta", "text": text[at : at + TEXT_CHUNK]}
            yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
    yield "content_block_stop", {"type": "content_block_stop", "index": index}


def sse(message: Mapping[str, Any]) -> Iterator[bytes]:
    """The events of `message` as the bytes of an SSE body, one event a chunk."""
    for name, data in events(message):
        yield f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()
