"""A fixed-latency OpenAI-compatible loopback server in a process of its own, for benchmarks.

In the benchmark's own process the server's threads would share the interpreter with the
harness they serve, and their work would be counted as the harness's. Here it answers from a
child process, with HTTP/1.1 keep-alive as a real model server does (a server that closes each
connection would add a TCP connect to every call), after a latency that can be changed between
measurements:

    with LoopbackProcess(latency=0.05) as server:
        ... base_url=server.base_url ...
        server.set_latency(0.0)
        served, most_in_flight = server.stats()

It stands for a remote model server, so it is kept lean: one thread per connection that reads a
request, sleeps the latency (`time.sleep`, precise to ~0.1 ms here) and writes one canned answer
in one `sendall`. The scripted test server (tests/loopback.py) served the benchmarks before; on
this 2-core machine its own work competed with the harness's for the CPU (a stdlib
`BaseHTTPRequestHandler` parsing headers through `email`, and every request's arrival and
departure waking every request waiting out its delay), so it measured less of the harness than
of itself: at `--concurrency 64` it saw at most 32 requests in flight.

A POST whose body asks for structured output (`response_format`) gets `{"facts": []}`, any other
a short answer; a GET (`/v1/models`) gets an empty listing. Usage is reported on every answer.
"""

from __future__ import annotations

import json
import multiprocessing
import socket
import threading
import time
from multiprocessing.connection import Connection
from typing import Self

USAGE = {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}


def completion(text: str) -> bytes:
    """A chat-completions body answering `text`."""
    body = {
        "id": "chatcmpl-loopback",
        "object": "chat.completion",
        "created": 0,
        "model": "loopback",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
        "usage": USAGE,
    }
    return json.dumps(body).encode()


def response(body: bytes) -> bytes:
    """A whole HTTP/1.1 200 response carrying `body`, kept alive."""
    head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    return head.encode() + body


ANSWER = response(completion("No."))
FACTS = response(completion('{"facts": []}'))
LISTING = response(json.dumps({"object": "list", "data": [{"id": "bench", "object": "model"}]}).encode())


class FixedLatencyServer:
    """Answers every request on 127.0.0.1 after `latency` seconds; counts requests and the most in flight."""

    def __init__(self, latency: float) -> None:
        self.latency = latency
        self._listener = socket.create_server(("127.0.0.1", 0), backlog=256)
        self._lock = threading.Lock()
        self.served = 0
        self.in_flight = 0
        self.max_in_flight = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._listener.getsockname()[1]}/v1"

    def start(self) -> None:
        threading.Thread(target=self._accept, daemon=True).start()

    def stats(self) -> tuple[int, int]:
        """(requests served, most in flight at once) since the last call; then both start again."""
        with self._lock:
            found = (self.served, self.max_in_flight)
            self.served, self.max_in_flight = 0, self.in_flight
        return found

    def _accept(self) -> None:
        while True:
            connection, _ = self._listener.accept()
            connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=self._serve, args=(connection,), daemon=True).start()

    def _serve(self, connection: socket.socket) -> None:
        """Answer the requests of one keep-alive connection until the client closes it."""
        buffer = b""
        with connection:
            while True:
                while b"\r\n\r\n" not in buffer:
                    chunk = connection.recv(65536)
                    if not chunk:
                        return
                    buffer += chunk
                head, _, buffer = buffer.partition(b"\r\n\r\n")
                length = content_length(head)
                while len(buffer) < length:
                    chunk = connection.recv(65536)
                    if not chunk:
                        return
                    buffer += chunk
                body, buffer = buffer[:length], buffer[length:]
                with self._lock:
                    self.in_flight += 1
                    self.max_in_flight = max(self.max_in_flight, self.in_flight)
                if self.latency > 0:
                    time.sleep(self.latency)
                if head.startswith(b"GET"):
                    answer = LISTING
                else:
                    answer = FACTS if b'"response_format"' in body else ANSWER
                with self._lock:
                    self.in_flight -= 1
                    self.served += 1
                connection.sendall(answer)


def content_length(head: bytes) -> int:
    """The Content-Length of a request head (0 when it has none)."""
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
    return 0


def serve(connection: Connection, latency: float) -> None:
    """The child: serve until told to stop, answering the parent's requests on `connection`."""
    server = FixedLatencyServer(latency)
    server.start()
    connection.send(server.base_url)
    while True:
        command, value = connection.recv()
        if command == "latency":
            server.latency = value
            connection.send(None)
        elif command == "stats":
            connection.send(server.stats())
        else:
            break


class LoopbackProcess:
    """A loopback OpenAI-compatible server with a fixed latency, in a child process."""

    def __init__(self, latency: float = 0.0) -> None:
        context = multiprocessing.get_context("spawn")
        self._connection, child = context.Pipe()
        self._process = context.Process(target=serve, args=(child, latency), daemon=True)
        self.base_url = ""

    def start(self) -> Self:
        self._process.start()
        self.base_url = self._connection.recv()
        return self

    def set_latency(self, seconds: float) -> None:
        self._connection.send(("latency", seconds))
        self._connection.recv()

    def stats(self) -> tuple[int, int]:
        """(requests served, most in flight at once) since the last call; then both start again."""
        self._connection.send(("stats", None))
        return self._connection.recv()

    def stop(self) -> None:
        if self._process.is_alive():
            self._connection.send(("stop", None))
            self._process.join(timeout=10)
        if self._process.is_alive():
            self._process.terminate()
            self._process.join()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
