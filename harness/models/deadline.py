"""A total deadline per attempt, enforced under the openai client's HTTP transport.

httpx's timeouts bound each network operation (connect, each read, each write), not a request:
an endpoint that sends one byte every 0.25 s never trips a 2 s read timeout, and one call with
`--timeout 2` took 63 s. Here an attempt gets one deadline instead: inside `deadline(seconds)`,
every connect, TLS handshake, read and write made by the current thread is given only the time
left, and fails with the transport's own timeout error (which the openai client reports as a
timeout) once none is left. Connections are shared between threads, so the deadline belongs to
the thread making the request, not to the connection; the openai client is synchronous, so an
attempt runs entirely in the caller's thread.

`install` puts a client's transports (its own, and a proxy's from the environment) under the
deadline by wrapping the network backend of their connection pools. httpx2 offers no public
parameter for that; if a new version moves the attribute, `install` fails loudly rather than
leaving requests without a deadline. Name resolution happens before the first connect and is
not bounded by it (the system resolver cannot be interrupted).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import httpcore2
import httpx2

_thread = threading.local()  # `at`: this thread's deadline (time.monotonic()), or None


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Inside the block, this thread's network operations share one budget of `seconds`."""
    previous = getattr(_thread, "at", None)
    _thread.at = time.monotonic() + seconds
    try:
        yield
    finally:
        _thread.at = previous


def _left(timeout: float | None, expired: type[httpcore2.TimeoutException]) -> float | None:
    """An operation's own timeout, cut to what is left of the thread's deadline; raise when none is."""
    at = getattr(_thread, "at", None)
    if at is None:
        return timeout
    left = at - time.monotonic()
    if left <= 0:
        raise expired("the attempt's deadline has passed")
    return left if timeout is None else min(timeout, left)


class _Stream(httpcore2.NetworkStream):
    """A connection whose every operation is bounded by the calling thread's deadline."""

    def __init__(self, stream: httpcore2.NetworkStream) -> None:
        self._stream = stream

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._stream.read(max_bytes, _left(timeout, httpcore2.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._stream.write(buffer, _left(timeout, httpcore2.WriteTimeout))

    def close(self) -> None:
        self._stream.close()

    def start_tls(
        self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore2.NetworkStream:
        return _Stream(self._stream.start_tls(ssl_context, server_hostname, _left(timeout, httpcore2.ConnectTimeout)))

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class WrappingBackend(httpcore2.NetworkBackend):
    """Opens connections through another network backend and wraps each stream it opens
    (`wrap`), with the connect timeout as `limit` gives it: how this module and
    `harness.models.coalesce` each put themselves between httpcore and its sockets."""

    def __init__(self, backend: httpcore2.NetworkBackend) -> None:
        self._backend = backend

    def wrap(self, stream: httpcore2.NetworkStream) -> httpcore2.NetworkStream:
        raise NotImplementedError

    def limit(self, timeout: float | None) -> float | None:
        return timeout

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.NetworkStream:
        return self.wrap(self._backend.connect_tcp(host, port, self.limit(timeout), local_address, socket_options))

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore2.NetworkStream:
        return self.wrap(self._backend.connect_unix_socket(path, self.limit(timeout), socket_options))

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)


class _Backend(WrappingBackend):
    """Opens connections under the calling thread's deadline."""

    def wrap(self, stream: httpcore2.NetworkStream) -> httpcore2.NetworkStream:
        return _Stream(stream)

    def limit(self, timeout: float | None) -> float | None:
        return _left(timeout, httpcore2.ConnectTimeout)


def connection_pools(client: httpx2.Client) -> Iterator[tuple[Any, Any, Any]]:
    """(transport, its connection pool, the pool's network backend) of every transport of
    `client`: its own, and one per environment proxy (private attributes of httpx and httpcore,
    read defensively: a pool or backend not found is None). Also `harness.models.coalesce`'s."""
    for transport in [getattr(client, "_transport", None), *getattr(client, "_mounts", {}).values()]:
        if transport is None:  # a NO_PROXY entry: requests go through `client._transport`
            continue
        pool = getattr(transport, "_pool", None)
        yield transport, pool, getattr(pool, "_network_backend", None)


def install(client: httpx2.Client) -> None:
    """Put every transport of `client` under the calling thread's deadline (see the module docstring)."""
    for transport, pool, backend in connection_pools(client):
        if not isinstance(backend, httpcore2.NetworkBackend):
            raise RuntimeError(
                f"cannot put {type(transport).__name__} under a deadline: httpx2 {httpx2.__version__} "
                "moved its connection pool; update harness/models/deadline.py"
            )
        if not isinstance(backend, _Backend):
            pool._network_backend = _Backend(backend)  # type: ignore[union-attr]
