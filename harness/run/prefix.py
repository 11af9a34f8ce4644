"""The cacheable prefix of each call: what a provider's prompt cache could serve.

OpenAI and Anthropic cache a request's prompt by exact prefix, per model: the leading part of a
request identical to the start of an earlier one is read from the cache at a fraction of the
input price. A policy that rewrites the head of its view (a summary, a window once it slides,
clearing old tool results) breaks that prefix, and may cost more than the longer history it
replaces.

Each call's prefix is measured against **the latest earlier request of the same conversation to
the same model, of the same kind (answer, judge, summarizer, ...) and the same session**. A
provider keeps many prefixes at once, so a summarizer call between two answers does not evict
the answers' prefix: comparing with the previous request of any kind would count a break at
every turn of every policy with an extra call. It is an estimate of what a cache could serve,
not what it did: it ignores the provider's minimum cacheable length (1,024 tokens at OpenAI and
Anthropic), its expiry (minutes without use), and Anthropic's need for explicit breakpoints.
What a provider says it served is recorded apart (`reported_cached_tokens`), never filled from this.

Messages are alike when they are sent alike (role, content, tool calls, tool call id): the
current user message is recorded with another origin once it is history, and a provider sees
no difference. The prefix is counted in messages, characters (`Message.text`, as every size here) and local
tokens (the per-message sum of `TokenCounter.sizes`, without the request's framing; None when the
encoding is unavailable). A first request has an empty prefix (0): nothing came before it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harness.base.messages import Message
from harness.base.sequences import common_prefix
from harness.policy.tokens import TOKENS_PER_REQUEST, RequestTokens, TokenCounter


@dataclass(frozen=True)
class Prefix:
    """The leading part of a request identical to its predecessor's (`PrefixTracker`)."""

    messages: int
    chars: int
    tiktoken: int | None  # None: the encoding is unavailable


class PrefixTracker:
    """The latest request of each (model, kind, session) of one conversation, and each new
    request's prefix shared with it. One per conversation, as the Caller is."""

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self._latest: dict[tuple[str, str, str], Sequence[Message]] = {}

    def measure(
        self, model: str, kind: str, session: str, messages: Sequence[Message], tokens: RequestTokens
    ) -> Prefix:
        """The prefix `messages` share with the latest request of the same key, which they then
        become; `tokens`: the figures of the whole request (so a long shared head is sized by
        subtracting the short rest, not by reading the head again)."""
        key = (model, kind, session)
        previous = self._latest.get(key, ())
        self._latest[key] = messages
        head = _sent_alike(previous, messages, common_prefix(previous, messages))
        if head == 0:
            return Prefix(0, 0, 0 if self.counter.available else None)
        if head <= len(messages) - head:  # the head is the shorter part: size it
            chars, local = self.counter.sizes(messages[:head])
        else:  # the whole less the rest, which is shorter (a full history's head is all but the turn)
            rest_chars, rest_local = self.counter.sizes(messages[head:])
            # the request's own framing (TOKENS_PER_REQUEST) is no part of any prefix
            local_whole = tokens.tiktoken - TOKENS_PER_REQUEST if tokens.tiktoken is not None else 0
            chars, local = tokens.chars - rest_chars, local_whole - rest_local
        return Prefix(head, chars, local if self.counter.available else None)


def _sent_alike(previous: Sequence[Message], messages: Sequence[Message], head: int) -> int:
    """The common prefix extended past `head` (messages equal as records) over messages that
    differ only in what is never sent (origin, turn, session)."""
    end = min(len(previous), len(messages))
    while head < end and _wire(previous[head]) == _wire(messages[head]):
        head += 1
    return head


def _wire(message: Message) -> tuple[object, ...]:
    """What of a message reaches the provider (`Message.as_openai`), as a comparable tuple."""
    return (message.role, message.content, message.tool_calls, message.tool_call_id)
