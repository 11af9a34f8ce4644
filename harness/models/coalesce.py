"""One send per request: an HTTP/1.1 request's head and body leave in one write.

httpcore writes a request as h11 hands it over: the head, then the body, each its own
`send` on the socket (and an empty end of message, which it skips). Two sends cost two system
calls, two TCP segments and, in a batch of threads, two releases of the GIL, each followed by a
wait to take it back while other conversations run: per call on the critical path at
`--concurrency 16` (benchmarks/batch_latency.py). Here a connection's writes are kept until it
next reads, when they leave in one send: over HTTP/1.1 a client reads only after its request,
so the bytes, their order and the moment the server can answer are unchanged.

What a failed send does is unchanged too: httpcore ignores a write error while it sends a
request (a server may answer early, then close) and reads the answer; a write error at the
delayed send is ignored the same way, and a write timeout still fails the attempt. The write
keeps the timeout it was given (the calling thread's deadline is applied when it is sent,
`harness.models.deadline`).

Only HTTP/1.1 pools are wrapped: over HTTP/2 several requests share a connection, and one
thread may read while another's frames wait, so `install` leaves an HTTP/2 pool as it is.
"""

from __future__ import annotations

from typing import Any

import httpcore2
import httpx2

from harness.models.deadline import WrappingBackend, connection_pools


class _Stream(httpcore2.NetworkStream):
    """A connection whose writes leave together at its next read."""

    def __init__(self, stream: httpcore2.NetworkStream) -> None:
        self._stream = stream
        self._pending: list[bytes] = []
        self._timeout: float | None = None  # the first pending write's

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        if not self._pending:
            self._timeout = timeout
        self._pending.append(buffer)

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        self._send()
        return self._stream.read(max_bytes, timeout)

    def _send(self) -> None:
        """The pending writes in one; a write error ignored as httpcore ignores it while sending."""
        if not self._pending:
            return
        data = self._pending[0] if len(self._pending) == 1 else b"".join(self._pending)
        self._pending = []
        try:
            self._stream.write(data, self._timeout)
        except httpcore2.WriteError:
            pass  # as httpcore does: the server may have answered and closed; the read says

    def close(self) -> None:
        self._pending = []
        self._stream.close()

    def start_tls(
        self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore2.NetworkStream:
        self._send()
        return _Stream(self._stream.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class _Backend(WrappingBackend):
    """Opens connections whose writes leave together (`_Stream`)."""

    def wrap(self, stream: httpcore2.NetworkStream) -> httpcore2.NetworkStream:
        return _Stream(stream)


def install(client: httpx2.Client) -> None:
    """Send each request of `client`'s HTTP/1.1 transports (its own, and a proxy's from the
    environment) in one write; an HTTP/2 pool is left as it is (see the module docstring)."""
    # A client built differently (or a later httpx) is left to send as httpcore sends, which is
    # slower on the critical path, not wrong.
    for _, pool, backend in connection_pools(client):
        if not isinstance(backend, httpcore2.NetworkBackend) or getattr(pool, "_http2", True):
            continue  # not a pool this module knows, or one that may speak HTTP/2: sent as httpcore sends
        if not isinstance(backend, _Backend):
            pool._network_backend = _Backend(backend)  # type: ignore[union-attr]
