"""A total deadline per attempt, enforced under the HTTP client's transport. The only module that
imports `httpx2` and `httpcore2` (the openai package's HTTP client and its connection pools).

httpx's timeouts bound each network operation (connect, each read, each write), not a request:
an endpoint that sends one byte every 0.25 s never trips a 2 s read timeout, and one call with
`--timeout 2` took 63 s. Here an attempt gets one deadline instead: inside `deadline(seconds)`,
every connect, TLS handshake, read and write made by the current thread is given only the time
left, and fails with a timeout (which the openai client reports as a timeout) once none is left.
Connections are shared between threads, so the deadline belongs to the thread making the request,
not to the connection; the openai client is synchronous, so an attempt runs entirely in the
caller's thread.

`http_client` builds the HTTP client the openai client sends on. Its transport (`DeadlineTransport`)
is httpx's own HTTP transport rebuilt from public parts: an httpcore connection pool given a
network backend (`_Backend`) that bounds every operation by the deadline, httpcore's errors
raised as httpx's. httpx reads the environment's proxies only for the transports it builds
itself, so `http_client` reads them as httpx does (`environment_proxies`) and mounts a deadline
transport for each: a proxied request is under the deadline too. Name resolution happens before
the first connect and is not bounded by it (the system resolver cannot be interrupted).

The client follows a redirect only within the origin it was sent to (scheme, host and port): a
307 or 308 re-sends the request, conversation included, so a redirect to another port or host
would post it there and its answer would be recorded as the configured endpoint's. A redirect
to another origin raises `CrossOriginRedirect` instead (not an httpx error: the openai client
lets it through unchanged, and the caller records it as the call's failure, not retried).

A response's body is bounded in bytes as the attempt is in time: inside `bounded(max_bytes)`
(outside one: `MAX_RESPONSE_BYTES`), the transport hands the client the body already decoded
(its Content-Encoding undone by httpx's own decoders, which inflate in pieces of at most 1 MiB)
and counts it; past `max_bytes` it raises `ResponseTooLarge`, which the openai client lets
through. A 3 MB gzip body that inflates to gigabytes, or a chunked body that never ends, thus
costs at most `max_bytes` plus one piece, never the whole body. The cap, like the deadline,
belongs to the thread making the request.
"""

from __future__ import annotations

import functools
import ipaddress
import ssl
import threading
import time
import urllib.request
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import httpcore2
import httpx2

from harness.models.options import MAX_RESPONSE_BYTES

# `at`: this thread's deadline (time.monotonic()), or None; `max_bytes`: its cap on a body, or None
_thread = threading.local()


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Inside the block, this thread's network operations share one budget of `seconds`."""
    previous = getattr(_thread, "at", None)
    _thread.at = time.monotonic() + seconds
    try:
        yield
    finally:
        _thread.at = previous


def left(timeout: float | None, expired: type[httpcore2.TimeoutException]) -> float | None:
    """An operation's own timeout, cut to what is left of the thread's deadline; raise when none is."""
    at = getattr(_thread, "at", None)
    if at is None:
        return timeout
    remaining = at - time.monotonic()
    if remaining <= 0:
        raise expired("the attempt's deadline has passed")
    return remaining if timeout is None else min(timeout, remaining)


# --- under the connection pool: every operation bounded ---------------------------------


class _Stream(httpcore2.NetworkStream):
    """A connection whose every operation is bounded by the calling thread's deadline."""

    def __init__(self, stream: httpcore2.NetworkStream) -> None:
        self._stream = stream

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._stream.read(max_bytes, left(timeout, httpcore2.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._stream.write(buffer, left(timeout, httpcore2.WriteTimeout))

    def close(self) -> None:
        self._stream.close()

    def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore2.NetworkStream:
        return _Stream(self._stream.start_tls(ssl_context, server_hostname, left(timeout, httpcore2.ConnectTimeout)))

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class _Backend(httpcore2.NetworkBackend):
    """httpcore's own socket backend, its connections opened and used under the calling thread's deadline."""

    def __init__(self) -> None:
        self._backend = httpcore2.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.NetworkStream:
        timeout = left(timeout, httpcore2.ConnectTimeout)
        return _Stream(self._backend.connect_tcp(host, port, timeout, local_address, socket_options))

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore2.NetworkStream:
        timeout = left(timeout, httpcore2.ConnectTimeout)
        return _Stream(self._backend.connect_unix_socket(path, timeout, socket_options))

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)


# --- the transport: httpx's, from public parts ------------------------------------------

# httpcore's errors and the httpx errors its transport raises for them, each before its base class.
_ERRORS: tuple[tuple[type[Exception], type[httpx2.TransportError]], ...] = (
    (httpcore2.ConnectTimeout, httpx2.ConnectTimeout),
    (httpcore2.ReadTimeout, httpx2.ReadTimeout),
    (httpcore2.WriteTimeout, httpx2.WriteTimeout),
    (httpcore2.PoolTimeout, httpx2.PoolTimeout),
    (httpcore2.TimeoutException, httpx2.TimeoutException),
    (httpcore2.ConnectError, httpx2.ConnectError),
    (httpcore2.ReadError, httpx2.ReadError),
    (httpcore2.WriteError, httpx2.WriteError),
    (httpcore2.NetworkError, httpx2.NetworkError),
    (httpcore2.ProxyError, httpx2.ProxyError),
    (httpcore2.UnsupportedProtocol, httpx2.UnsupportedProtocol),
    (httpcore2.LocalProtocolError, httpx2.LocalProtocolError),
    (httpcore2.RemoteProtocolError, httpx2.RemoteProtocolError),
    (httpcore2.ProtocolError, httpx2.ProtocolError),
)
_CORE_ERRORS = tuple(core for core, _ in _ERRORS)


@contextmanager
def _as_httpx_errors() -> Iterator[None]:
    """httpcore's errors raised as httpx's, with the same message (what the openai client catches)."""
    try:
        yield
    except _CORE_ERRORS as error:
        public = next(public for core, public in _ERRORS if isinstance(error, core))
        raise public(str(error)) from error


class _Body(httpx2.SyncByteStream):
    """A response body read from the pool, its errors raised as httpx's."""

    def __init__(self, stream: Iterable[bytes]) -> None:
        self._stream = stream

    def __iter__(self) -> Iterator[bytes]:
        with _as_httpx_errors():
            yield from self._stream

    def close(self) -> None:
        close = getattr(self._stream, "close", None)
        if close is not None:
            close()


class DeadlineTransport(httpx2.BaseTransport):
    """httpx's HTTP transport over `pool` (a connection pool or a proxy, as httpx builds them), whose
    connections are opened through the deadline's backend."""

    def __init__(self, pool: httpcore2.ConnectionPool | httpcore2.SOCKSProxy) -> None:
        self._pool = pool

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        url = request.url
        sent = httpcore2.Request(
            method=request.method,
            url=httpcore2.URL(scheme=url.raw_scheme, host=url.raw_host, port=url.port, target=url.raw_path),
            headers=request.headers.raw,
            content=request.stream,  # type: ignore[arg-type]  # a client's request: a sync stream
            extensions=request.extensions,
        )
        with _as_httpx_errors():
            answer = self._pool.handle_request(sent)
        return decoded_within(
            httpx2.Response(
                status_code=answer.status,
                headers=answer.headers,
                stream=_Body(answer.stream),  # type: ignore[arg-type]  # a sync pool's: an iterable
                extensions=answer.extensions,
            ),
            byte_cap(),
        )

    def close(self) -> None:
        with _as_httpx_errors():
            self._pool.close()


_BACKEND = _Backend()  # stateless: one for every pool


# --- the body: bounded bytes --------------------------------------------------------------


class ResponseTooLarge(Exception):
    """A response's body, decoded, ran past the calling thread's cap (`bounded`). Not an httpx
    error, so the openai client neither retries it nor wraps it: it reaches the caller as is."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the response's body ran past {limit:,} bytes (decoded)")
        self.limit = limit


@contextmanager
def bounded(max_bytes: int) -> Iterator[None]:
    """Inside the block, each response this thread reads is cut off past `max_bytes` decoded bytes."""
    previous = getattr(_thread, "max_bytes", None)
    _thread.max_bytes = max_bytes
    try:
        yield
    finally:
        _thread.max_bytes = previous


def byte_cap() -> int:
    """The calling thread's cap on a response body (`MAX_RESPONSE_BYTES` outside `bounded`)."""
    cap = getattr(_thread, "max_bytes", None)
    return MAX_RESPONSE_BYTES if cap is None else cap


# Headers that describe the body as sent; the body handed on is decoded, so they no longer hold.
_AS_SENT = (b"content-encoding", b"content-length")


def decoded_within(response: httpx2.Response, limit: int) -> httpx2.Response:
    """`response` with its body decoded (its Content-Encoding undone) and cut off past `limit` bytes."""
    encoded = "content-encoding" in response.headers
    headers = [(k, v) for k, v in response.headers.raw if not (encoded and k.lower() in _AS_SENT)]
    return httpx2.Response(
        status_code=response.status_code,
        headers=headers,
        stream=_Capped(response, limit),
        extensions=response.extensions,
    )


class _Capped(httpx2.SyncByteStream):
    """A response's decoded body (`iter_bytes`: httpx's decoders, in pieces of at most 1 MiB),
    counted; past `limit` bytes, ResponseTooLarge."""

    def __init__(self, response: httpx2.Response, limit: int) -> None:
        self._response, self._limit = response, limit

    def __iter__(self) -> Iterator[bytes]:
        read = 0
        for piece in self._response.iter_bytes():
            read += len(piece)
            if read > self._limit:
                raise ResponseTooLarge(self._limit)
            yield piece

    def close(self) -> None:
        self._response.close()


def _pool(
    ssl_context: ssl.SSLContext, limits: httpx2.Limits, proxy: httpx2.Proxy | None
) -> httpcore2.ConnectionPool | httpcore2.SOCKSProxy:
    """The connection pool httpx's transport builds (direct, or through `proxy`), on the deadline's backend."""
    shared: dict[str, Any] = {
        "ssl_context": ssl_context,
        "max_connections": limits.max_connections,
        "max_keepalive_connections": limits.max_keepalive_connections,
        "keepalive_expiry": limits.keepalive_expiry,
        "network_backend": _BACKEND,
    }
    if proxy is None:
        return httpcore2.ConnectionPool(**shared)
    url = proxy.url
    proxy_url = httpcore2.URL(scheme=url.raw_scheme, host=url.raw_host, port=url.port, target=url.raw_path)
    if url.scheme in ("socks5", "socks5h"):  # needs the socksio package, as httpx does
        return httpcore2.SOCKSProxy(proxy_url=proxy_url, proxy_auth=proxy.raw_auth, **shared)
    return httpcore2.HTTPProxy(
        proxy_url=proxy_url,
        proxy_auth=proxy.raw_auth,
        proxy_headers=proxy.headers.raw,
        proxy_ssl_context=proxy.ssl_context,
        **shared,
    )


# --- the client ---------------------------------------------------------------------------


def http_client(make: Callable[..., httpx2.Client], trust_env: bool, limits: httpx2.Limits) -> httpx2.Client:
    """An HTTP client made by `make` (the openai package's `DefaultHttpxClient`) whose requests,
    proxied or not, run under the calling thread's deadline: TLS verified with the default context,
    `limits` on its pools, and with `trust_env` the environment's proxies (`environment_proxies`)
    and TLS settings, as httpx uses them."""
    context = tls_context(trust_env)
    proxies = environment_proxies() if trust_env else {}
    mounts = {
        pattern: None if url is None else DeadlineTransport(_pool(context, limits, httpx2.Proxy(url)))
        for pattern, url in proxies.items()
    }  # a None mount (NO_PROXY) sends through the client's own transport
    return make(
        trust_env=trust_env,
        transport=DeadlineTransport(_pool(context, limits, None)),
        mounts=mounts,
        event_hooks={"response": [same_origin_only]},
    )


# --- redirects -----------------------------------------------------------------------------


class CrossOriginRedirect(Exception):
    """An endpoint redirected a request to another origin: refused, nothing is sent there."""

    def __init__(self, status: int, origin: str, target: str) -> None:
        super().__init__(
            f"refused: the endpoint ({origin}) redirected to another origin, {target} (HTTP {status}), where the "
            "request would be sent again; if the endpoint has moved, give its new address with --base-url"
        )
        self.origin, self.target = origin, target


def same_origin_only(response: httpx2.Response) -> None:
    """A response hook: raise CrossOriginRedirect for a redirect whose target is of another origin
    than the request's. Every hop is checked, so a chain never leaves the first request's origin."""
    if not response.has_redirect_location:
        return
    sent = response.request.url
    try:
        target = sent.join(response.headers["Location"])
    except httpx2.InvalidURL:
        return  # the client refuses a Location it cannot read (a protocol error)
    if target.origin != sent.origin:
        raise CrossOriginRedirect(response.status_code, _shown(sent.origin), _shown(target.origin))


def _shown(origin: httpx2.Origin) -> str:
    """An origin as a URL's start: scheme, host and port."""
    host = f"[{origin.host}]" if ":" in origin.host else origin.host
    return f"{origin.scheme}://{host}:{origin.port}"


@functools.cache
def tls_context(trust_env: bool) -> ssl.SSLContext:
    """The default verifying TLS context, built once: loading the CA bundle takes ~0.1 s per client."""
    return httpx2.create_ssl_context(trust_env=trust_env)


def environment_proxies() -> dict[str, str | None]:
    """URL patterns (httpx's `mounts` keys) and the proxy URL for each, from HTTP_PROXY, HTTPS_PROXY
    and ALL_PROXY, or None for a host NO_PROXY exempts: what httpx reads from the environment for
    the transports it builds itself (and cannot be told to build under a deadline)."""
    found = urllib.request.getproxies()
    patterns: dict[str, str | None] = {}
    for scheme in ("http", "https", "all"):
        if found.get(scheme):
            url = found[scheme]
            patterns[f"{scheme}://"] = url if "://" in url else f"http://{url}"
    for host in (entry.strip() for entry in found.get("no", "").split(",")):
        if host == "*":
            return {}  # no proxy for any host
        pattern = _exempt(host) if host else None
        if pattern is not None and _readable(pattern):
            patterns[pattern] = None
    return patterns


def _exempt(host: str) -> str | None:
    """The URL pattern of one NO_PROXY entry, as httpx writes it (curl's rules: `example.com`
    covers its subdomains, `.example.com` and `*.example.com` only them); None for an entry httpx skips."""
    if "://" in host:
        return host
    address = host.split("/")[0]
    if _is_ip(address, ipaddress.IPv4Address) or host.lower() == "localhost":
        return f"all://{host}"
    if _is_ip(address, ipaddress.IPv6Address):
        if "/" in host:
            address, _, subnet = host.partition("/")
            return f"all://[{address}]/{subnet}"
        return f"all://[{host}]"
    if host.startswith("[") or (host.startswith("*.") and "/" not in host):
        return f"all://{host}"
    return None if "/" in host else f"all://*{host}"


def _is_ip(text: str, kind: type[ipaddress.IPv4Address | ipaddress.IPv6Address]) -> bool:
    try:
        kind(text)
    except ValueError:
        return False
    return True


def _readable(pattern: str) -> bool:
    """Whether httpx reads `pattern` as a URL pattern; it skips an entry it cannot (as curl and Go
    do). Its pattern class is not public, so a client with that one mount is asked."""
    try:
        httpx2.Client(transport=httpx2.MockTransport(_unused), mounts={pattern: None}, trust_env=False).close()
    except (httpx2.InvalidURL, ValueError):
        return False
    return True


def _unused(request: httpx2.Request) -> httpx2.Response:
    raise AssertionError("never sent: the client only reads a mount pattern")
