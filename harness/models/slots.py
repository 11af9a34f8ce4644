"""How many requests a model's server answers at once, when it says so.

A server with one slot answers one request at a time: more `--concurrency` then only queues
requests there, gains nothing, and can make a queued request reach its timeout. The progress
display says so when it knows. Two sources, neither guessed:

- `--model local`: llama-cpp-python's server runs one model instance behind a lock, so it has
  one slot by construction; `harness.models.local` records that in the model's `server` record.
- an `openai:` model with a `--base-url`: llama.cpp's own server lists `total_slots` at
  `/props` (beside `/v1`); one GET with a short timeout, asked only when the answer matters
  (progress shown, `--concurrency` above 1). An endpoint without it (OpenAI, vLLM, Ollama) is
  left unknown. A redirect is never followed (`PropsRedirected`): the page is asked of the
  endpoint named, and a redirect could lead the request off this machine.
- a model spread over several servers: the sum of its servers' slots, when each server says.
"""

from __future__ import annotations

import http.client
import urllib.error
import urllib.request
from collections.abc import Mapping

from harness.base import json_bounded
from harness.base.text import visible
from harness.models.endpoint import is_loopback

PROBE_TIMEOUT = 2.0  # seconds: a server that does not answer this fast is left unknown
PROPS_BYTES = 1024 * 1024  # llama.cpp's /props takes some kilobytes; a longer body is left unknown
LOCATION_CHARS = 40  # a redirect's target is quoted at most this long (the documented quote limit)


class PropsRedirected(Exception):
    """The endpoint answered `/props` with a redirect, which was not followed; the message says
    where it pointed (quoted, at most `LOCATION_CHARS` characters, escaped)."""


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Declines every redirect: urllib then raises the 3xx answer as an `HTTPError`."""

    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


def known_slots(model: object) -> int | None:
    """The slots the harness knows without asking: those of a server it started (`local`)."""
    server = getattr(model, "server", None)
    slots = server.get("slots") if isinstance(server, Mapping) else None
    return slots if _count(slots) else None


def server_slots(model: object, timeout: float = PROBE_TIMEOUT) -> int | None:
    """The model's server's slots: known (`local`), else asked at llama.cpp's `/props`; None: unknown.
    A model spread over several servers (`harness.models.servers`): their sum, when every server says."""
    if spread := servers_of(model):
        counts = [server_slots(m, timeout) for m in spread]
        return sum(c for c in counts if c is not None) if None not in counts else None
    known = known_slots(model)
    if known is not None:
        return known
    base_url = getattr(model, "base_url", None)
    return props_slots(base_url, timeout) if isinstance(base_url, str) and base_url else None


def props_slots(base_url: str, timeout: float = PROBE_TIMEOUT) -> int | None:
    """`total_slots` from llama.cpp's `/props` at the root of `base_url` (without its `/v1`); None
    when the endpoint has no such page or does not answer in time; `PropsRedirected` when it
    answers with a redirect (never followed)."""
    root = base_url.rstrip("/").removesuffix("/v1")
    handlers: list[urllib.request.BaseHandler] = [_NoRedirect()]
    if is_loopback(base_url):
        handlers.append(urllib.request.ProxyHandler({}))  # no proxy reaches loopback
    try:
        with urllib.request.build_opener(*handlers).open(f"{root}/props", timeout=timeout) as response:
            data = response.read(PROPS_BYTES + 1)  # never more: a body that does not end is not read whole
        body = json_bounded.loads(data, what="/props") if len(data) <= PROPS_BYTES else None
    except urllib.error.HTTPError as exc:
        if 300 <= exc.code < 400:
            raise PropsRedirected(_redirected(root, exc)) from None
        return None
    except (OSError, ValueError, http.client.HTTPException):  # refused, 404, a timeout, not HTTP, not JSON
        return None
    slots = body.get("total_slots") if isinstance(body, dict) else None
    return slots if _count(slots) else None


def _redirected(root: str, answer: urllib.error.HTTPError) -> str:
    location = answer.headers.get("Location") or ""
    shown = visible(location[:LOCATION_CHARS]) + ("…" if len(location) > LOCATION_CHARS else "")
    return (
        f"{visible(root)}/props answered with a redirect (HTTP {answer.code}) to {shown or '(no Location)'}, not followed "
        "(the page is asked only of the endpoint named): its slots are unknown"
    )


def servers_of(model: object) -> list[object]:
    """The models of each server of a spread model (several `--base-url`); empty for any other."""
    models = getattr(model, "models", None)
    return list(models) if isinstance(models, list) and len(models) > 1 else []


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1
