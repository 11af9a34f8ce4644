"""What a policy's token triggers and budgets count with: the one `counter` parameter and its rules.

Every built-in policy with a token trigger or budget takes `counter` (`COUNTER_PARAM`):

- `local` (the default, the harness's count before the parameter existed): the local tokenizer,
  tiktoken `cl100k_base` with each message's framing (`TokenCounter.budget_count`), or the
  characters/4 estimate when the encoding cannot be loaded offline; the count says which.
- `tiktoken`: the local tokenizer only. When its encoding cannot be loaded the count is
  `unavailable` and the trigger does not fire: never an estimate in its place.
- `estimate`: characters/4 of the messages' text, rounded up.
- `provider`: the provider-reported usage of the session's latest answer call, as the frameworks
  that trigger on it count. Pydantic AI Harness (`pydantic_ai_harness/compaction/_shared.py`,
  `estimate_context_tokens`) anchors on the latest response with reported usage: its
  `input_tokens + output_tokens` measure the history up to and including that response, and
  only the messages after it are estimated (characters/4); its `TieredCompaction` subtracts the
  estimate of what a compaction removed since. cline (`src/core/context/context-management/
  ContextManager.ts`, `shouldCompactContextWindow`) compares the previous request's
  `tokensIn + tokensOut + cacheWrites + cacheReads` with the window. Here: the answer call's
  `prompt_tokens + completion_tokens`, plus characters/4 of the difference between the counted
  messages' characters and those of that call's request and answer (what was added since, less
  what was removed), never below 0. When the session has had no answer call yet, the turn's
  reply was scripted, or the provider reported no usage (the offline `reference` model never
  does), the count is `unknown` and the trigger does not fire (cline does not compact without a
  previous request's usage); the note says why.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

from harness.base.messages import Message
from harness.chronology import UserTurn
from harness.policy.contract import AuxCalls, Param, TriggerCount, answer_usage
from harness.policy.tokens import TOKENS_PER_REQUEST, TokenCounter, estimate_tokens

COUNTERS = ("local", "tiktoken", "estimate", "provider")
DEFAULT_COUNTER = "local"  # what every token trigger counted with before `counter` existed
COUNTER_PARAM = Param(
    "counter",
    DEFAULT_COUNTER,
    "what the token triggers count with: local (tiktoken, else the estimate), tiktoken, estimate "
    "(characters/4), provider (the latest answer call's reported usage)",
    choices=COUNTERS,
)
ESTIMATE = "characters/4 estimate"

# A count from a list's characters and its local tokens (`TriggerCounter.of` for one session).
Measure = Callable[[int, int], TriggerCount]


@dataclass(frozen=True)
class Anchor:
    """The session's latest answer call: its reported tokens (None: unknown, and why), and the
    characters of the request and answer they measured."""

    tokens: int | None
    chars: int
    why: str


class TriggerCounter:
    """One policy's token counts, by its `counter` parameter; `learn` takes in each answer call."""

    def __init__(self, counter: str = DEFAULT_COUNTER, tokens: TokenCounter | None = None) -> None:
        if counter not in COUNTERS:
            raise ValueError(f"counter {counter!r}: one of {', '.join(COUNTERS)}")
        self.counter = counter
        self.local = tokens or TokenCounter()
        self.anchors: dict[str, Anchor] = {}  # per session: its latest answer call (`provider` only)

    def learn(self, turn: UserTurn, aux: AuxCalls) -> None:
        """Take in this turn's answer call (`AuxCalls.answer_usage`), for the `provider` counter."""
        usage = answer_usage(aux)
        if usage is None:
            self.anchors[turn.session] = Anchor(None, 0, f"turn {turn.number} made no answer call (scripted reply)")
            return
        chars = usage.request_chars + usage.answer_chars
        if usage.prompt_tokens is None or usage.completion_tokens is None:
            self.anchors[turn.session] = Anchor(None, chars, f"the answer call at turn {turn.number} reported no usage")
            return
        reported = usage.prompt_tokens + usage.completion_tokens
        self.anchors[turn.session] = Anchor(reported, chars, f"reported {reported} at turn {turn.number}")

    def of(self, session: str, chars: int, local_tokens: int) -> TriggerCount:
        """The count of messages whose text has `chars` characters and whose local count (framing
        included, as `TokenCounter.sizes` sums it, plus any request framing) is `local_tokens`."""
        encoding = self.local.encoding_name
        if self.counter == "estimate":
            return TriggerCount("estimate", estimate_tokens(chars), "counted", ESTIMATE)
        if self.counter == "provider":
            return self._provider(session, chars)
        if self.local.available:
            return TriggerCount("tiktoken", local_tokens, "counted", f"tiktoken {encoding}")
        if self.counter == "tiktoken":
            return TriggerCount("tiktoken", None, "unavailable", f"{encoding} cannot be loaded offline; did not fire")
        return TriggerCount(
            "estimate", estimate_tokens(chars), "counted", f"{ESTIMATE} ({encoding} unavailable offline)"
        )

    def measure(self, session: str) -> Measure:
        """`of` for one session: what an index of that session's history counts its tokens with."""
        return functools.partial(self.of, session)

    def count(self, session: str, messages: list[Message], whole_request: bool = True) -> TriggerCount:
        """The count of `messages`: a whole request (its framing included), or a part of one."""
        chars, tokens = self.local.sizes(messages)
        return self.of(session, chars, tokens + (TOKENS_PER_REQUEST if whole_request else 0))

    def _provider(self, session: str, chars: int) -> TriggerCount:
        anchor = self.anchors.get(session)
        if anchor is None:
            return TriggerCount("provider", None, "unknown", "no earlier answer call in this session; did not fire")
        if anchor.tokens is None:
            return TriggerCount("provider", None, "unknown", f"{anchor.why}; did not fire")
        changed = chars - anchor.chars
        tokens = max(anchor.tokens + math.ceil(changed / 4), 0)
        since = f"{'+' if changed >= 0 else '-'} {ESTIMATE} of {abs(changed)} characters changed since"
        return TriggerCount("provider", tokens, "counted", f"provider {anchor.why} {since}")
