"""In-flight sharing: identical requests made at the same time are sent once.

Two policies often send the same request at the same turn (the same view, before they differ).
Run one after the other, the second finds the first's response in the cache; run at once
(`--concurrency 2`), both missed the cache and both were sent, and could come back different.
Here the first caller of a key sends the request; callers of the same key that arrive while it
is in flight wait for it and share its outcome, response or error alike.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import TypeVar

T = TypeVar("T")


class InFlight:
    """One request per key at a time; safe to share between threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: dict[str, Future] = {}

    def share(self, key: str, send: Callable[[], T]) -> tuple[T, bool]:
        """`send()`'s result, and False; or, when the same key is already in flight, that call's
        result (or its exception, raised here too), and True."""
        with self._lock:
            future = self._pending.get(key)
            leader = future is None
            if leader:
                future = self._pending[key] = Future()
        assert future is not None
        if not leader:
            return future.result(), True
        try:
            result = send()
        except BaseException as exc:
            future.set_exception(exc)
            raise
        else:
            future.set_result(result)
            return result, False
        finally:
            with self._lock:
                del self._pending[key]
