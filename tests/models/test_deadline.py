"""The total deadline under the HTTP transport: per thread, cut to what is left, on every transport."""

from __future__ import annotations

import threading
import time

import httpcore2
import httpx2
import pytest

from harness.models.deadline import _Backend, _left, deadline, install


def test_an_operation_gets_only_what_is_left_and_fails_once_nothing_is() -> None:
    assert _left(60.0, httpcore2.ReadTimeout) == 60.0  # no deadline: the operation's own timeout
    with deadline(0.2):
        assert 0 < _left(60.0, httpcore2.ReadTimeout) <= 0.2 and 0 < _left(None, httpcore2.ReadTimeout) <= 0.2
        time.sleep(0.25)
        with pytest.raises(httpcore2.ReadTimeout, match="deadline has passed"):
            _left(60.0, httpcore2.ReadTimeout)
    assert _left(60.0, httpcore2.ReadTimeout) == 60.0  # restored when the block ends


def test_a_deadline_belongs_to_its_thread() -> None:
    seen: list[float | None] = []
    with deadline(0.01):
        time.sleep(0.02)
        other = threading.Thread(target=lambda: seen.append(_left(5.0, httpcore2.ReadTimeout)))
        other.start()
        other.join()
    assert seen == [5.0]


def test_every_transport_is_installed_proxies_from_the_environment_included(monkeypatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    with httpx2.Client(trust_env=True) as client:
        install(client)
        install(client)  # idempotent: never wrapped twice
        transports = [client._transport, *(t for t in client._mounts.values() if t is not None)]
        assert len(transports) >= 2
        for transport in transports:
            backend = transport._pool._network_backend
            assert isinstance(backend, _Backend) and not isinstance(backend._backend, _Backend)


def test_a_transport_it_cannot_reach_is_refused_loudly() -> None:
    client = httpx2.Client(transport=httpx2.MockTransport(lambda request: httpx2.Response(200)))
    with client, pytest.raises(RuntimeError, match="cannot put MockTransport under a deadline"):
        install(client)
