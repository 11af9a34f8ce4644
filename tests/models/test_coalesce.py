"""One send per request (harness.models.coalesce): the same bytes in one write, failures as before."""

from __future__ import annotations

import json
from typing import Any

import httpcore2
import httpx2
import pytest

from harness.models import coalesce
from harness.models.deadline import install as install_deadline

ANSWER = b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 12\r\n\r\n{"ok": true}'


class FakeStream(httpcore2.NetworkStream):
    """A connection that records every write (with its timeout) and answers each read from a script."""

    def __init__(self, answers: list[bytes], fail_write: type[Exception] | None = None) -> None:
        self.writes: list[tuple[bytes, float | None]] = []
        self.answers, self.fail_write = answers, fail_write

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return  # as httpcore's socket stream: nothing is sent
        if self.fail_write is not None:
            raise self.fail_write("the server closed the connection")
        self.writes.append((buffer, timeout))

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self.answers.pop(0) if self.answers else b""

    def close(self) -> None:
        pass

    def get_extra_info(self, info: str) -> Any:
        return None


class FakeBackend(httpcore2.NetworkBackend):
    def __init__(self, stream: FakeStream) -> None:
        self.stream = stream

    def connect_tcp(
        self, host: str, port: int, timeout: Any = None, local_address: Any = None, socket_options: Any = None
    ) -> httpcore2.NetworkStream:
        return self.stream


def client_on(stream: FakeStream) -> httpx2.Client:
    client = httpx2.Client(base_url="http://127.0.0.1:9", trust_env=False)
    client._transport._pool._network_backend = FakeBackend(stream)  # type: ignore[attr-defined]
    return client


def posted(one_send: bool, fail_write: type[Exception] | None = None) -> tuple[FakeStream, httpx2.Response]:
    stream = FakeStream([ANSWER], fail_write)
    with client_on(stream) as client:
        if one_send:
            coalesce.install(client)
        response = client.post("/chat/completions", json={"messages": [{"role": "user", "content": "Hello?"}]})
        response.read()
    return stream, response


def test_a_request_leaves_in_one_write_with_the_same_bytes() -> None:
    apart, answer = posted(one_send=False)
    together, same = posted(one_send=True)
    assert len(apart.writes) == 2  # httpcore alone: the head, then the body
    assert [w for w, _ in together.writes] == [b"".join(w for w, _ in apart.writes)]
    assert json.loads(same.content) == json.loads(answer.content) == {"ok": True}


def test_the_write_keeps_its_timeout() -> None:
    stream = FakeStream([ANSWER])
    with client_on(stream) as client:
        coalesce.install(client)
        client.post("/x", content=b"body", timeout=httpx2.Timeout(5.0, write=1.5)).read()
    assert [timeout for _, timeout in stream.writes] == [1.5]


def test_a_write_error_is_ignored_and_the_answer_read_as_httpcore_does() -> None:
    _, apart = posted(one_send=False, fail_write=httpcore2.WriteError)
    _, together = posted(one_send=True, fail_write=httpcore2.WriteError)
    assert apart.status_code == together.status_code == 200


def test_a_write_timeout_still_fails_the_request() -> None:
    for one_send in (False, True):
        with pytest.raises(httpx2.WriteTimeout):
            posted(one_send, fail_write=httpcore2.WriteTimeout)


def test_it_wraps_the_deadline_once_and_leaves_http2_pools_alone() -> None:
    with httpx2.Client(trust_env=False) as client:
        install_deadline(client)
        coalesce.install(client)
        coalesce.install(client)  # idempotent
        backend = client._transport._pool._network_backend  # type: ignore[attr-defined]
        assert isinstance(backend, coalesce._Backend) and not isinstance(backend._backend, coalesce._Backend)
    with httpx2.Client(trust_env=False) as client:
        client._transport._pool._http2 = True  # type: ignore[attr-defined]  # as `http2=True` sets it (h2 not installed)
        before = client._transport._pool._network_backend  # type: ignore[attr-defined]
        coalesce.install(client)
        assert client._transport._pool._network_backend is before  # type: ignore[attr-defined]
