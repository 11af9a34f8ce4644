"""The scripted loopback server (tests/loopback.py) in a process of its own, for benchmarks.

In the benchmark's own process the server's threads would share the interpreter with the
harness they serve, and their work would be counted as the harness's. Here it answers from a
child process, with HTTP/1.1 keep-alive as a real model server does (the test server closes
each connection, which would add a TCP connect to every call), after a latency that can be
changed between measurements:

    with LoopbackProcess(latency=0.05) as server:
        ... base_url=server.base_url ...
        server.set_latency(0.0)
        served, most_in_flight = server.stats()
"""

from __future__ import annotations

import multiprocessing
import sys
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Self

ROOT = Path(__file__).resolve().parent.parent


class Answer:
    """No facts for a structured-output call, a short answer for any other, after `seconds`."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def __call__(self, request: Any) -> Any:
        from tests.loopback import Reply, chat_completion

        usage = {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}
        if "response_format" in (request.body or {}):
            return Reply(body=chat_completion('{"facts": []}', usage=usage), delay=self.seconds)
        return Reply(body=chat_completion("No.", usage=usage), delay=self.seconds)


def serve(connection: Connection, latency: float) -> None:
    """The child: serve until told to stop, answering the parent's requests on `connection`."""
    sys.path.insert(0, str(ROOT))
    from tests import loopback

    loopback._Handler.protocol_version = "HTTP/1.1"  # keep connections open between requests
    loopback._Handler.disable_nagle_algorithm = True  # else headers then body wait out a delayed ACK (40 ms)
    answer = Answer(latency)
    with loopback.ScriptedServer() as server:
        server.default = answer
        connection.send(server.base_url)
        while True:
            command, value = connection.recv()
            if command == "latency":
                answer.seconds = value
                connection.send(None)
            elif command == "stats":
                with server._changed:
                    connection.send((len(server.requests), server.max_in_flight))
                    server.requests.clear()
                    server.max_in_flight = server.in_flight
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
