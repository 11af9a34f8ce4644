"""Rate limits toward an endpoint: requests and tokens per minute, and a concurrency that adapts to 429s.

A provider limits each organisation per model: so many requests per minute (RPM) and tokens per
minute (TPM). A batch of 8 conversations at once sends faster than a limit of 60 RPM allows, and
a batch split over machines (`--shard K/N`) shares one limit that no machine sees. Here:

- **`RateLimits`**: `--max-rpm` and `--max-tpm` as given for the whole batch, and this machine's
  share: each figure divided by the shard count, rounded down, so N shards together never exceed
  it (a share below 1 is refused). One `Pacer` per model name of the run (`Pacers`), shared by
  every call of that model whatever its role and whichever `--base-url` serves it: the limit is
  the model's, as a provider's is.
- **`Window`**: a sliding window, not a fixed minute: a request is sent only when the requests
  (and tokens) admitted in the `WINDOW` seconds before it leave room for it, so no span of that
  length holds more than the limit, wherever it starts. `WINDOW` is a minute plus `SLACK`: a
  request reaches the endpoint a little after it is admitted, by a delay that varies (connecting,
  sending), and the endpoint counts arrivals.
- **Tokens of a request** are counted when it is admitted, as OpenAI counts them against TPM: its
  input (the characters/4 estimate of its messages: OpenAI's own limiter estimates from the
  character count too) plus its `max_tokens` when one is sent (the rate-limits guide: "your rate
  limit is calculated as the maximum of max_tokens and the estimated number of tokens based on
  the character count of your request"; the cookbook's `api_request_parallel_processor.py` counts
  prompt tokens plus `max_tokens`, as here: the sum is never below the maximum). The count is not
  reconciled with the usage the response reports: a provider does not give back what it admitted.
  Without `--max-tokens` the output cannot be known beforehand and only the input is counted.
- **`Aimd`**: the calls in flight to the model adapt to HTTP 429: a 429 halves the number allowed
  (not below 1), and each run of successes as long as the number allowed raises it by one
  (additive increase, multiplicative decrease, as TCP's congestion window), back up to the
  most that were in flight before the first 429 (at most `--concurrency`: a conversation has one
  call in flight at a time). A 429 to a request sent before the last decrease does not halve
  again: one burst of refusals is one signal. Retries (with the endpoint's `Retry-After`) are
  `harness.models.retry`'s, as before; this sits beside them, around each attempt.
- **Recorded per call** (`Paced`): how many of its requests waited, for how long in all, how many
  answers were 429, and the lowest concurrency allowed while it ran; calls.jsonl keeps them.

The offline `reference` models call nothing and are never paced. The clock is injected (`Clock`),
so tests run on a fake one.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from harness.base.errors import InputError
from harness.base.messages import estimate_tokens
from harness.models.retry import AttemptFailed

T = TypeVar("T")

MINUTE = 60.0
SLACK = 1.0  # seconds kept beyond the minute: a request arrives at the endpoint after it is admitted
WINDOW = MINUTE + SLACK
THROTTLED = 429  # Too Many Requests


class Clock(Protocol):
    """Monotonic seconds, and a way to wait; a test gives a fake one."""

    def now(self) -> float: ...

    def sleep(self, seconds: float) -> None: ...


class SystemClock:
    """The machine's monotonic clock."""

    def now(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


@dataclass(frozen=True)
class RateLimits:
    """`--max-rpm` and `--max-tpm` for the whole batch (None: no limit), split over `shards` machines."""

    rpm: int | None = None
    tpm: int | None = None
    shards: int = 1  # --shard K/N: N; each machine gets its share

    def __post_init__(self) -> None:
        for option, figure in (("--max-rpm", self.rpm), ("--max-tpm", self.tpm)):
            if figure is not None and figure // self.shards < 1:
                raise InputError(
                    f"{option} {figure} over {self.shards} shards leaves each less than 1 per minute: "
                    "give a larger limit or fewer shards"
                )

    @property
    def any(self) -> bool:
        return self.rpm is not None or self.tpm is not None

    @property
    def shard_rpm(self) -> int | None:
        """This machine's requests per minute: the batch's divided by the shards, rounded down."""
        return None if self.rpm is None else self.rpm // self.shards

    @property
    def shard_tpm(self) -> int | None:
        return None if self.tpm is None else self.tpm // self.shards

    def as_record(self) -> dict[str, Any]:
        """The manifest's `model_options.rate_limits`: the batch's figures, the shards, and each
        shard's (the report says them from there: harness.report.header)."""
        return {
            "max_rpm": self.rpm,
            "max_tpm": self.tpm,
            "shards": self.shards,
            "shard_rpm": self.shard_rpm,
            "shard_tpm": self.shard_tpm,
        }

    @classmethod
    def from_record(cls, record: dict[str, Any] | None) -> RateLimits:
        """As recorded (a run before rate limits: none)."""
        if not record:
            return cls()
        return cls(record.get("max_rpm"), record.get("max_tpm"), int(record.get("shards") or 1))


class Window:
    """At most `rpm` requests and `tpm` tokens admitted in any `WINDOW` seconds (thread-safe)."""

    def __init__(self, rpm: int | None, tpm: int | None, clock: Clock) -> None:
        self.rpm, self.tpm, self._clock = rpm, tpm, clock
        self._admitted: deque[tuple[float, int]] = deque()  # (when, tokens), oldest first
        self._tokens = 0  # the sum of the tokens in `_admitted`
        self._lock = threading.Lock()

    def admit(self, tokens: int) -> float:
        """Wait until a request of `tokens` fits, admit it; return the seconds waited. A request
        larger than the whole TPM is admitted alone, into an empty window: the endpoint decides."""
        started, slept = self._clock.now(), False
        while True:
            with self._lock:
                now = self._clock.now()
                self._forget(now)
                wait = self._wait(now, tokens)
                if wait <= 0:
                    self._admitted.append((now, tokens))
                    self._tokens += tokens
                    return now - started if slept else 0.0
            self._clock.sleep(wait)
            slept = True

    def _forget(self, now: float) -> None:
        while self._admitted and self._admitted[0][0] <= now - WINDOW:
            self._tokens -= self._admitted.popleft()[1]

    def _wait(self, now: float, tokens: int) -> float:
        """Seconds until the oldest admissions that leave room have left the window (0: room now)."""
        leave = 0  # how many of the oldest must leave
        if self.rpm is not None:
            leave = max(leave, len(self._admitted) - self.rpm + 1)
        if self.tpm is not None and self._admitted:
            over, held = self._tokens + min(tokens, self.tpm) - self.tpm, 0
            while over > 0 and held < len(self._admitted):
                over -= self._admitted[held][1]
                held += 1
            leave = max(leave, held if over <= 0 else len(self._admitted))
        if leave <= 0:
            return 0.0
        return self._admitted[leave - 1][0] + WINDOW - now


class Aimd:
    """The calls in flight allowed toward a model: halved on a 429, grown by one per window of successes."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._cond = threading.Condition()
        self.allowed: int | None = None  # None: no 429 yet, as many as the conversations send
        self.low: int | None = None  # the lowest it fell to
        self._in_flight = self._peak = self._successes = 0
        self._generation = 0  # bumped at each decrease: a 429 to an older request does not halve again

    def acquire(self) -> tuple[int, float]:
        """Wait for a free place; return the generation it was taken in and the seconds waited."""
        started, held = self._clock.now(), False
        with self._cond:
            while self.allowed is not None and self._in_flight >= self.allowed:
                held = True
                self._cond.wait()
            self._in_flight += 1
            self._peak = max(self._peak, self._in_flight)
            return self._generation, self._clock.now() - started if held else 0.0

    def release(self, generation: int, throttled: bool) -> int | None:
        """Give the place back after a 429 (`throttled`) or a success; return the number allowed now."""
        with self._cond:
            self._in_flight -= 1
            if throttled:
                if generation == self._generation:
                    self._decrease()
            elif self.allowed is not None:
                self._successes += 1
                if self._successes >= self.allowed:
                    self._successes = 0
                    self.allowed += 1
                    if self.allowed > self._peak:  # back where it was before the first 429
                        self.allowed = None
            self._cond.notify_all()
            return self.allowed

    def settle(self) -> None:
        """Give the place back after a failure that says nothing of the rate (a timeout, a 500)."""
        with self._cond:
            self._in_flight -= 1
            self._cond.notify_all()

    def _decrease(self) -> None:
        current = self.allowed if self.allowed is not None else self._peak
        self.allowed = max(1, current // 2)
        self.low = self.allowed if self.low is None else min(self.low, self.allowed)
        self._successes = 0
        self._generation += 1


@dataclass(frozen=True)
class Paced:
    """What pacing did to one call: requests that waited, seconds waited in all, 429 answers, and
    the lowest number of calls in flight allowed while it ran (None: no 429 had lowered it)."""

    waits: int = 0
    waited_s: float = 0.0
    throttled: int = 0
    concurrency_low: int | None = None

    def plus(self, waited: float, throttled: bool, allowed: int | None) -> Paced:
        low = self.concurrency_low
        if allowed is not None:
            low = allowed if low is None else min(low, allowed)
        return Paced(self.waits + (waited > 0), self.waited_s + waited, self.throttled + throttled, low)


@dataclass
class Tally:
    """The call under way: the tokens each of its requests is counted for, and what pacing has
    done to it so far (None: the call is not paced)."""

    tokens: int = 0
    paced: Paced | None = field(default_factory=Paced)


class Pacer:
    """One model's pacing: its window (when limited) and its adaptive concurrency; shared by threads."""

    def __init__(self, limits: RateLimits, clock: Clock | None = None) -> None:
        clock = clock or SystemClock()
        self.window = Window(limits.shard_rpm, limits.shard_tpm, clock) if limits.any else None
        self.aimd = Aimd(clock)
        self._call = threading.local()  # `tally`: what pacing did to the call this thread is making

    @contextmanager
    def call(self, tokens: int) -> Iterator[Tally]:
        """While one call is made in this thread (its attempts each sent through `send`, each
        counted for `tokens`, `admission_tokens`): the tally of what pacing did to it."""
        tally = Tally(tokens)
        self._call.tally = tally
        try:
            yield tally
        finally:
            self._call.tally = None

    def send(self, attempt: Callable[[], T]) -> T:
        """One request of the call under way: a place in flight, then room in the window, then `attempt()`."""
        tally: Tally | None = getattr(self._call, "tally", None)
        generation, waited = self.aimd.acquire()
        throttled, allowed = False, self.aimd.allowed
        try:
            if self.window is not None:
                waited += self.window.admit(tally.tokens if tally else 0)
            result = attempt()
        except AttemptFailed as failure:
            throttled = failure.status == THROTTLED
            if throttled:
                allowed = self.aimd.release(generation, True)
            else:
                self.aimd.settle()
            raise
        except BaseException:
            self.aimd.settle()
            raise
        else:
            allowed = self.aimd.release(generation, False)
            return result
        finally:
            if tally is not None and tally.paced is not None:
                tally.paced = tally.paced.plus(waited, throttled, allowed)


class Pacers:
    """One `Pacer` per model name of a run (its limit is the model's, as a provider's is)."""

    def __init__(self, limits: RateLimits, clock: Clock | None = None) -> None:
        self.limits, self._clock = limits, clock
        self._made: dict[str, Pacer] = {}
        self._lock = threading.Lock()

    def of(self, name: str) -> Pacer:
        with self._lock:
            if name not in self._made:
                self._made[name] = Pacer(self.limits, self._clock)
            return self._made[name]


def admission_tokens(input_chars: int, max_tokens: int | None) -> int:
    """The tokens a request is counted for at admission: the characters/4 estimate of its input
    plus its `max_tokens` (none sent: 0)."""
    return estimate_tokens(input_chars) + (max_tokens or 0)
