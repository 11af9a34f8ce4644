"""Bounded retries, apart from any endpoint: attempts counted, waits capped and said."""

from __future__ import annotations

import pytest

from harness.models.retry import AttemptFailed, CallFailed, Retries, retryable


def flaky(failures: list[AttemptFailed]):
    """An attempt that raises the given failures in turn, then succeeds."""

    def attempt() -> str:
        if failures:
            raise failures.pop(0)
        return "ok"

    return attempt


def retries(max_retries: int = 2, slept: list[float] | None = None) -> Retries:
    return Retries(max_retries, 0.5, 8.0, 2.0, "the timeout", sleep=(slept if slept is not None else []).append)


def test_a_retryable_failure_is_retried_and_every_attempt_counted() -> None:
    slept: list[float] = []
    result = retries(slept=slept).run(flaky([AttemptFailed("503", status=503, retryable=True)]), [])
    assert result == ("ok", 2) and len(slept) == 1 and 0.25 <= slept[0] <= 0.5


def test_past_max_retries_the_call_fails_with_every_attempt_counted() -> None:
    failures = [AttemptFailed("503", status=503, retryable=True) for _ in range(5)]
    with pytest.raises(CallFailed) as caught:
        retries(max_retries=2).run(flaky(failures), [])
    assert caught.value.attempts == 3 and caught.value.status == 503


@pytest.mark.parametrize(
    "failure", [AttemptFailed("bad", status=400), AttemptFailed("500", status=500, retryable=True)]
)
def test_a_final_failure_or_a_final_status_is_not_retried(failure: AttemptFailed) -> None:
    with pytest.raises(CallFailed) as caught:
        retries().run(flaky([failure]), [], final=frozenset({500}))
    assert caught.value.attempts == 1


def test_a_retry_after_longer_than_the_cap_is_cut_and_said() -> None:
    slept: list[float] = []
    notes: list[str] = []
    retries(slept=slept).run(flaky([AttemptFailed("429", status=429, retryable=True, retry_after=3600)]), notes)
    assert slept == [2.0] and notes == ["Retry-After 3600s capped to 2s (the timeout)"]


def test_which_statuses_may_pass() -> None:
    assert [s for s in (400, 401, 408, 422, 429, 500, 503) if retryable(s)] == [408, 429, 500, 503]
