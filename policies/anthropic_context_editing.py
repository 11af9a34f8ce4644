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
"""

from __future__ import annotations

from harness.base.messages import Message
from harness.policy.delegated import EMULATED_COUNTER, PROVIDER_SET
from policies.clear_tool_uses import ClearToolUses


class AnthropicContextEditing(ClearToolUses):
    """Full history; Anthropic's tool result clearing applied to the request as the API counts it."""

    name = "anthropic-context-editing"
    description = (
        "Anthropic's context editing (clear_tool_uses_20250919, clear_thinking_20251015) as the API applies "
        "it, counted as the emulated provider counts; history kept whole."
    )
    params = tuple(p for p in ClearToolUses.params if p.name != "counter")
    sets = (PROVIDER_SET, "opt_in")
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
