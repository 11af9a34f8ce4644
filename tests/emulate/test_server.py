"""The emulators' loopback server: requests handed to the emulator as received, replies written
whole or streamed, and nothing bound beyond 127.0.0.1."""

from __future__ import annotations

import http.client
import json
from collections.abc import Mapping

from harness.emulate.server import HOST, Reply, serve


class Echo:
    """Answers with what it was given; `/stream` answers in three chunks."""

    def handle(self, method: str, path: str, headers: Mapping[str, str], body: bytes) -> Reply:
        if path == "/stream":
            return Reply(200, iter([b"data: 1\n\n", b"data: 2\n\n", b"data: [DONE]\n\n"]))
        seen = {"method": method, "path": path, "type": headers.get("content-type"), "body": body.decode()}
        return Reply(201, json.dumps(seen).encode(), {"Content-Type": "application/json"})


def _request(base_url: str, method: str, path: str, body: bytes = b"") -> tuple[int, bytes]:
    host, port = base_url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=5)
    try:
        connection.request(method, path, body, {"Content-Type": "application/json"})
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def test_a_request_reaches_the_emulator_as_sent_and_its_reply_comes_back_whole() -> None:
    with serve(Echo()) as base_url:
        status, body = _request(base_url, "POST", "/v1/responses", b'{"a": 1}')
    assert status == 201
    assert json.loads(body) == {
        "method": "POST",
        "path": "/v1/responses",
        "type": "application/json",
        "body": '{"a": 1}',
    }


def test_a_streamed_reply_arrives_as_its_chunks_in_order() -> None:
    with serve(Echo()) as base_url:
        status, body = _request(base_url, "GET", "/stream")
    assert status == 200
    assert body == b"data: 1\n\ndata: 2\n\ndata: [DONE]\n\n"


def test_the_server_binds_the_loopback_interface_only() -> None:
    with serve(Echo()) as base_url:
        assert base_url.startswith(f"http://{HOST}:")
        assert HOST == "127.0.0.1"
