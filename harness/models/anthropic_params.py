"""A harness view as the parameters of an Anthropic Messages API request (`system`, `messages`):
one home for the mapping the `anthropic:NAME` model, the emulated API (`harness.emulate`) and the
provider policies (`policies.anthropic_compaction`) all send.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from harness.base.messages import Message

API = "anthropic"  # `ProviderRequest.api` of a request written for the Messages API


def as_params(messages: Sequence[Message]) -> tuple[str | None, list[dict[str, object]]]:
    """A harness view as the `system` and `messages` parameters of a request (the inverse of
    `harness.emulate.anthropic_view.as_messages`, for a view with one system message first): a tool
    call becomes a `tool_use` block, each run of tool results one user message of `tool_result`
    blocks (a user message that follows them joins it, after them), a summary a compaction block.
    The system messages after the first are sent as `system` messages."""
    system = messages[0].content if messages and messages[0].role == "system" else None
    out: list[dict[str, object]] = []
    for message in messages[1:] if system is not None else messages:
        block = _block_of(message)
        role = "user" if message.role == "tool" else message.role
        if out and out[-1]["role"] == role == "user":
            previous = out[-1]["content"]
            assert isinstance(previous, list)
            previous.extend(block)
        else:
            out.append({"role": role, "content": block})
    return system, out


def _block_of(message: Message) -> list[dict[str, object]]:
    if message.role == "tool":
        return [{"type": "tool_result", "tool_use_id": message.tool_call_id, "content": message.content}]
    if message.origin == "summary":
        return [{"type": "compaction", "content": message.content}]
    blocks: list[dict[str, object]] = [{"type": "text", "text": message.content}] if message.content else []
    blocks += [
        {"type": "tool_use", "id": c.id, "name": c.name, "input": json.loads(c.arguments or "{}")}
        for c in message.tool_calls
    ]
    return blocks


def api_messages(view: Sequence[Message]) -> tuple[str | None, list[dict]]:
    """A view as a request the API takes, as a client sends it: the first system message as
    `system`; a later one as user text (the API requires user and assistant to alternate around
    it, and the emulator summarises system and user text alike); consecutive messages of one role
    merged into one, their blocks in order."""
    system, messages = as_params(view)
    merged: list[dict] = []
    for message in messages:
        role = "user" if message["role"] == "system" else message["role"]
        blocks = (
            list(message["content"])
            if isinstance(message["content"], list)
            else [{"type": "text", "text": message["content"]}]
        )
        if merged and merged[-1]["role"] == role:
            merged[-1]["content"].extend(blocks)
        else:
            merged.append({"role": role, "content": blocks})
    return system, merged
