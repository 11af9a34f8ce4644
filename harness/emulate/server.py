"""An emulated provider served on 127.0.0.1 (stdlib `ThreadingHTTPServer`, a thread per request).

The server knows nothing of a provider: it hands each request to an `Emulator` (method, path,
lower-case headers, raw body) and writes the `Reply` it gets back, whole (with its length) or,
for a streamed reply, as the chunks of a `Transfer-Encoding: chunked` body for as long as the
emulator yields them. It binds the loopback interface only, whatever port it is given: an
emulator answers with offline models and is never a service for another machine.

    with serve(emulator) as base_url:   # port 0: a free port
        client = OpenAI(base_url=f"{base_url}/v1", api_key="unused")
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Protocol

HOST = "127.0.0.1"
SHUTDOWN_POLL = 0.05  # seconds between the serving thread's looks for the end of `serve`'s block
MAX_BODY_BYTES = 32 * 1024 * 1024  # a request larger than this is refused (413) before it is read


@dataclass(frozen=True)
class Reply:
    """What an emulator answers: a status, headers, and a body whole (bytes) or streamed (chunks)."""

    status: int
    body: bytes | Iterable[bytes] = b""
    headers: Mapping[str, str] = field(default_factory=dict)


class Emulator(Protocol):
    """A provider's wire protocol, answered in process: one request in, one `Reply` out."""

    def handle(self, method: str, path: str, headers: Mapping[str, str], body: bytes) -> Reply: ...


def _handler(emulator: Emulator) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as the SDKs' clients expect

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY_BYTES:
                self._write(Reply(413, b'{"error": {"message": "request body too large"}}', JSON))
                self.close_connection = True
                return
            body = self.rfile.read(length) if length > 0 else b""
            headers = {name.lower(): value for name, value in self.headers.items()}
            self._write(emulator.handle(self.command, self.path, headers, body))

        do_GET = do_POST = do_DELETE = _serve

        def _write(self, reply: Reply) -> None:
            self.send_response(reply.status)
            for name, value in reply.headers.items():
                self.send_header(name, value)
            if isinstance(reply.body, bytes):
                self.send_header("Content-Length", str(len(reply.body)))
                self.end_headers()
                self.wfile.write(reply.body)
                return
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            try:
                for chunk in reply.body:
                    if chunk:
                        self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                        self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
            except (BrokenPipeError, ConnectionResetError):  # the client left mid-stream
                self.close_connection = True

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the stdlib's name
            """Silent: a test's or a run's output is not the place for an access log."""

    return Handler


JSON = {"Content-Type": "application/json"}


@contextlib.contextmanager
def serve(emulator: Emulator, port: int = 0) -> Iterator[str]:
    """Serve `emulator` on 127.0.0.1:`port` (0: a free port) until the block ends; yields the
    base URL (`http://127.0.0.1:PORT`)."""
    server = ThreadingHTTPServer((HOST, port), _handler(emulator))
    server.daemon_threads = True
    # Polled every 50 ms for the end of the block (the stdlib's default, 0.5 s, is each test's wait).
    thread = threading.Thread(target=server.serve_forever, args=(SHUTDOWN_POLL,), name="harness-emulate", daemon=True)
    thread.start()
    try:
        yield f"http://{HOST}:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
