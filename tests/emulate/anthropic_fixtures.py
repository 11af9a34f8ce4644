"""What the Anthropic emulator's tests share: an emulator served on 127.0.0.1 and the official SDK's
client pointed at it (no retries, so each fault is seen as answered), and the SDK's own types
every reply must parse with."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

anthropic = pytest.importorskip("anthropic")  # the `test` extra: the official SDK

from anthropic.types import ErrorResponse  # noqa: E402, F401 - for the tests, with the SDK's other types
from anthropic.types.beta import BetaMessage, BetaRawMessageStreamEvent  # noqa: E402
from pydantic import TypeAdapter  # noqa: E402

from harness.emulate.anthropic import AnthropicEmulator, Faults  # noqa: E402
from harness.emulate.server import serve  # noqa: E402

CONTEXT = "context-management-2025-06-27"
COMPACT = "compact-2026-01-12"
ON_DEMAND = "compact-2026-09-04"
EVENTS = TypeAdapter(BetaRawMessageStreamEvent)


@pytest.fixture(scope="module", name="sdk")
def served_sdk() -> Iterator[Any]:
    """A client of one emulator with no fault switched on, shared by a module's tests (a server
    takes half a second to stop)."""
    with client() as shared:
        yield shared


@contextlib.contextmanager
def client(faults: Faults = Faults(), max_retries: int = 0) -> Iterator[Any]:
    """An SDK client of a fresh emulator with `faults`, served until the block ends."""
    with serve(AnthropicEmulator(faults)) as base_url:
        sdk = anthropic.Anthropic(base_url=base_url, api_key="unused", max_retries=max_retries)
        try:
            yield sdk
        finally:
            sdk.close()


def parsed(message: dict[str, Any]) -> BetaMessage:
    """An in-process reply read with the SDK's type (it raises if the shape is wrong)."""
    return BetaMessage.model_validate(message)


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def assistant(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": list(blocks)}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def tool_use(call: str, name: str = "read_file", **given: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": call, "name": name, "input": given or {"path": call}}


def tool_result(call: str, content: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call, "content": content}
