"""The official `openai` SDK pointed at an emulated endpoint on 127.0.0.1, and strict parsing of
its replies with the SDK's own types (the SDK itself parses leniently; these must validate)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

import openai
from openai.types.responses import Response

from harness.emulate.openai import OpenAIEmulator
from harness.emulate.server import serve


@cache
def _transport() -> openai.DefaultHttpx2Client:
    """One HTTP client for every test's SDK client: building one loads TLS certificates (0.2 s)."""
    return openai.DefaultHttpx2Client()


@contextmanager
def openai_client(emulator: OpenAIEmulator | None = None, max_retries: int = 0) -> Iterator[openai.OpenAI]:
    """An SDK client of `emulator` (default: the reference model, default window), served for the block."""
    with serve(emulator or OpenAIEmulator()) as root:
        yield openai.OpenAI(
            base_url=f"{root}/v1", api_key="unused", max_retries=max_retries, timeout=10, http_client=_transport()
        )


def created(client: openai.OpenAI, **params: Any) -> Response:
    """`responses.create(**params)`, its JSON validated strictly as the SDK's `Response`; the
    emulator's token counter is named in a header of every reply."""
    raw = client.responses.with_raw_response.create(**params)
    assert raw.headers["x-harness-token-counter"] == "estimate"
    return Response.model_validate(raw.http_response.json())


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def replayed(response: Response) -> list[dict[str, Any]]:
    """A response's output items as a client sends them back in its next input."""
    return [item.model_dump(exclude_none=True) for item in response.output]
