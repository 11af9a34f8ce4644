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
- **One request of the provider's API** (`harness.models.ProviderRequest`, `CallRequest.provider`):
  its `api` names the API it is written for, and only a model of that API sends it
  (`harness.models.openai`, `harness.models.anthropic`); the offline models answer with the
  policy's `reference`. Each policy is a `ProviderPolicy`: the runner tells it before its first view
  whether its calls reach a real endpoint (`reach`), and asks what its answer call sends the
  provider's API (`provider_request`).
- **Real endpoints: OpenAI's.** With `--model openai:NAME` the OpenAI
  policies' calls go to the endpoint's Responses API (a `ProviderRequest` whose `api` is the route):
  a compaction is `POST /responses/compact`, its item
  kept sealed and sent back, its usage the endpoint's (never the emulator's note); an answer is
  `POST /responses` with the view as `instructions` and input items (`responses_route`), and
  `truncation: "auto"` for `openai-truncation`. A real item is never unsealed: its message holds
  only what is known of it (`opaque_text`), so "in view" is unknown after it, as offline. The
  server's truncation is not reported item by item, so what `openai-truncation` predicts dropped
  stays in the view as sent, as unreadable (`opaque`) copies: `in view: unknown` for it, never
  absent on the model's word; a request predicted whole is measured.
- **Real endpoints: Anthropic's.** With `--model anthropic:NAME` (`harness.models.anthropic`) the
  Anthropic policies reach the real Messages API through a `ProviderRequest` of `api` "anthropic"
  (the body fields and betas to add, and the messages to send instead of the view). A compaction
  call carries the very request the policy sends the emulator (`aux.call(..., provider=...)`); the
  block's readable `content` is the call's reply and enters the view as before. An answer call
  carries a policy's `provider_request` (`anthropic-context-editing`: the whole conversation and its
  edit), and what the provider reported of them (`Completion.provider_reply`, the response's
  `context_management`) comes back in `AnswerUsage.provider_reply`; where it differs from the
  policy's prediction the policy names the messages in dispute (`Outcome.disputed`), and "in view"
  of what only they state is unknown (`harness.run.trace.Trace.dispute`).
- **Refused at start** (`PolicyRegistry.check_offline`): a provider policy with a model that is
  neither offline nor of its provider (a policy class's `model_prefix`), e.g. an Anthropic policy
  with `openai:NAME`, or an OpenAI one with `local` (chat completions only): a chat-completions
  call is never passed off as a provider's context management.

The contract change is small and backwards compatible: the origin `opaque`
(`harness.base.messages.Origin`), a `reference` stand-in may return a `Completion` (to carry
the emulated provider's usage) as well as text, `AuxCalls.call`'s optional `provider` (an
OpenAI policy sends it only at a real endpoint, so an `AuxCalls` written before it still serves
offline), `ProviderPolicy`, `AnswerUsage.provider_reply` and `Outcome.disputed`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from harness.base.messages import Message
from harness.chronology import UserTurn
from harness.models import Completion, ProviderRequest
from harness.models.usage import Usage
from harness.policy.contract import TriggerCount
from harness.policy.history import HistoryPolicy

COMPACTION_ROLE = "compaction"  # the kind of every provider compaction call in calls.jsonl
EMULATED_NOTE = "usage reported by the emulated provider (characters/4 estimate), not by a real endpoint"
PROVIDER_SET = "provider"
OPENAI_RESPONSES = "OpenAI Responses API"  # the `provider` of the policies a real `openai:NAME` endpoint runs
# Counted like the emulators count (harness.emulate.anthropic_view.TOKEN_COUNTER, the OpenAI
# emulator's `x-harness-token-counter: estimate`).
EMULATED_COUNTER = "estimate"


class ProviderPolicy(HistoryPolicy):
    """Base of the policies that delegate to a provider: the set they join, where their calls go
    (`reach`), and what their answer call asks of the provider's API (`provider_request`)."""

    sets = (PROVIDER_SET, "opt_in")
    real_endpoint = False  # whether the calls reach a real endpoint of the provider's API, else its emulator

    def reach(self, real: bool) -> None:
        """Told by the runner before the first view: whether the run's model is a real endpoint of
        the provider's API (the class's `model_prefix`) or offline (the emulator answers)."""
        self.real_endpoint = real

    def provider_request(self, turn: UserTurn, view: Sequence[Message]) -> ProviderRequest | None:
        """What the answer call to `view` asks of the provider's API; None: nothing (chat completions)."""
        return None


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


def responses_route(view: Sequence[Message], sealed: Mapping[Message, str], **fields: Any) -> ProviderRequest:
    """The `POST /responses` route of an answer to `view` at a real endpoint: its leading system
    message as `instructions`, the rest as input items (an opaque item sent back as `sealed` holds it),
    and the policy's own `fields` (`truncation`)."""
    instructions, rest = instructions_of(view)
    body = {"input": [item for _, item in as_input(rest, sealed)], **fields}
    return ProviderRequest("responses", body if instructions is None else {"instructions": instructions, **body})


def opaque_text(sealed: str, turn: int) -> str:
    """What an opaque message holds for a real endpoint's compaction item: what is known of it, never
    what it says (the harness cannot read it; the endpoint gets the item itself, `as_input`)."""
    return (
        f"[OpenAI compaction item written after turn {turn}: {len(sealed):,} characters of "
        "encrypted_content, unreadable by the harness]"
    )


def instructions_of(view: Sequence[Message]) -> tuple[str | None, list[Message]]:
    """A view's leading system message as the request's `instructions`, and the rest."""
    if view and view[0].role == "system" and view[0].origin == "system":
        return view[0].content, list(view[1:])
    return None, list(view)
