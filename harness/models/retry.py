"""Bounded retries of one model call, apart from any endpoint's protocol.

An adapter makes one attempt at a time and says how it failed (`AttemptFailed`: retryable or
not, the HTTP status, the endpoint's `Retry-After`); `Retries.run` repeats it until success, a
final failure or `max_retries` retries, waiting the endpoint's `Retry-After` (capped, with a note)
or a capped exponential backoff with jitter, and counts every attempt.
"""

from __future__ import annotations

import math
import random
import threading
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import TypeVar

T = TypeVar("T")


class AttemptFailed(Exception):
    """One attempt failed; `retryable` says whether another attempt may help."""

    def __init__(
        self, reason: str, *, status: int | None = None, retryable: bool = False, retry_after: float | None = None
    ) -> None:
        super().__init__(reason)
        self.reason, self.status, self.retryable, self.retry_after = reason, status, retryable, retry_after


class CallFailed(Exception):
    """A call gave up; `attempts` counts every request it made."""

    def __init__(self, failure: AttemptFailed, attempts: int) -> None:
        super().__init__(failure.reason)
        self.reason, self.status, self.attempts = failure.reason, failure.status, attempts


class Retries:
    """How often and how long to retry; shared by the threads of one model (the jitter source is locked)."""

    def __init__(
        self,
        max_retries: int,
        backoff_base: float,
        backoff_cap: float,
        max_retry_after: float,
        cap_name: str,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.max_retries, self.backoff_base, self.backoff_cap = max_retries, backoff_base, backoff_cap
        self.max_retry_after, self.cap_name, self._sleep = max_retry_after, cap_name, sleep
        self._lock = threading.Lock()
        self._random = random.Random()

    def run(self, attempt: Callable[[], T], notes: list[str], final: frozenset[int] = frozenset()) -> tuple[T, int]:
        """Attempt until success, a final failure, or `max_retries` retries; return (result, attempts).

        A status in `final` is not retried, whatever it is (e.g. a refused structured-output form).
        """
        made = 0
        while True:
            made += 1
            try:
                return attempt(), made
            except AttemptFailed as failure:
                if not failure.retryable or failure.status in final or made > self.max_retries:
                    raise CallFailed(failure, made) from None
                self._sleep(self.delay(made, failure.retry_after, notes))

    def delay(self, attempt: int, retry_after: float | None, notes: list[str]) -> float:
        """The endpoint's Retry-After (capped, with a note), else capped exponential backoff with jitter."""
        if retry_after is not None:
            if retry_after > self.max_retry_after:
                notes.append(f"Retry-After {retry_after:g}s capped to {self.max_retry_after:g}s ({self.cap_name})")
                return self.max_retry_after
            return retry_after
        with self._lock:
            jitter = self._random.uniform(0.5, 1.0)
        return min(self.backoff_cap, self.backoff_base * 2 ** (attempt - 1)) * jitter


def retryable(status: int) -> bool:
    """408, 429 and 5xx may pass; other statuses are final."""
    return status in (408, 429) or status >= 500


def retry_after_seconds(headers: Mapping[str, str], now: datetime | None = None) -> float | None:
    """Seconds to wait from `Retry-After-Ms`, or `Retry-After` (seconds or an HTTP date); None if
    absent or not a time (`nan`, `inf` and `1e999` are not: the backoff applies instead)."""
    millis = _finite(headers.get("retry-after-ms"))
    if millis is not None:
        return max(0.0, millis / 1000)
    value = headers.get("retry-after")
    if value is None:
        return None
    seconds = _finite(value)
    if seconds is not None:
        return max(0.0, seconds)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    when = when if when.tzinfo else when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def _finite(text: str | None) -> float | None:
    try:
        number = float(text) if text is not None else None
    except ValueError:
        return None
    return number if number is not None and math.isfinite(number) else None
