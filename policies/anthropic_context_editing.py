"""`anthropic-context-editing`: Anthropic's context editing as the API applies it, offline.

The design is `harness.policy.delegated`'s. Anthropic documents the edits at
https://platform.claude.com/docs/en/build-with-claude/context-editing (beta
`context-management-2025-06-27`); the emulated server applies them in
`harness.emulate.anthropic_edits`, and this policy sends the view the server's model reads:

- `clear_tool_uses_20250919` (`trigger`, `keep`, `clear_at_least`, `exclude_tools`,
  `clear_tool_inputs`): by the one rule the emulator and the client-side `clear-tool-uses` share
  (`harness.emulate.anthropic_clearing`), on the request view, the history kept whole. It differs
  from `clear-tool-uses` in one thing only: the input tokens are counted as the provider counts
  them (the emulator's characters/4 estimate of the messages, `TriggerCount.counter` `estimate`),
  not with the local tokenizer; with `clear-tool-uses:counter=estimate` the two send the same view
  (tests/policy/test_anthropic_context_editing.py checks it against the emulator's own view).
- `clear_thinking_20251015`: thinking blocks are removed from older assistant turns. No message
  the harness replays carries a thinking block (chronologies record none and the offline models
  write none), so the edit has nothing to clear offline and the policy takes no parameter for it;
  a model's thinking never enters a view the harness records.

A context edit is no extra call: it edits the answer call's request (recorded as the turn's view).
A cleared result leaves the view with cause `tool-clear`, as under `clear-tool-uses`.

**With `anthropic:NAME`** (the real Messages API) the server applies the edit itself: the answer
call sends the whole client-side conversation with `context_management.edits` (this policy's
`clear_tool_uses_20250919` and its parameters, beta `context-management-2025-06-27`,
`provider_request`), and the recorded view is the policy's prediction of what the server leaves.
The response's `context_management.applied_edits` (`cleared_tool_uses`, `cleared_input_tokens`)
is compared with the prediction: equal, the predicted view is the view; different (or not
reported), the API names how many uses it cleared, not which, so every tool result of the turn is
in dispute (`Outcome.disputed`): "in view" of what only they state is `unknown` at this turn
(probes.csv note `DISPUTED_VIEW`), and turns.csv `policy_note` gives both figures.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from harness.base.messages import Message
from harness.chronology import UserTurn
from harness.emulate.anthropic_edits import BETA_CONTEXT, CLEAR_TOOL_USES
from harness.models import ProviderRequest
from harness.models.anthropic_params import API as ANTHROPIC_API
from harness.policy import AuxCalls, Outcome
from harness.policy.contract import answer_usage
from harness.policy.delegated import EMULATED_COUNTER, ProviderPolicy
from harness.policy.history import HistoryPolicy
from policies.clear_tool_uses import ClearToolUses


class AnthropicContextEditing(ClearToolUses, ProviderPolicy):
    """Full history; Anthropic's tool result clearing applied to the request as the API counts it."""

    name = "anthropic-context-editing"
    description = (
        "Anthropic's context editing (clear_tool_uses_20250919, clear_thinking_20251015) as the API applies "
        "it, counted as the emulated provider counts; history kept whole."
    )
    params = tuple(p for p in ClearToolUses.params if p.name != "counter")
    sets = ProviderPolicy.sets  # not clear-tool-uses' set
    roles = ()
    provider = "Anthropic Messages API"
    model_prefix = "anthropic:"  # the real API is wired (harness.models.anthropic)

    def __init__(
        self,
        system: Message | None,
        trigger: int = 100_000,
        keep: int = 3,
        clear_at_least: int = 0,
        exclude_tools: str = "",
        clear_tool_inputs: str = "false",
    ) -> None:
        super().__init__(system, trigger, keep, clear_at_least, exclude_tools, clear_tool_inputs, EMULATED_COUNTER)
        self.sent: dict[str, tuple[list[Message], list[Message]]] = {}  # session -> (whole, predicted) view

    def view(self, turn: UserTurn) -> Sequence[Message]:
        predicted = list(super().view(turn))
        self.sent[turn.session] = (list(HistoryPolicy.view(self, turn)), predicted)
        return predicted

    def provider_request(self, turn: UserTurn, view: Sequence[Message]) -> ProviderRequest:
        """The answer call's extras for the Messages API: the whole conversation, and the edit the
        server applies to it (`anthropic:NAME` sends them; the offline models read the view)."""
        edit: dict[str, Any] = {
            "type": CLEAR_TOOL_USES,
            "trigger": {"type": "input_tokens", "value": self.trigger},
            "keep": {"type": "tool_uses", "value": self.keep},
        }
        if self.clear_at_least:
            edit["clear_at_least"] = {"type": "input_tokens", "value": self.clear_at_least}
        if self.exclude:
            edit["exclude_tools"] = sorted(self.exclude)
        if self.clear_inputs:
            edit["clear_tool_inputs"] = True
        whole, _ = self.sent[turn.session]
        return ProviderRequest(
            ANTHROPIC_API, {"context_management": {"edits": [edit]}}, (BETA_CONTEXT,), messages=tuple(whole)
        )

    def after_answer(self, turn: UserTurn, answer: str, aux: AuxCalls) -> Outcome:
        outcome = super().after_answer(turn, answer, aux)
        reported = answer_usage(aux)
        if reported is None or reported.provider_reply is None:  # offline: the emulator's rule is the view
            return outcome
        whole, predicted = self.sent[turn.session]
        expected = (len(self.cleared.get(turn.session, ())), self._freed(turn.session, whole, predicted))
        server = applied(reported.provider_reply)
        if server == expected:
            said = (
                f"the provider's applied_edits agree: cleared_tool_uses={server[0]}, cleared_input_tokens={server[1]}"
            )
        else:
            shown = (
                "none reported"
                if server is None
                else f"cleared_tool_uses={server[0]}, cleared_input_tokens={server[1]}"
            )
            said = (
                f"the provider's applied_edits ({shown}) differ from the prediction (cleared_tool_uses={expected[0]}, "
                f"cleared_input_tokens={expected[1]}): in view unknown for what only the tool results state"
            )
            outcome.disputed = tuple(m for m in (*whole, *predicted) if m.role == "tool")
        outcome.note = f"{outcome.note}; {said}" if outcome.note else said
        return outcome

    def _freed(self, session: str, whole: list[Message], predicted: list[Message]) -> int:
        """The tokens the prediction frees, counted as the trigger counts (0 when nothing is cleared)."""
        if whole == predicted:
            return 0
        return (self.counter.count(session, whole).tokens or 0) - (self.counter.count(session, predicted).tokens or 0)


def applied(reply: Mapping[str, Any]) -> tuple[int, int] | None:
    """What the server reports of its tool result clearing: (cleared_tool_uses,
    cleared_input_tokens), (0, 0) when it lists no such edit (one that clears nothing is not
    listed); None when the reply holds no `applied_edits` list."""
    edits = reply.get("applied_edits")
    if not isinstance(edits, list):
        return None
    for edit in edits:
        if isinstance(edit, dict) and edit.get("type") == CLEAR_TOOL_USES:
            uses, tokens = edit.get("cleared_tool_uses"), edit.get("cleared_input_tokens")
            return (uses, tokens) if isinstance(uses, int) and isinstance(tokens, int) else None
    return (0, 0)
