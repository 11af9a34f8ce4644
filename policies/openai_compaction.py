"""`openai-compaction`: the Responses API's server-side compaction, run by the in-process emulator.

The design is `harness.policy.delegated`'s. As OpenAI documents it (Compaction,
https://developers.openai.com/api/docs/guides/compaction; the SDK's `ContextManagement` with
`compact_threshold`, `ResponseCompactionItem`, `responses.compact`):

- `context_management: [{type: "compaction", compact_threshold}]` on `POST /v1/responses`: when
  the rendered input crosses the threshold the server compacts the context into one
  `compaction` item whose `encrypted_content` the client cannot read; the client may drop every
  item before the latest compaction item and sends the item back from then on.
- `POST /v1/responses/compact` answers the same compaction as a call of its own, with its own
  usage: it is the offline stand-in of the harness's `compaction` call (kind `compaction` in
  calls.jsonl, with the usage the emulated provider reported), of which the policy keeps the
  compaction item only, as the threshold compaction leaves the context.
- No default threshold is documented: `compact_threshold=0` means 90% of `window` (the
  emulator's choice, docs/models.md), `window` the context window in estimated tokens.

Counted as the provider counts: the emulator's rendered input (instructions and every item's
text, characters/4; turns.csv `trigger_counter` `estimate`), after a turn's exchange, over what
the next request would send before its new user message. The item enters the view as a message
of origin `opaque`: its content is the summary the emulated server reads back from the sealed item
(`harness.emulate.sealing`), so the offline model answers from what the provider's model would
read, but the checks never read it: what no readable message of the view states is `in view:
unknown`, and only the answer is checked (`harness.run.checks`). The client keeps the whole
history (retained state); what the item replaced leaves the view with cause `summary`.

With `--model openai:NAME` the compaction is the endpoint's own `POST /responses/compact` (its
usage the endpoint's) and each answer a `POST /responses` sending the item back sealed
(`provider_request`); the real item is never unsealed: its message says only what is known of it
(`harness.policy.delegated.opaque_text`), and the trigger counts the instructions and the readable
items, not the item, whose size is the provider's.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.base.errors import ModelError
from harness.base.messages import Message
from harness.chronology import Forget, UserTurn
from harness.emulate.openai import DEFAULT_CONTEXT_WINDOW, DEFAULT_THRESHOLD_SHARE, OpenAIEmulator, rendered_tokens
from harness.emulate.openai_wire import COMPACTION, WireError, parse_item
from harness.emulate.sealing import unseal
from harness.models import Completion, ProviderRequest
from harness.policy import AuxCalls, Drop, Outcome, Param
from harness.policy.contract import MAX_TOKENS
from harness.policy.delegated import (
    COMPACTION_ROLE,
    OPENAI_RESPONSES,
    ProviderPolicy,
    as_input,
    compaction_why,
    emulated,
    instructions_of,
    opaque_text,
    provider_count,
    responses_route,
)
from harness.policy.history import after_current, current_message, system_messages

MODEL = "reference"  # the request's `model`: the emulator compacts with the reference summarizer


class OpenAICompaction(ProviderPolicy):
    """Full history sent until the Responses API compacts; then its opaque item and what followed."""

    name = "openai-compaction"
    description = (
        "OpenAI Responses API compaction at compact_threshold, emulated offline; the encrypted item replaces "
        "what preceded it, so what it kept is unknown to the checks."
    )
    params = (
        Param(
            "compact_threshold",
            0,
            "rendered input tokens (the emulator's estimate) above which the server compacts (0: 90% of window)",
            minimum=0,
            maximum=MAX_TOKENS,
        ),
        Param(
            "window", DEFAULT_CONTEXT_WINDOW, "the context window, in estimated tokens", minimum=1, maximum=MAX_TOKENS
        ),
    )
    roles = (COMPACTION_ROLE,)
    provider = OPENAI_RESPONSES
    model_prefix = "openai:"  # the real API is wired (harness.models.openai, its Responses route)

    def __init__(
        self, system: Message | None, compact_threshold: int = 0, window: int = DEFAULT_CONTEXT_WINDOW
    ) -> None:
        super().__init__(system)
        self.threshold = compact_threshold or int(window * DEFAULT_THRESHOLD_SHARE)
        self.emulator = OpenAIEmulator(MODEL, context_window=window)
        self.items: dict[str, tuple[Message, int]] = {}  # session -> (its latest item, where it stands in the history)
        self.sealed: dict[Message, str] = {}  # each item's encrypted_content, sent back as it came

    def view(self, turn: UserTurn) -> Sequence[Message]:
        return [*system_messages(self.system), *self._read(turn.session), current_message(turn), *after_current(turn)]

    def _read(self, session: str) -> list[Message]:
        history = list(self.histories.of(session))
        item = self.items.get(session)
        return history if item is None else [item[0], *history[item[1] :]]

    def provider_request(self, turn: UserTurn, view: Sequence[Message]) -> ProviderRequest | None:
        """Against a real endpoint, the answer goes to `POST /responses` with the view's items, the
        compaction item sent back sealed; offline (None) the reference model answers from the view."""
        return responses_route(view, self.sealed) if self.real_endpoint else None

    def after_answer(self, turn: UserTurn, answer: str, aux: AuxCalls) -> Outcome:
        outcome = super().after_answer(turn, answer, aux)
        window = [*system_messages(self.system), *self._read(turn.session)]
        instructions, rest = instructions_of(window)
        wire = [item for _, item in as_input(rest, self.sealed)]
        # A real item's text is the provider's: only the readable items (and instructions) are counted.
        read = [item for item in wire if not (self.real_endpoint and item["type"] == "compaction")]
        tokens = rendered_tokens(instructions, [parse_item(item, "input") for item in read])
        how = "characters/4 of the instructions and readable items; the encrypted item not counted"
        how = how if self.real_endpoint else "the emulated Responses API's rendered input, characters/4"
        count = outcome.trigger = provider_count(tokens, how)
        if not count.exceeds(self.threshold):
            outcome.note = f"next request {count.describe()}, compact_threshold {self.threshold}: no compaction"
            return outcome
        body = {"model": MODEL, "instructions": instructions, "input": wire}
        # `provider` only when real: an `AuxCalls` written before it (a test's fake) takes no such argument.
        route = {"provider": ProviderRequest("responses/compact", {"instructions": instructions, "input": wire})}
        sealed = aux.call(
            COMPACTION_ROLE, window, reference=lambda _: self._compacted(body), **(route if self.real_endpoint else {})
        )
        # A real endpoint's item is never read (its text is not the harness's to guess); the
        # emulator's is read back, for the offline model to answer from.
        summary = opaque_text(sealed, turn.number) if self.real_endpoint else unseal(sealed, COMPACTION)
        if summary is None:  # not an item the server could read back: nothing is replaced
            outcome.note = (
                f"next request {count.describe()}: the compaction returned no readable item; nothing replaced"
            )
            return outcome
        outcome.dropped += self._replace(turn, sealed, summary)
        outcome.note = (
            f"next request {count.describe()} exceeds compact_threshold {self.threshold}: "
            f"compaction after turn {turn.number} (an opaque item: in view unknown)"
        )
        return outcome

    def _compacted(self, body: dict) -> Completion:
        """`/responses/compact` on the emulator: its compaction item's encrypted content, and its usage."""
        try:
            reply = self.emulator.compact(body)
        except WireError as refused:  # the API's refusal fails the call, as a real endpoint's would
            raise ModelError(f"emulated Responses API answered {refused.status}: {refused}") from None
        item = next(item for item in reply["output"] if item["type"] == "compaction")
        usage = reply["usage"]
        return emulated(item["encrypted_content"], usage["input_tokens"], usage["output_tokens"])

    def _replace(self, turn: UserTurn, sealed: str, summary: str) -> list[Drop]:
        history = list(self.histories.of(turn.session))
        _, start = self.items.get(turn.session, (None, 0))
        item = Message("system", summary, origin="opaque", session=turn.session)
        self.sealed[item] = sealed
        self.items[turn.session] = (item, len(history))
        why = compaction_why(turn, "OpenAI", "compaction item")
        # The earlier item is not dropped as text: what it held is the provider's, never read here.
        return [Drop(m.text, why, "summary") for m in history[start:] if m.text]

    def forget(self, event: Forget) -> Outcome:
        self.items.clear()
        self.sealed.clear()
        return super().forget(event)

    def retained(self) -> Sequence[Message]:
        return self.histories.all() + [item for item, _ in self.items.values()]
