"""What the policies that delegate to a provider share (`anthropic-context-editing`,
`anthropic-compaction`, `openai-compaction`, `openai-truncation`, the set `provider`).

**The design** (issue 38, item 2). A provider runs its context management on its server; the
harness measures what it can see of it, and no more:

- The policy keeps the client-side conversation, as the provider's client does (the whole
  history: Anthropic ignores what precedes a compaction block, OpenAI's client *may* drop what
  precedes a compaction item; both policies keep it, so the retained state is the client's), and
  sends the request view the provider's model would read after the provider's edits.
- The provider's decision is counted as the provider counts: by the in-process emulator
  (`harness.emulate`), whose figures are the characters/4 estimate its replies name
  (`TriggerCount.counter` `estimate`). With the offline models it runs in process, with no network.
- **A compaction is its own call**: `aux.call("compaction", window, reference=...)`, recorded in
  `calls.jsonl` with kind `compaction`; its offline reply is the emulator's own compaction
  (Anthropic: `AnthropicEmulator.create` with `pause_after_compaction`, or on-demand
  `compaction: {type: summarize}`, returning the readable block; OpenAI:
  `OpenAIEmulator.compact`, returning the encrypted item). The reply carries the usage the
  emulated provider reported (`emulated`), recorded as the call's reported usage, and says so in
  the call's notes. The harness decides to compact after the exchange, over what the next request
  would send before its new user message (the harness's answer call is separate from the
  compaction, as `pause_after_compaction` makes it on the API).
- **What cannot be read is not guessed.** Anthropic's compaction block is readable: it enters the
  view as a summary (origin `summary`) and "in view" is measured. OpenAI's compaction item is
  encrypted: it enters the view with origin `opaque` (its content is the summary as the emulated
  server reads it back, for the offline model to answer from), which `harness.run.presence` never
  reads, so "in view" is unknown for what no readable message states and only the answer is
  checked (`harness.run.checks`).
- **Real endpoints: Anthropic's.** With `--model anthropic:NAME` (`harness.models.anthropic`) the
  Anthropic policies reach the real Messages API through one small field at the model seam,
  `CallRequest.provider` (`ProviderRequest`: the API it is for, the body fields and betas to add,
  and the messages to send instead of the view), which the offline models ignore (they answer
  with the policy's `reference`). A compaction call carries the very request the policy sends the
  emulator (`aux.call(..., provider=...)`); the block's readable `content` is the call's reply and
  enters the view as before. An answer call carries a policy's extras when the policy has a
  `provider_request(turn)` method (`anthropic-context-editing`: the whole conversation and its
  edit), and what the provider reported of them (`Completion.provider_reply`, the response's
  `context_management`) comes back in `AnswerUsage.provider_reply`; where it differs from the
  policy's prediction the policy names the messages in dispute (`Outcome.disputed`), and "in view"
  of what only they state is unknown (`harness.run.trace.Trace.dispute`).
  `PolicyRegistry.check_offline` refuses any other model that is not offline (a policy class's
  `model_prefix` names the one it takes): the OpenAI Responses API is not wired here, and a
  chat-completions call is never passed off as a provider's context management.

The contract change is small and backwards compatible: the origin `opaque`
(`harness.base.messages.Origin`), a `reference` stand-in may return a `Completion` (to carry
the emulated provider's usage) as well as text, `AuxCalls.call`'s optional `provider`, the
optional `Policy.provider_request`, `AnswerUsage.provider_reply` and `Outcome.disputed`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from harness.base.messages import Message
from harness.chronology import UserTurn
from harness.models import Completion
from harness.models.usage import Usage
from harness.policy.contract import TriggerCount

COMPACTION_ROLE = "compaction"  # the kind of every provider compaction call in calls.jsonl
EMULATED_NOTE = "usage reported by the emulated provider (characters/4 estimate), not by a real endpoint"
PROVIDER_SET = "provider"
# Counted like the emulators count (harness.emulate.anthropic_view.TOKEN_COUNTER, the OpenAI
# emulator's `x-harness-token-counter: estimate`).
EMULATED_COUNTER = "estimate"


def emulated(text: str, input_tokens: int, output_tokens: int) -> Completion:
    """A compaction's offline reply: its text and the usage the emulated provider reported."""
    return Completion(text=text, usage=Usage(input_tokens, output_tokens), notes=(EMULATED_NOTE,))


def provider_count(tokens: int, how: str) -> TriggerCount:
    """What a provider policy's trigger saw: the emulated provider's count."""
    return TriggerCount(EMULATED_COUNTER, tokens, "counted", how)


def compaction_why(turn: UserTurn, provider: str, what: str) -> str:
    """The words of a drop a compaction explains."""
    return f"before the {provider} {what} written after turn {turn.number}: the provider no longer reads it"


def as_input(
    messages: Sequence[Message], sealed: Mapping[Message, str] | None = None
) -> list[tuple[int, dict[str, Any]]]:
    """A harness view (its first system message left out: that is `instructions`) as Responses
    API input items, each with the index of the message it came from: a message as a `message`
    item, an assistant's tool calls as `function_call` items after its text, a tool result as a
    `function_call_output`, an opaque message as the `compaction` item whose `encrypted_content`
    `sealed` holds for it."""
    items: list[tuple[int, dict[str, Any]]] = []
    for index, message in enumerate(messages):
        if message.origin == "opaque":
            items.append((index, {"type": "compaction", "encrypted_content": (sealed or {})[message]}))
        elif message.role == "tool":
            items.append(
                (index, {"type": "function_call_output", "call_id": message.tool_call_id, "output": message.content})
            )
        else:
            if message.content or not message.tool_calls:
                items.append((index, {"type": "message", "role": message.role, "content": message.content}))
            items += [
                (index, {"type": "function_call", "call_id": c.id, "name": c.name, "arguments": c.arguments})
                for c in message.tool_calls
            ]
    return items


def instructions_of(view: Sequence[Message]) -> tuple[str | None, list[Message]]:
    """A view's leading system message as the request's `instructions`, and the rest."""
    if view and view[0].role == "system" and view[0].origin == "system":
        return view[0].content, list(view[1:])
    return None, list(view)
