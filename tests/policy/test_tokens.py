"""Token figures: the estimate, the cached local count, and an unavailable encoding."""

from __future__ import annotations

import pytest

from harness.base.messages import Message
from harness.policy.tokens import TOKENS_PER_MESSAGE, TOKENS_PER_REQUEST, TokenCounter, estimate_tokens


@pytest.mark.parametrize("chars, estimate", [(0, 0), (1, 1), (4, 1), (5, 2), (400, 100)])
def test_the_estimate_is_characters_over_four_rounded_up(chars: int, estimate: int) -> None:
    assert estimate_tokens(chars) == estimate


def test_the_local_count_adds_chat_framing_to_each_content() -> None:
    counter = TokenCounter()
    messages = [Message("system", "You are terse."), Message("user", "hello world")]
    contents = sum(counter.content_tokens(m.content) for m in messages)
    assert counter.count(messages).tiktoken == contents + 2 * TOKENS_PER_MESSAGE + TOKENS_PER_REQUEST


def test_cl100k_is_loaded_offline() -> None:
    assert TokenCounter("cl100k_base").content_tokens("hello world") == 2


def test_each_content_is_encoded_once_however_often_it_is_sent() -> None:
    counter = TokenCounter()
    history = [Message("user", f"message {n}") for n in range(50)]
    for turn in range(1, 51):
        counter.count(history[:turn])
    assert counter.encoded == 50


def test_the_cache_keeps_at_most_its_bound_of_characters_the_first_counted_dropped_first() -> None:
    counter = TokenCounter(max_cached_chars=100)
    first, texts = "a" * 40, [f"{n:02d}" + "b" * 38 for n in range(10)]  # 40 characters each
    counts = [counter.content_tokens(t) for t in [first, *texts]]
    assert counter.encoded == 11
    assert [counter.content_tokens(t) for t in texts[-2:]] == counts[-2:] and counter.encoded == 11  # the last two kept
    assert [counter.content_tokens(t) for t in [first, *texts]] == counts  # the same counts, counted again
    assert counter.content_tokens(texts[-1]) == counts[-1] and counter.encoded == 22


def test_an_encoding_that_cannot_be_loaded_offline_is_unavailable_not_zero() -> None:
    counter = TokenCounter("no_such_encoding")
    figures = counter.count([Message("user", "hello")])
    assert not counter.available
    assert figures.tiktoken is None and figures.estimate == 2 and figures.chars == 5


def test_a_budget_count_is_the_requests_local_count_or_its_estimate_named() -> None:
    messages = [Message("system", "You are terse."), Message("user", "hello world")]
    local, fallback = TokenCounter(), TokenCounter("no_such_encoding")
    assert local.budget_count(messages).tokens == local.count(messages).tiktoken
    assert (
        local.budget_count(messages, whole_request=False).tokens == local.count(messages).tiktoken - TOKENS_PER_REQUEST
    )
    assert local.budget_count(messages).method == "tiktoken cl100k_base"
    assert fallback.budget_count(messages).tokens == fallback.count(messages).estimate
    assert fallback.budget_count(messages).method == "characters/4 estimate (no_such_encoding unavailable offline)"
