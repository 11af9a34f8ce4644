"""In-flight sharing: one request per key at a time, its outcome shared with every waiter."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from harness.base.errors import ModelError
from harness.models.inflight import InFlight


def test_callers_of_one_key_at_once_share_one_send() -> None:
    inflight, sent, started, release = InFlight(), [], threading.Event(), threading.Event()

    def send() -> str:
        sent.append(1)
        started.set()
        release.wait(5)
        return "reply"

    with ThreadPoolExecutor(4) as pool:
        futures = [pool.submit(inflight.share, "k", send) for _ in range(4)]
        assert started.wait(5)
        threading.Timer(0.3, release.set).start()  # the others arrive while the first is in flight
        outcomes = [f.result(5) for f in futures]
    assert len(sent) == 1 and [o[0] for o in outcomes] == ["reply"] * 4
    assert sorted(o[1] for o in outcomes) == [False, True, True, True]  # one sent, three waited


def test_a_failure_is_shared_and_the_key_is_free_again() -> None:
    inflight = InFlight()
    with pytest.raises(ModelError):
        inflight.share("k", lambda: (_ for _ in ()).throw(ModelError("HTTP 503", 2)))
    assert inflight.share("k", lambda: "again") == ("again", False)


def test_different_keys_do_not_wait_for_each_other() -> None:
    inflight = InFlight()
    assert inflight.share("a", lambda: inflight.share("b", lambda: 2)[0] + 1) == (3, False)
