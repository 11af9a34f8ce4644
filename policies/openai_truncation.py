"""`openai-truncation`: the Responses API's `truncation: "auto"`, by the emulator's rule.

The design is `harness.policy.delegated`'s. OpenAI documents `truncation` on `POST /v1/responses`
(API reference, "Create a model response", https://platform.openai.com/docs/api-reference/responses/create,
mirrored word for word by LangChain's `BaseChatOpenAI.truncation` and Azure's
`CreateResponseRequest.Truncation`): `"auto"`: if the input exceeds the model's context window,
the model truncates it to fit "by dropping input items in the middle of the conversation";
`"disabled"` (the default) fails the request with a 400 error instead. Which items go is not
documented: the emulator, and this policy with it, drop the oldest after the instructions (the
reading of issue 38, and of OpenAI's earlier wording, "from the beginning of the conversation").

The view is the whole history until it exceeds `window` (estimated tokens: the instructions and
every item's text, characters/4, as the emulator counts); then the fewest items from the start are
dropped, a tool output with its call (`harness.emulate.openai.truncated`, the emulator's rule). The
harness drops whole messages: an assistant message whose first item goes goes whole, with its
tool outputs, so no group is split. The system message is the request's `instructions` and always
stays. What leaves the view is still retained (the client keeps its history; the provider drops
items from the request only), so its departure reads `window`. When even the current turn does
not fit, the API answers 400 `context_length_exceeded`: the policy stops the replay there.
No extra call is made.

With `--model openai:NAME` the answer is the endpoint's `POST /responses` with the whole history
and `truncation: "auto"` (`provider_request`): the server truncates, and does not say which items it
dropped. So the view is the whole request as sent, and each message the prediction above drops is
in it as an unreadable copy (origin `opaque`): what it states is `in view: unknown`, as behind an
opaque compaction item (`probes.csv` note `OPAQUE_VIEW`), never measured absent on the model's
word. Where the prediction drops nothing, the view is the whole request and is measured. A
request the server cannot fit is its 400, recorded as the answer's failure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from harness.base.messages import Message
from harness.chronology import UserTurn
from harness.emulate.openai import DEFAULT_CONTEXT_WINDOW, rendered_tokens, truncated
from harness.emulate.openai_wire import parse_item
from harness.models import ProviderRequest
from harness.policy import AuxCalls, Outcome, Param
from harness.policy.contract import MAX_TOKENS, TriggerCount
from harness.policy.delegated import (
    OPENAI_RESPONSES,
    ProviderPolicy,
    as_input,
    instructions_of,
    provider_count,
    responses_route,
)


class OpenAITruncation(ProviderPolicy):
    """Full history, less the oldest items once the request exceeds the context window."""

    name = "openai-truncation"
    description = (
        'OpenAI Responses API truncation "auto", emulated offline: the oldest items dropped from the request '
        "to fit the context window; history kept whole."
    )
    params = (
        Param(
            "window", DEFAULT_CONTEXT_WINDOW, "the context window, in estimated tokens", minimum=1, maximum=MAX_TOKENS
        ),
    )
    roles = ()
    provider = OPENAI_RESPONSES
    model_prefix = "openai:"  # the real API is wired (harness.models.openai, its Responses route)

    def __init__(self, system: Message | None, window: int = DEFAULT_CONTEXT_WINDOW) -> None:
        super().__init__(system)
        self.plain: dict[Message, Message] = {}  # a real endpoint's unreadable copy -> the message sent
        self.context_window = window
        self.note: str | None = None
        self.count: TriggerCount | None = None
        self.over = False  # even the current turn alone exceeds the window: the API answers 400

    def view(self, turn: UserTurn) -> Sequence[Message]:
        whole = list(super().view(turn))
        instructions, rest = instructions_of(whole)
        owned = as_input(rest)
        items = [parse_item(wire, "input") for _, wire in owned]
        tokens = rendered_tokens(instructions, items)
        how = "the emulated Responses API's rendered input, characters/4"
        if self.real_endpoint:  # a prediction: the endpoint counts its own tokens, and says so only in its usage
            how = "the request's instructions and items, characters/4, as the emulator counts (a prediction)"
        self.count = provider_count(tokens, how)
        kept = truncated(instructions, items, self.context_window)
        self.over = kept is None and not self.real_endpoint  # a real endpoint answers its 400 itself
        self.plain = {}
        if kept is not None and len(kept) == len(items):
            self.note = f"request {self.count.describe()} within window {self.context_window}: nothing truncated"
            return whole
        current = next(i for i, m in enumerate(rest) if m.origin == "current")
        if kept is None and self.real_endpoint:  # the endpoint answers 400 itself: the call's failure
            return self._unmeasured(whole, rest, rest[current:])
        if kept is None:
            self.note = f"request {self.count.describe()}: the current turn alone exceeds window {self.context_window}"
            return whole[: len(whole) - len(rest)] + rest[current:]
        survivors = {id(item) for item in kept}
        first = {}
        for (index, _), item in zip(owned, items, strict=True):
            first.setdefault(index, id(item) in survivors)
        start = min([i for i, survives in first.items() if survives] + [current])
        view = _without_orphans(rest[start:])
        if self.real_endpoint:
            return self._unmeasured(whole, rest, view)
        self.note = (
            f"request {self.count.describe()} exceeds window {self.context_window}: "
            f"{len(rest) - len(view)} oldest messages dropped from the request (truncation auto)"
        )
        return whole[: len(whole) - len(rest)] + view

    def _unmeasured(self, whole: list[Message], rest: list[Message], view: list[Message]) -> list[Message]:
        """A real endpoint's view: the whole request, as sent (the server truncates it), each message
        the prediction drops as an unreadable (`opaque`) copy: the server does not say which items it
        dropped, so what they state is `in view: unknown`, never measured as absent on the model's word."""
        kept = set(view)
        dropped = [m for m in rest if m not in kept]
        unreadable = {m: replace(m, origin="opaque") for m in dropped}
        self.plain = {copy: m for m, copy in unreadable.items()}
        self.note = (
            f"request {self.count.describe()} exceeds window {self.context_window}: the endpoint's truncation "
            f"auto may drop the {len(dropped)} oldest messages and does not say which: in view unknown for them"
        )
        return whole[: len(whole) - len(rest)] + [unreadable.get(m, m) for m in rest]

    def provider_request(self, turn: UserTurn, view: Sequence[Message]) -> ProviderRequest | None:
        """Against a real endpoint, the answer goes to `POST /responses` with the whole request and
        `truncation: "auto"` (the server truncates); offline (None) the reference model answers the view."""
        if not self.real_endpoint:
            return None
        return responses_route([self.plain.get(m, m) for m in view], {}, truncation="auto")

    def after_answer(self, turn: UserTurn, answer: str, aux: AuxCalls) -> Outcome:
        outcome = super().after_answer(turn, answer, aux)
        outcome.note, outcome.trigger = self.note, self.count
        if self.over:
            outcome.stop = "context_length_exceeded"
        return outcome


def _without_orphans(messages: Sequence[Message]) -> list[Message]:
    """`messages` without the tool results whose call is not among them."""
    called = {call.id for m in messages for call in m.tool_calls}
    return [m for m in messages if m.role != "tool" or m.tool_call_id in called]
