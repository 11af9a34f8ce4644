"""What the `anthropic:NAME` tests share: the Anthropic emulator served on 127.0.0.1, and an
emulator whose replies a test rewrites (usage removed, the key echoed, edits misreported)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from harness.emulate.anthropic import AnthropicEmulator, Faults
from harness.emulate.server import Reply

KEY = "sk-ant-test-0123456789abcdef"  # a made-up key, set in the environment by the tests


class Rewriting:
    """The emulator, each JSON reply of `POST /v1/messages` rewritten by `rewrite` (the status too
    when it returns one); every request kept."""

    def __init__(
        self,
        rewrite: Callable[[dict[str, Any]], dict[str, Any] | tuple[int, dict[str, Any]]],
        faults: Faults = Faults(),
    ) -> None:
        self.inner, self.rewrite = AnthropicEmulator(faults), rewrite
        self.requests: list[tuple[dict[str, str], dict[str, Any]]] = []

    def handle(self, method: str, path: str, headers: Mapping[str, str], body: bytes) -> Reply:
        self.requests.append(({k.lower(): v for k, v in headers.items()}, json.loads(body or b"{}")))
        reply = self.inner.handle(method, path, headers, body)
        if reply.status != 200 or not isinstance(reply.body, bytes):
            return reply
        rewritten = self.rewrite(json.loads(reply.body))
        status, data = rewritten if isinstance(rewritten, tuple) else (200, rewritten)
        return Reply(status, json.dumps(data).encode(), reply.headers)


def without_usage(message: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in message.items() if k != "usage"}


def echoing_key(message: dict[str, Any]) -> dict[str, Any]:
    """The reply's text with the key in it, as a broken proxy might send it back."""
    return {**message, "content": [{"type": "text", "text": f"your key is {KEY}", "citations": None}]}
