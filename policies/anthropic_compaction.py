"""`anthropic-compaction`: Anthropic's server-side compaction, run by the in-process emulator.

The design is `harness.policy.delegated`'s. As Anthropic documents it (Compaction,
https://platform.claude.com/docs/en/build-with-claude/compaction; the SDK's
`BetaCompact20260112EditParam`, `BetaCompactionConfigParam`, `BetaCompactionBlock`):

- **Threshold** (`compact_20260112`, beta `compact-2026-01-12`): once the request's input tokens
  exceed `trigger` (default 150,000; the API takes no less than 50,000), the server summarises
  the conversation into a `compaction` block whose `content` is readable; later requests send the
  block back and the API ignores every message before it.
- **On-demand** (`compaction: {type: "summarize"}`, beta `compact-2026-09-04`): the client asks for
  a compaction; the block must come first in the next request. Here `on_demand=N` (0: never) asks
  for one whenever the next request would exceed N input tokens, which the API lets a client do at
  any size. A system message inside the summarised range is summarised and stops applying.
- **`pause_after_compaction`**: the API then returns the block alone (`stop_reason:
  "compaction"`) and the client sends the next request. The harness always compacts that way:
  the compaction is its own call (kind `compaction`, with the usage the emulated provider reported
  for it), and the answer is the harness's answer call. So the compaction is decided after a turn's
  exchange, over what the next request would send before its new user message (the API would
  also count, and summarise, that message).

Counted as the provider counts: the emulator's `count_tokens` (characters/4 estimate; turns.csv
`trigger_counter` `estimate`). The view is the system message (the top-level `system` is never
summarised), pinned statements under `pin=true`, the latest block as a summary (origin `summary`,
generated text the checks read: "in view" is measured), then what followed it. The client keeps
the whole history (retained state): what the block replaced leaves the view with cause `summary`.
A compaction whose block comes back empty (`content: null`: the API's failed compaction) changes
nothing, and the note says so.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.base.errors import ModelError
from harness.base.messages import Message
from harness.chronology import Forget, UserTurn
from harness.emulate.anthropic import AnthropicEmulator, headers_for
from harness.emulate.anthropic_edits import BETA_COMPACT, BETA_COMPACT_ON_DEMAND, COMPACT, MIN_COMPACT_TRIGGER
from harness.emulate.anthropic_wire import ApiError
from harness.models import Completion, ProviderRequest
from harness.models.anthropic_params import API as ANTHROPIC_API
from harness.models.anthropic_params import api_messages
from harness.policy import AuxCalls, Drop, Outcome, Param
from harness.policy.contract import MAX_TOKENS, TriggerCount
from harness.policy.delegated import COMPACTION_ROLE, ProviderPolicy, compaction_why, emulated, provider_count
from harness.policy.history import after_current, current_message, system_messages
from harness.policy.pinning import PIN_PARAM, Pins

MODEL = "reference"  # the emulator's model name for the offline stand-in (its summary is the reference's)
MAX_TOKENS_ASKED = 4_096  # `max_tokens` of the request: a paused compaction writes no answer


class AnthropicCompaction(ProviderPolicy):
    """Full history sent until Anthropic's compaction runs; then the block and what followed it."""

    name = "anthropic-compaction"
    description = (
        "Anthropic's server-side compaction (compact_20260112 at a token trigger, or on-demand "
        "summarize), emulated offline; the readable block replaces what preceded it in the request."
    )
    params = (
        Param(
            "trigger",
            150_000,
            "input tokens (the emulator's estimate) above which the server compacts (the API's minimum: 50,000)",
            minimum=MIN_COMPACT_TRIGGER,
            maximum=MAX_TOKENS,
        ),
        Param(
            "on_demand",
            0,
            "input tokens above which the client asks for an on-demand compaction (0: never)",
            minimum=0,
            maximum=MAX_TOKENS,
        ),
        PIN_PARAM,
    )
    roles = (COMPACTION_ROLE,)
    provider = "Anthropic Messages API"
    model_prefix = "anthropic:"  # the real API is wired (harness.models.anthropic)

    def __init__(self, system: Message | None, trigger: int = 150_000, on_demand: int = 0, pin: str = "false") -> None:
        super().__init__(system)
        self.trigger, self.on_demand = trigger, on_demand
        self.pins = Pins(pin)
        self.emulator = AnthropicEmulator()
        # session -> (its latest block, where it stands in the session's history)
        self.blocks: dict[str, tuple[Message, int]] = {}

    def view(self, turn: UserTurn) -> Sequence[Message]:
        return [*self._window(turn.session), current_message(turn), *after_current(turn)]

    def _window(self, session: str) -> list[Message]:
        """What the provider reads of a session before the new turn: the system message, the
        latest block, the pinned copies (after the block, which the API would otherwise ignore
        them behind), then the history that followed the block."""
        history = list(self.histories.of(session))
        block = self.blocks.get(session)
        head, rest = ([], history) if block is None else ([block[0]], history[block[1] :])
        return [*system_messages(self.system), *head, *self.pins.of(session), *rest]

    def after_answer(self, turn: UserTurn, answer: str, aux: AuxCalls) -> Outcome:
        outcome = super().after_answer(turn, answer, aux)
        window = self._window(turn.session)
        system, messages = api_messages(window)
        edit = {"type": COMPACT, "trigger": {"type": "input_tokens", "value": self.trigger}}
        params = {"model": MODEL, "max_tokens": MAX_TOKENS_ASKED, "system": system, "messages": messages}
        try:
            counted = self.emulator.count_tokens(
                {**params, "context_management": {"edits": [edit]}}, headers_for([BETA_COMPACT])
            )["input_tokens"]
        except ApiError as refused:
            raise refusal(refused) from None
        count = provider_count(counted, "the emulated Messages API's count_tokens, characters/4 estimate")
        outcome.trigger = count
        if self.on_demand and count.exceeds(self.on_demand):
            asked, betas, kind = {"compaction": {"type": "summarize"}}, [BETA_COMPACT_ON_DEMAND], "on-demand"
        elif count.exceeds(self.trigger):
            edit["pause_after_compaction"] = True
            asked, betas, kind = {"context_management": {"edits": [edit]}}, [BETA_COMPACT], "threshold"
        else:
            outcome.note = self._note(count, "no compaction")
            return outcome
        # The offline models answer with the emulator's compaction; `anthropic:NAME` sends `asked`
        # to the real Messages API and reads the block it returns (harness.models.anthropic).
        summary = aux.call(
            COMPACTION_ROLE,
            window,
            reference=lambda _: self._compacted({**params, **asked}, betas),
            provider=ProviderRequest(ANTHROPIC_API, asked, tuple(betas)),
        )
        if not summary.strip():  # `content: null`: the API's failed compaction, a no-op
            outcome.note = self._note(count, f"{kind} compaction failed (empty block): nothing replaced")
            return outcome
        outcome.dropped += self._replace(turn, summary, kind)
        outcome.note = self._note(count, f"{kind} compaction after turn {turn.number} ({len(summary)} characters)")
        return outcome

    def _compacted(self, params: dict, betas: list[str]) -> Completion:
        """The emulator's compaction of the request: its block's content and the usage it reported."""
        try:
            exchange = self.emulator.create(params, headers_for(betas))
        except ApiError as refused:
            raise refusal(refused) from None
        block = exchange.message["content"][0]
        usage = exchange.message["usage"]
        return emulated(block.get("content") or "", usage["input_tokens"], usage["output_tokens"])

    def _replace(self, turn: UserTurn, summary: str, kind: str) -> list[Drop]:
        """The new block stands at the end of the session's history; what it replaced leaves the view."""
        history = list(self.histories.of(turn.session))
        previous, start = self.blocks.get(turn.session, (None, 0))
        replaced = ([previous] if previous is not None else []) + history[start:]
        block = Message("assistant", summary, origin="summary", session=turn.session)
        self.blocks[turn.session] = (block, len(history))
        why = compaction_why(turn, "Anthropic", f"{kind} compaction block")
        return [Drop(m.text, why, "summary") for m in replaced if m.text]

    def _note(self, count: TriggerCount, what: str) -> str:
        limits = f"trigger {self.trigger}" + (f", on_demand {self.on_demand}" if self.on_demand else "")
        return f"next request {count.describe()}, {limits}: {what}"

    def forget(self, event: Forget) -> Outcome:
        outcome = super().forget(event)
        why = f"compaction block discarded by forget {event.key or 'all'} at turn {event.number}"
        outcome.dropped += [Drop(block.text, why, "forget") for block, _ in self.blocks.values()]
        self.blocks.clear()
        return outcome

    def retained(self) -> Sequence[Message]:
        return self.histories.all() + [block for block, _ in self.blocks.values()] + self.pins.retained()


def refusal(refused: ApiError) -> ModelError:
    """The emulated API's refusal as a failed call, as a real endpoint's would be: the replay stops
    at this turn with the reason recorded (`aux_call_failed: ...`)."""
    return ModelError(f"emulated Anthropic API answered {refused.status} {refused.kind}: {refused.message}")
