"""`anthropic-context-editing`: the view the emulated Messages API's model reads after its edits,
the same as the client-side `clear-tool-uses` sends when both count alike."""

from __future__ import annotations

from harness.base.messages import Message
from harness.emulate.anthropic import AnthropicEmulator, headers_for
from harness.emulate.anthropic_edits import BETA_CONTEXT, CLEAR_TOOL_USES
from harness.emulate.anthropic_view import as_params
from policies.anthropic_context_editing import AnthropicContextEditing
from policies.clear_tool_uses import PLACEHOLDER, ClearToolUses
from tests.policy.test_clear_tool_uses import run, turns_with_reads
from tests.policy.test_policies import SYS


def shape(view: list[Message]) -> list[tuple[str, str]]:
    """What a model reads of a view: each message's role and text (origins are the harness's own)."""
    return [(m.role, m.text) for m in view]


def emulated_view(whole: list[Message], trigger: int, keep: int) -> list[Message]:
    """What the emulated server's model reads of `whole` sent with `clear_tool_uses_20250919`."""
    system, messages = as_params(whole)
    edit = {
        "type": CLEAR_TOOL_USES,
        "trigger": {"type": "input_tokens", "value": trigger},
        "keep": {"type": "tool_uses", "value": keep},
    }
    params = {"model": "reference", "max_tokens": 512, "system": system, "messages": messages}
    exchange = AnthropicEmulator().create(
        {**params, "context_management": {"edits": [edit]}}, headers_for([BETA_CONTEXT])
    )
    return list(exchange.view)


def test_its_view_is_the_emulated_servers_view_on_the_same_trace() -> None:
    turns = turns_with_reads(6)
    whole = [view for view, _ in run(ClearToolUses(SYS, trigger=10**9), turns)]
    edited = [view for view, _ in run(AnthropicContextEditing(SYS, trigger=500, keep=2), turns)]
    for before, after in zip(whole, edited, strict=True):
        assert shape(after) == shape(emulated_view(before, trigger=500, keep=2))
    assert PLACEHOLDER in [m.content for m in edited[-1]]  # the trace does reach the trigger


def test_it_sends_what_clear_tool_uses_sends_when_both_count_with_the_estimate() -> None:
    turns = turns_with_reads(6)
    provider = run(AnthropicContextEditing(SYS, trigger=500), turns)
    client = run(ClearToolUses(SYS, trigger=500, counter="estimate"), turns)
    assert [view for view, _ in provider] == [view for view, _ in client]
    assert [o.dropped for _, o in provider] == [o.dropped for _, o in client]
    assert provider[-1][1].trigger.counter == "estimate"


def test_it_takes_no_counter_the_provider_counts() -> None:
    assert "counter" not in {p.name for p in AnthropicContextEditing.params}
    assert AnthropicContextEditing.sets == ("provider", "opt_in")
