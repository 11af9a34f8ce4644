"""Rate limits toward an endpoint (harness.models.ratelimit), on a fake clock: no test waits."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from harness.base.errors import InputError
from harness.base.messages import Message
from harness.models import CallRequest
from harness.models.openai import OpenAIModel
from harness.models.ratelimit import WINDOW, Aimd, Paced, Pacer, Pacers, RateLimits, Window, admission_tokens
from harness.models.retry import AttemptFailed
from tests.conftest import user
from tests.loopback import Reply, ScriptedServer, chat_completion


class FakeClock:
    """Time moves only when someone sleeps: to the moment the sleeper wakes (thread-safe)."""

    def __init__(self) -> None:
        self.time = 1000.0
        self.slept: list[float] = []
        self._lock = threading.Lock()

    def now(self) -> float:
        with self._lock:
            return self.time

    def sleep(self, seconds: float) -> None:
        with self._lock:
            self.slept.append(seconds)
            self.time += max(seconds, 0.0)


def most_in_any_window(times: list[float]) -> int:
    """The most of `times` within any span shorter than a minute, wherever it starts."""
    times = sorted(times)
    return max((sum(1 for t in times[i:] if t - start < 60.0) for i, start in enumerate(times)), default=0)


def test_the_window_admits_at_most_the_rpm_in_any_minute() -> None:
    clock = FakeClock()
    window = Window(60, None, clock)
    admitted = []
    for _ in range(200):
        window.admit(1)
        admitted.append(clock.now())
    assert most_in_any_window(admitted) == 60
    assert admitted[59] == admitted[0]  # the first 60 go at once: a window, not a steady drip
    assert admitted[60] == pytest.approx(admitted[0] + WINDOW)  # the 61st waits for the first to leave


def test_a_request_that_fits_is_not_counted_as_a_wait() -> None:
    clock = FakeClock()
    window = Window(2, None, clock)
    assert window.admit(1) == 0.0
    assert window.admit(1) == 0.0
    assert window.admit(1) == pytest.approx(WINDOW)


def test_tokens_per_minute_hold_in_any_window() -> None:
    clock = FakeClock()
    window = Window(None, 1000, clock)
    admitted = []
    for size in [300, 500, 200, 400, 100, 600, 300] * 5:
        window.admit(size)
        admitted.append((clock.now(), size))
    for start, _ in admitted:
        assert sum(size for when, size in admitted if start <= when < start + 60.0) <= 1000


def test_a_request_larger_than_the_tpm_goes_alone_into_an_empty_window() -> None:
    clock = FakeClock()
    window = Window(None, 100, clock)
    window.admit(60)
    waited = window.admit(500)  # could never fit beside anything: the endpoint decides
    assert waited == pytest.approx(WINDOW)
    assert window.admit(1) == pytest.approx(WINDOW)  # and it fills the window after it


def test_threads_sharing_a_window_never_exceed_it() -> None:
    clock = FakeClock()
    window = Window(10, None, clock)
    admitted: list[float] = []
    lock = threading.Lock()

    def send() -> None:
        for _ in range(15):
            window.admit(1)
            with lock:
                admitted.append(clock.now())

    threads = [threading.Thread(target=send) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(admitted) == 90
    assert most_in_any_window(admitted) <= 10


def test_a_429_halves_the_concurrency_and_successes_grow_it_back() -> None:
    aimd = Aimd(FakeClock())
    places = [aimd.acquire()[0] for _ in range(8)]  # eight in flight: the peak
    assert aimd.release(places[0], throttled=True) == 4
    for generation in places[1:]:  # the rest of the burst was sent before the decrease: no second halving
        aimd.release(generation, throttled=True)
    assert aimd.allowed == 4
    generation, _ = aimd.acquire()
    assert aimd.release(generation, throttled=True) == 2
    grown = []
    for _ in range(2 + 3 + 4 + 5 + 6 + 7 + 8):  # a window of successes as long as the number allowed
        generation, _ = aimd.acquire()
        grown.append(aimd.release(generation, throttled=False))
    assert [grown[1], grown[4], grown[8]] == [3, 4, 5]
    assert grown[-1] is None  # back past the peak: no bound but the conversations'
    assert aimd.low == 2


def test_never_below_one_in_flight() -> None:
    aimd = Aimd(FakeClock())
    for _ in range(5):
        generation, _ = aimd.acquire()
        aimd.release(generation, throttled=True)
    assert aimd.allowed == 1 and aimd.low == 1


def test_a_lowered_concurrency_holds_the_next_request_back() -> None:
    aimd = Aimd(FakeClock())
    first, _ = aimd.acquire()
    second, _ = aimd.acquire()
    aimd.release(second, throttled=True)  # allowed: 1, and one is still in flight
    entered = threading.Event()

    def third() -> None:
        aimd.acquire()
        entered.set()

    thread = threading.Thread(target=third)
    thread.start()
    assert not entered.wait(0.05)
    aimd.release(first, throttled=False)
    assert entered.wait(5)
    thread.join()


def test_a_pacer_records_the_waits_and_429s_of_each_call() -> None:
    clock = FakeClock()
    pacer = Pacer(RateLimits(rpm=2), clock)
    refusals = iter([AttemptFailed("slow down", status=429, retryable=True)])

    def attempt() -> str:
        failure = next(refusals, None)
        if failure:
            raise failure
        return "ok"

    with pacer.call(tokens=10) as first:
        assert pacer.send(lambda: "ok") == "ok"
    assert first.paced == Paced()
    with pacer.call(tokens=10) as second:
        with pytest.raises(AttemptFailed):
            pacer.send(attempt)
        assert pacer.send(attempt) == "ok"  # the third request in the minute: it waits
    assert second.paced.waits == 1 and second.paced.waited_s == pytest.approx(WINDOW)
    assert second.paced.throttled == 1 and second.paced.concurrency_low == 1


def test_one_pacer_per_model_name() -> None:
    pacers = Pacers(RateLimits(rpm=5))
    assert pacers.of("openai:a") is pacers.of("openai:a")
    assert pacers.of("openai:a") is not pacers.of("openai:b")


def test_shards_divide_the_limits_rounding_down() -> None:
    limits = RateLimits(rpm=60, tpm=100_000, shards=7)
    assert (limits.shard_rpm, limits.shard_tpm) == (8, 14_285)
    assert RateLimits.from_record(limits.as_record()) == limits


def test_a_share_below_one_per_minute_is_refused() -> None:
    with pytest.raises(InputError, match="--max-rpm 5 over 10 shards"):
        RateLimits(rpm=5, shards=10)


def test_tokens_at_admission_are_the_input_estimate_plus_the_cap() -> None:
    assert admission_tokens(401, 512) == 101 + 512
    assert admission_tokens(400, None) == 100


# --- through the openai client: each request paced, retries included ---------------------


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as running:
        yield running


def paced_model(server: ScriptedServer, limits: RateLimits, clock: FakeClock, **options: object) -> OpenAIModel:
    return OpenAIModel("m", base_url=server.base_url, pacer=Pacer(limits, clock), sleep=lambda s: None, **options)  # type: ignore[arg-type]


def test_a_request_is_counted_for_its_input_estimate_plus_its_max_tokens(server: ScriptedServer) -> None:
    server.default = Reply(body=chat_completion("ok"))
    clock = FakeClock()
    request = CallRequest("answer", (Message("user", "x" * 40),), user(1, "x"))  # 10 tokens of input
    with paced_model(server, RateLimits(tpm=250), clock, max_tokens=100) as model:
        first, second, third = (model.complete(request).paced for _ in range(3))
    assert first == second == Paced()  # 110 each: two fit in 250
    assert third is not None and third.waits == 1 and third.waited_s == pytest.approx(WINDOW)


def test_a_429_and_its_retry_are_both_paced_and_recorded(server: ScriptedServer) -> None:
    server.enqueue(Reply(429, {"Retry-After": "0"}, body={"error": {"message": "slow down"}}))
    server.default = Reply(body=chat_completion("ok"))
    clock = FakeClock()
    request = CallRequest("answer", (Message("user", "hi"),), user(1, "hi"))
    with paced_model(server, RateLimits(rpm=1), clock) as model:
        completion = model.complete(request)
    assert completion.attempts == 2
    assert completion.paced == Paced(waits=1, waited_s=pytest.approx(WINDOW), throttled=1, concurrency_low=1)


def test_an_unpaced_model_records_nothing(server: ScriptedServer) -> None:
    server.default = Reply(body=chat_completion("ok"))
    with OpenAIModel("m", base_url=server.base_url) as model:
        assert model.complete(CallRequest("answer", (Message("user", "hi"),), user(1, "hi"))).paced is None
