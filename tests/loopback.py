"""A scripted OpenAI-compatible server on 127.0.0.1, for tests and benchmarks of the client path.

A real HTTP server (stdlib `ThreadingHTTPServer`, one thread per request) on a free loopback
port: tests enqueue replies (status, headers, body, delay, a byte-at-a-time drip, a chunked body
of any length), the server answers requests in
order and records each one (method, path, headers, JSON body) and the most requests it ever
had in flight. Like the real API, it refuses a chat request whose tool messages are not paired
with the calls before them (HTTP 400, `invalid_request_error`) before any scripted reply is
used. Nothing here reaches beyond 127.0.0.1.

    with ScriptedServer() as server:          # or the `loopback_server` fixture
        server.enqueue(Reply(429, {"Retry-After": "2"}), Reply(body=chat_completion("hi")))
        ... OpenAIModel("m", base_url=server.base_url) ...
        assert server.max_in_flight == 1

Other test modules reuse the `loopback_server` fixture by importing it, or through
`pytest_plugins = ["tests.loopback"]` in the root conftest.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

import pytest

Body = dict[str, Any] | list[Any] | str | bytes | None
MISSING: Any = object()  # `chat_completion(usage=MISSING)`: no usage field at all


@dataclass(frozen=True)
class Recorded:
    """One request as the server received it; header names are lower-case."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any  # the parsed JSON body, or None when it was not JSON


@dataclass(frozen=True)
class Reply:
    """One scripted reply. `body` may be a function of the request (e.g. an echo)."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: Body | Callable[[Recorded], Body] = None
    delay: float = 0.0  # seconds before answering (cut short when the server stops)
    # Hold the reply until this many requests have arrived in all (or `delay` ends). Counting
    # arrivals, not requests in flight, keeps the gate open once reached: a request that
    # leaves must not shut it on one still waiting.
    gate: int = 0
    # Write the reply one byte at a time, this many seconds apart (a slow-drip endpoint); with
    # `drip_head` the status line and headers drip too, else only the body.
    drip: float = 0.0
    drip_head: bool = False
    # The body sent with `Transfer-Encoding: chunked` (no length), one chunk per item, for as
    # long as the iterable yields or until the client leaves: `itertools.repeat(b"0")` never ends.
    chunks: Iterable[bytes] | None = None


def chat_completion(text: str = "ok", usage: Any = MISSING, **message: Any) -> dict[str, Any]:
    """A chat-completions body; `usage` MISSING leaves the field out, None sends null."""
    body: dict[str, Any] = {
        "id": "chatcmpl-loopback",
        "object": "chat.completion",
        "created": 0,
        "model": "loopback",
        "choices": [
            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text, **message}}
        ],
    }
    if usage is not MISSING:
        body["usage"] = usage
    return body


def error_body(message: str, status: int = 500) -> dict[str, Any]:
    """An error body in the shape OpenAI and llama.cpp's server use."""
    return {"error": {"message": message, "type": "server_error", "code": status}}


def unpaired_tool_messages(messages: Any) -> str | None:
    """What the chat-completions API says of a `messages` list whose tool messages are not paired
    (its wording, index included), or None: each assistant `tool_calls` must be followed by one
    `role: tool` message per call id, and a tool message must answer such a call."""
    if not isinstance(messages, list):
        return None
    waiting: list[str] = []
    opened = 0
    for index, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role == "tool":
            if message.get("tool_call_id") not in waiting:
                return (
                    "Invalid parameter: messages with role 'tool' must be a response to a preceeding "
                    f"message with 'tool_calls'. (messages.[{index}].role)"
                )
            waiting.remove(message["tool_call_id"])
            continue
        if waiting:
            break
        if role == "assistant" and message.get("tool_calls"):
            waiting, opened = [call.get("id") for call in message["tool_calls"]], index
    if waiting:
        return (
            "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
            f"'tool_call_id'. The following tool_call_ids did not have response messages: {', '.join(waiting)} "
            f"(messages.[{opened}].role)"
        )
    return None


class _Server(ThreadingHTTPServer):
    daemon_threads = False  # server_close() joins every handler thread: nothing outlives a test
    block_on_close = True
    script: ScriptedServer


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    timeout = 5  # a silent client cannot hold a handler thread for long

    def do_GET(self) -> None:
        self._answer()

    def do_POST(self) -> None:
        self._answer()

    def log_message(self, format: str, *args: Any) -> None:  # quiet tests
        pass

    def _answer(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        request = Recorded(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
        script = self.server.script
        reply = script._arrive(request)
        left = False

        def leave() -> None:
            nonlocal left
            if not left:
                left = True
                script._leave()

        try:
            script._hold(reply)
            self._write(reply, request, leave)
        except OSError:  # the client gave up (its timeout): nothing to answer
            pass
        finally:
            leave()

    def _write(self, reply: Reply, request: Recorded, leave: Callable[[], None]) -> None:
        """Answer `request`; `leave()` is called before the bytes that complete a plain answer: a client
        that has read them may send its next request before this thread runs again, and that must
        not count as two requests in flight at once (a drip is in flight until its last byte)."""
        if reply.chunks is not None:
            self._write_chunked(reply, leave)
            return
        body = reply.body(request) if callable(reply.body) else reply.body
        if isinstance(body, (dict, list)):
            data, kind = json.dumps(body).encode(), "application/json"
        else:
            data = body.encode() if isinstance(body, str) else (body or b"")
            kind = "text/plain; charset=utf-8"
        headers = {"Content-Type": kind, **reply.headers, "Content-Length": str(len(data))}
        if reply.drip and reply.drip_head:
            phrase = self.responses.get(reply.status, ("",))[0]
            head = f"{self.protocol_version} {reply.status} {phrase}\r\n"
            head += "".join(f"{name}: {value}\r\n" for name, value in headers.items()) + "\r\n"
            self.server.script._drip(self.wfile, head.encode() + data, reply.drip)
            return
        self.send_response(reply.status)
        for name, value in headers.items():
            self.send_header(name, value)
        if not reply.drip:
            leave()
        self.end_headers()
        if reply.drip:
            self.server.script._drip(self.wfile, data, reply.drip)
        else:
            self.wfile.write(data)

    def _write_chunked(self, reply: Reply, leave: Callable[[], None]) -> None:
        """An HTTP/1.1 answer whose body comes in chunks, written until the iterable ends (then the
        last, empty chunk), the client leaves (a write fails) or the server stops."""
        phrase = self.responses.get(reply.status, ("",))[0]
        headers = {"Content-Type": "application/json", **reply.headers, "Transfer-Encoding": "chunked"}
        head = f"HTTP/1.1 {reply.status} {phrase}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        self.wfile.write(f"{head}Connection: close\r\n\r\n".encode())
        for chunk in reply.chunks or ():
            if self.server.script._stopping.is_set():
                return
            if chunk:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        leave()
        self.wfile.write(b"0\r\n\r\n")


class ScriptedServer:
    """The scripted server; `unscripted` counts requests that found the queue empty (answered 500),
    `refused` those refused for unpaired tool messages (answered 400)."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        assert host.startswith("127."), "the scripted server listens on loopback only"
        self._server = _Server((host, 0), _Handler)
        self._server.script = self
        # `stop` waits up to one poll for the serving loop, once per test: at 5 ms, not 50, the fast
        # tests of tests/models, tests/emulate and the OpenAI runs of tests/run took 26 s of wall time, not 37.
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.005})
        self._replies: deque[Reply] = deque()
        self._changed = threading.Condition()
        self._stopping = threading.Event()
        self.requests: list[Recorded] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.unscripted = 0
        self.refused = 0
        # Answers when the queue is empty, if set: a Reply, or a function of the request.
        self.default: Reply | Callable[[Recorded], Reply] | None = None

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://{self._server.server_address[0]}:{self.port}/v1"

    def enqueue(self, *replies: Reply) -> None:
        with self._changed:
            self._replies.extend(replies)

    def bodies(self) -> list[Any]:
        """The JSON bodies received, in order."""
        with self._changed:
            return [r.body for r in self.requests]

    def start(self) -> Self:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, cut delays short and join every thread (bounded)."""
        self._stopping.set()
        with self._changed:
            self._changed.notify_all()
        if self._thread.is_alive():
            self._server.shutdown()
            self._thread.join(timeout=5)
        self._server.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- called by handler threads ---------------------------------------------------

    def _arrive(self, request: Recorded) -> Reply:
        with self._changed:
            self.requests.append(request)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            self._changed.notify_all()
            refused = unpaired_tool_messages(request.body.get("messages")) if isinstance(request.body, dict) else None
            if refused is not None:
                self.refused += 1
                return Reply(400, body={"error": {"message": refused, "type": "invalid_request_error", "code": None}})
            if self._replies:
                return self._replies.popleft()
            if self.default is not None:
                return self.default(request) if callable(self.default) else self.default
            self.unscripted += 1
            return Reply(500, body={"error": {"message": "loopback: no scripted reply left"}})

    def _hold(self, reply: Reply) -> None:
        deadline = time.monotonic() + reply.delay
        with self._changed:
            while not self._stopping.is_set():
                remaining = deadline - time.monotonic()
                if remaining <= 0 or (reply.gate and len(self.requests) >= reply.gate):
                    return
                self._changed.wait(remaining)

    def _drip(self, out: Any, data: bytes, interval: float) -> None:
        """Write `data` a byte at a time, `interval` seconds apart; stop early when the server stops."""
        for i in range(len(data)):
            out.write(data[i : i + 1])
            out.flush()
            if self._stopping.wait(interval):
                return

    def _leave(self) -> None:
        with self._changed:
            self.in_flight -= 1
            self._changed.notify_all()


@pytest.fixture
def loopback_server() -> Iterator[ScriptedServer]:
    """A started ScriptedServer, stopped (threads joined) when the test ends."""
    with ScriptedServer() as server:
        yield server
