"""The total deadline under the HTTP transport: per thread, cut to what is left, on every
connection the client opens (direct, TLS, or through a proxy from the environment)."""

from __future__ import annotations

import shutil
import socket
import ssl
import subprocess
import threading
import time
import tracemalloc
import zlib
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpcore2
import httpx2
import pytest

from harness.models.deadline import (
    ResponseTooLarge,
    bounded,
    byte_cap,
    deadline,
    http_client,
    left,
    tls_context,
)
from harness.models.options import MAX_RESPONSE_BYTES
from tests.loopback import Reply, ScriptedServer

LIMITS = httpx2.Limits(max_connections=1000, max_keepalive_connections=100)
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")


@pytest.fixture(autouse=True)
def no_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    """No proxy of the machine's own reaches these tests; each sets the ones it means."""
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


def test_an_operation_gets_only_what_is_left_and_fails_once_nothing_is() -> None:
    assert left(60.0, httpcore2.ReadTimeout) == 60.0  # no deadline: the operation's own timeout
    with deadline(0.2):
        assert 0 < left(60.0, httpcore2.ReadTimeout) <= 0.2 and 0 < left(None, httpcore2.ReadTimeout) <= 0.2
        time.sleep(0.25)
        with pytest.raises(httpcore2.ReadTimeout, match="deadline has passed"):
            left(60.0, httpcore2.ReadTimeout)
    assert left(60.0, httpcore2.ReadTimeout) == 60.0  # restored when the block ends


def test_a_deadline_belongs_to_its_thread() -> None:
    seen: list[float | None] = []
    with deadline(0.01):
        time.sleep(0.02)
        other = threading.Thread(target=lambda: seen.append(left(5.0, httpcore2.ReadTimeout)))
        other.start()
        other.join()
    assert seen == [5.0]


def client(trust_env: bool = False) -> httpx2.Client:
    return http_client(httpx2.Client, trust_env, LIMITS)


def test_a_reply_that_drips_its_head_is_cut_at_the_deadline_and_raised_as_httpx_raises_it() -> None:
    with ScriptedServer() as server, client() as http:
        server.default = Reply(body="slow", drip=0.05, drip_head=True)
        started = time.monotonic()
        with pytest.raises(httpx2.ReadTimeout), deadline(0.3):
            http.get(server.base_url)
        assert time.monotonic() - started < 1.5
        server.default = Reply(body="fast")
        assert http.get(server.base_url).text == "fast"  # no deadline: the operations' own timeouts


def test_a_connection_and_its_failures_are_httpx_errors() -> None:
    with ScriptedServer() as server, client() as http:
        with pytest.raises(httpx2.ConnectTimeout, match="deadline has passed"), deadline(-1):
            http.get(server.base_url)
        port = server.port
    with client() as http, pytest.raises(httpx2.ConnectError):
        http.get(f"http://127.0.0.1:{port}/")  # nothing listens there now


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A loopback port that accepts connections and never says a word (a TLS handshake hangs)."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        yield listener.getsockname()[1]


def test_a_tls_handshake_is_under_the_deadline(silent_port) -> None:
    with client() as http:
        started = time.monotonic()
        with pytest.raises(httpx2.ConnectTimeout), deadline(0.3):
            http.get(f"https://127.0.0.1:{silent_port}/")
        assert time.monotonic() - started < 1.5


def test_tls_is_verified_with_the_default_context(tmp_path: Path) -> None:
    context = tls_context(False)
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed: no certificate to refuse")
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1"]
        + ["-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )
    server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    served = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    served.load_cert_chain(cert, key)
    server.socket = served.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        with client() as http, pytest.raises(httpx2.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            http.get(f"https://127.0.0.1:{server.server_address[1]}/")  # self-signed: refused
    finally:
        server.shutdown()
        thread.join(timeout=5)
        server.server_close()


# --- proxies from the environment ---------------------------------------------------------


@pytest.fixture
def proxy() -> Iterator[ScriptedServer]:
    """A loopback server standing for a proxy: it answers what it is sent (an absolute URL)."""
    with ScriptedServer() as server:
        server.default = Reply(body="from the proxy")
        yield server


def test_a_proxied_request_goes_through_the_proxy_under_the_deadline(proxy, monkeypatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.port}")
    with client(trust_env=True) as http:
        # Never resolved: the proxy is asked for it.
        assert http.get("http://model.example.invalid/v1/models").text == "from the proxy"
        assert proxy.requests[-1].path == "http://model.example.invalid/v1/models"
        proxy.default = Reply(body="slow", drip=0.05, drip_head=True)
        started = time.monotonic()
        with pytest.raises(httpx2.ReadTimeout), deadline(0.3):
            http.get("http://model.example.invalid/v1/models")
        assert time.monotonic() - started < 1.5
    with client(trust_env=False) as http, pytest.raises(httpx2.ConnectError):
        http.get("http://127.0.0.1:9/")  # without trust_env the environment's proxy is not asked


def routes(make: type[httpx2.Client] | None, url: str) -> str:
    """Who answered a GET of `url`: the proxy or the server itself (`make` None: the deadline's
    client; else httpx's own, which reads the environment itself)."""
    with client(trust_env=True) if make is None else make(trust_env=True) as http:
        return http.get(url).text


@pytest.mark.parametrize(
    "no_proxy",
    [
        "",
        "*",
        "127.0.0.1",
        "127.0.0.2",
        "127.0.0.0/8",
        "127.0.0.1/32, other.example",
        "http://127.0.0.1",
        "https://127.0.0.1",
        "127.0.0.1:{port}",
        "127.0.0.1:1",
        ".0.0.1",
        "0.0.1",
        "*.example.com, ::1, [::1], localhost",
        "127.0.0.0/99, not a host/",
    ],
)
def test_the_environment_s_proxies_are_read_as_httpx_reads_them(proxy, monkeypatch, no_proxy) -> None:
    with ScriptedServer() as direct, ScriptedServer(host="127.0.0.2") as other:
        direct.default, other.default = Reply(body="direct"), Reply(body="direct")
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.port}")
        monkeypatch.setenv("NO_PROXY", no_proxy.format(port=direct.port))
        for url in (f"http://127.0.0.1:{direct.port}/", f"http://127.0.0.2:{other.port}/"):
            assert routes(None, url) == routes(httpx2.Client, url), (no_proxy, url)


# --- the body: bounded bytes --------------------------------------------------------------

CAP = 64 * 1024  # a test's cap: the bodies below inflate or run to 500 times as much


def gzipped(size: int, layers: int = 1) -> bytes:
    """`size` zero bytes gzipped `layers` times, compressed a piece at a time (never held whole)."""
    data = b""
    for layer in range(layers):
        packer = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
        if layer == 0:
            piece = b"0" * (1 << 20)
            data = b"".join(packer.compress(piece) for _ in range(size // len(piece)))
        else:
            data = packer.compress(data)
        data += packer.flush()
    return data


def peak_bytes(read: Callable[[], object]) -> int:
    """The most memory Python held at once while `read` ran (tracemalloc), beyond what it held before."""
    tracemalloc.start()
    try:
        read()
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return peak


@pytest.mark.parametrize("layers", [1, 2])
def test_a_gzip_bomb_is_cut_off_past_the_cap_as_it_inflates(layers: int) -> None:
    bomb = gzipped(32 << 20, layers)  # 32 MiB inflated; some kilobytes on the wire
    encoding = ", ".join(["gzip"] * layers)
    with ScriptedServer() as server, client() as http:
        server.default = Reply(headers={"Content-Encoding": encoding}, body=bomb)

        def read() -> None:
            with pytest.raises(ResponseTooLarge, match=f"past {CAP:,} bytes"), bounded(CAP):
                http.get(server.base_url)

        assert peak_bytes(read) < 8 << 20  # a piece or two of 1 MiB, never the 32 MiB
        server.default = Reply(headers={"Content-Encoding": encoding}, body=gzipped(1 << 20, layers))
        with bounded(2 << 20):
            answer = http.get(server.base_url)
        assert answer.content == b"0" * (1 << 20)  # decoded once, by the transport
        assert "content-encoding" not in answer.headers and "content-length" not in answer.headers


def test_a_chunked_body_with_no_end_in_sight_is_cut_off_past_the_cap() -> None:
    chunk, count, sent = b"0" * 4096, 16 * 1024, []  # 64 MiB in all, a thousand times the cap

    def chunks() -> Iterator[bytes]:
        for _ in range(count):
            sent.append(1)
            yield chunk

    with ScriptedServer() as server, client() as http:
        server.default = Reply(chunks=chunks())
        with pytest.raises(ResponseTooLarge), bounded(CAP), deadline(30):
            http.get(server.base_url)
    assert len(sent) < count // 2  # the client left past the cap: the server wrote its socket's buffers at most


def test_a_body_within_the_cap_arrives_whole_and_the_cap_is_the_thread_s() -> None:
    with ScriptedServer() as server, client() as http:
        server.default = Reply(body="0" * CAP)
        with bounded(CAP):
            assert len(http.get(server.base_url).content) == CAP
        seen: list[int] = []
        with bounded(CAP - 1):
            other = threading.Thread(target=lambda: seen.append(byte_cap()))
            other.start()
            other.join()
            with pytest.raises(ResponseTooLarge):
                http.get(server.base_url)
    assert seen == [MAX_RESPONSE_BYTES] and byte_cap() == MAX_RESPONSE_BYTES  # outside a block: the default
