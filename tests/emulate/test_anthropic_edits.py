"""Context editing as the emulated Anthropic API applies it: `clear_tool_uses_20250919` with each
of its options, `clear_thinking_20251015`, the response's `applied_edits`, and the same view as the
client-side `clear-tool-uses` policy gives on the same trace."""

from __future__ import annotations

from typing import Any

import pytest

from harness.base.messages import Message
from harness.emulate.anthropic import AnthropicEmulator, Exchange, headers_for
from harness.emulate.anthropic_clearing import PLACEHOLDER
from harness.emulate.anthropic_view import as_params
from harness.emulate.anthropic_wire import ApiError
from policies.clear_tool_uses import ClearToolUses
from tests.emulate.anthropic_fixtures import (
    CONTEXT,
    assistant,
    parsed,
    served_sdk,  # noqa: F401
    text,
    tool_result,
    tool_use,
    user,
)
from tests.policy.test_clear_tool_uses import run, turns_with_reads
from tests.policy.test_policies import SYS

ZERO = {"type": "input_tokens", "value": 0}


def reads(count: int, tool_of: Any = lambda n: "read_file", size: int = 200) -> list[dict[str, Any]]:
    """`count` turns each reading one file: user, assistant tool_use, user tool_result, assistant text."""
    messages: list[dict[str, Any]] = []
    for n in range(1, count + 1):
        messages += [
            user(f"step {n}"),
            assistant(tool_use(f"toolu_{n}", tool_of(n), n=n)),
            {"role": "user", "content": [tool_result(f"toolu_{n}", (f"contents of file {n} " * size)[: size * 4])]},
            assistant(text(f"read {n}")),
        ]
    return [*messages, user("What next?")]


def create(edits: list[dict[str, Any]], messages: list[dict[str, Any]], **more: Any) -> Exchange:
    body = {
        "model": "reference",
        "max_tokens": 100,
        "messages": messages,
        "context_management": {"edits": edits},
        **more,
    }
    exchange = AnthropicEmulator().create(body, headers_for([CONTEXT]))
    parsed(exchange.message)  # the SDK's type reads it
    return exchange


def cleared(exchange: Exchange) -> list[str]:
    return [m.tool_call_id or "" for m in exchange.view if m.role == "tool" and m.content == PLACEHOLDER]


def inputs(exchange: Exchange) -> dict[str, str]:
    return {c.id: c.arguments for m in exchange.view for c in m.tool_calls}


def test_under_the_default_trigger_nothing_is_cleared_and_no_edit_is_reported(sdk: Any) -> None:
    message = sdk.beta.messages.create(
        model="reference",
        max_tokens=100,
        messages=reads(5),
        betas=[CONTEXT],
        context_management={"edits": [{"type": "clear_tool_uses_20250919"}]},
    )
    assert message.context_management.applied_edits == []


def test_over_the_trigger_all_but_the_three_most_recent_results_are_cleared_and_reported(sdk: Any) -> None:
    edit = {"type": "clear_tool_uses_20250919", "trigger": ZERO}
    message = sdk.beta.messages.create(
        model="reference", max_tokens=100, messages=reads(5), betas=[CONTEXT], context_management={"edits": [edit]}
    )
    (applied,) = message.context_management.applied_edits
    assert applied.type == "clear_tool_uses_20250919" and applied.cleared_tool_uses == 2
    assert applied.cleared_input_tokens > 0
    exchange = create([edit], reads(5))
    assert cleared(exchange) == ["toolu_1", "toolu_2"]
    assert inputs(exchange)["toolu_1"] == '{"n": 1}'  # the calls stay as they were
    whole = create([], reads(5))
    assert (
        exchange.message["usage"]["input_tokens"]
        == whole.message["usage"]["input_tokens"] - applied.cleared_input_tokens
    )


def test_the_trigger_must_be_exceeded_in_input_tokens_or_in_tool_uses() -> None:
    size = create([], reads(5)).message["usage"]["input_tokens"]
    at = {"type": "clear_tool_uses_20250919", "trigger": {"type": "input_tokens", "value": size}}
    over = {"type": "clear_tool_uses_20250919", "trigger": {"type": "input_tokens", "value": size - 1}}
    assert cleared(create([at], reads(5))) == [] and cleared(create([over], reads(5))) == ["toolu_1", "toolu_2"]
    uses = {"type": "clear_tool_uses_20250919", "trigger": {"type": "tool_uses", "value": 5}}
    assert cleared(create([uses], reads(5))) == [] and cleared(create([uses], reads(6))) == [
        "toolu_1",
        "toolu_2",
        "toolu_3",
    ]


def test_keep_exclude_tools_and_clear_tool_inputs_choose_what_is_cleared() -> None:
    tool_of = lambda n: "runbook" if n == 1 else "read_file"  # noqa: E731
    edit = {
        "type": "clear_tool_uses_20250919",
        "trigger": ZERO,
        "keep": {"type": "tool_uses", "value": 1},
        "exclude_tools": ["runbook"],
        "clear_tool_inputs": True,
    }
    exchange = create([edit], reads(4, tool_of))
    assert cleared(exchange) == ["toolu_2", "toolu_3"]
    assert inputs(exchange) == {"toolu_1": '{"n": 1}', "toolu_2": "{}", "toolu_3": "{}", "toolu_4": '{"n": 4}'}
    named = create([{**edit, "exclude_tools": [], "clear_tool_inputs": ["runbook"]}], reads(4, tool_of))
    assert cleared(named) == ["toolu_1", "toolu_2", "toolu_3"]
    assert inputs(named)["toolu_1"] == "{}" and inputs(named)["toolu_2"] == '{"n": 2}'


def test_clear_at_least_leaves_everything_when_the_clearing_would_free_too_little() -> None:
    edit = {"type": "clear_tool_uses_20250919", "trigger": ZERO}
    freed = create([edit], reads(5)).message["context_management"]["applied_edits"][0]["cleared_input_tokens"]
    enough = create([{**edit, "clear_at_least": {"type": "input_tokens", "value": freed}}], reads(5))
    too_much = create([{**edit, "clear_at_least": {"type": "input_tokens", "value": freed + 1}}], reads(5))
    assert cleared(enough) == ["toolu_1", "toolu_2"]
    assert cleared(too_much) == [] and too_much.message["context_management"]["applied_edits"] == []


def thinking_turns(count: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for n in range(1, count + 1):
        thought = {"type": "thinking", "thinking": f"thinking about step {n}", "signature": f"sig{n}"}
        messages += [user(f"step {n}"), assistant(thought, text(f"done {n}"))]
    return [*messages, user("And now?")]


def thoughts(exchange: Exchange) -> list[str]:
    return [m.content for m in exchange.view if m.role == "assistant" and "thinking about" in m.content]


def test_clear_thinking_keeps_the_thinking_of_the_last_turns_only(sdk: Any) -> None:
    edit = {"type": "clear_thinking_20251015", "keep": {"type": "thinking_turns", "value": 1}}
    message = sdk.beta.messages.create(
        model="reference",
        max_tokens=100,
        messages=thinking_turns(3),
        betas=[CONTEXT],
        context_management={"edits": [edit]},
    )
    (applied,) = message.context_management.applied_edits
    assert applied.type == "clear_thinking_20251015" and applied.cleared_thinking_turns == 2
    assert applied.cleared_input_tokens > 0
    assert thoughts(create([edit], thinking_turns(3))) == ["thinking about step 3\ndone 3"]
    assert len(thoughts(create([{"type": "clear_thinking_20251015", "keep": "all"}], thinking_turns(3)))) == 3


def test_clear_thinking_must_come_first_and_context_editing_needs_its_beta() -> None:
    edits = [{"type": "clear_tool_uses_20250919"}, {"type": "clear_thinking_20251015"}]
    with pytest.raises(ApiError, match="clear_thinking_20251015 must be listed first"):
        create(edits, thinking_turns(1))
    body = {"model": "reference", "max_tokens": 10, "messages": [user("a")], "context_management": {"edits": edits[:1]}}
    with pytest.raises(ApiError, match=f"requires the beta header anthropic-beta: {CONTEXT}"):
        AnthropicEmulator().create(body, headers_for())


def test_count_tokens_gives_the_count_before_and_after_the_edits(sdk: Any) -> None:
    edit = {"type": "clear_tool_uses_20250919", "trigger": ZERO}
    counted = sdk.beta.messages.count_tokens(
        model="reference", messages=reads(5), betas=[CONTEXT], context_management={"edits": [edit]}
    )
    whole = create([], reads(5)).message["usage"]["input_tokens"]
    assert counted.context_management.original_input_tokens == whole
    assert counted.input_tokens == create([edit], reads(5)).message["usage"]["input_tokens"] < whole


def shape(view: list[Message] | tuple[Message, ...]) -> list[tuple[str, str, str | None, tuple[str, ...]]]:
    """What a model reads of each message, without where the harness says it came from."""
    return [
        (m.role, m.content, m.tool_call_id, tuple(f"{c.id}:{c.name}:{c.arguments}" for c in m.tool_calls)) for m in view
    ]


@pytest.mark.parametrize(
    ("keep", "exclude", "inputs_too"),
    [(3, "", "false"), (1, "runbook", "false"), (2, "", "true"), (0, "runbook", "true")],
)
def test_the_emulated_edit_and_the_client_side_policy_give_the_same_view_of_the_same_trace(
    keep: int, exclude: str, inputs_too: str
) -> None:
    """Both clear by one rule (`harness.emulate.anthropic_clearing.uses_to_clear`). Where they
    differ: the trigger and `cleared_input_tokens` count different things (the policy: tiktoken
    over its view with per-message framing; the emulator: characters/4 over the request with the
    tool definitions), so at a trigger between the two counts one clears and the other does not;
    and the API's `clear_tool_inputs` may name tools, which the policy's true/false cannot."""
    turns = turns_with_reads(6, lambda n: "runbook" if n % 3 == 1 else "read_file")
    whole, _ = run(ClearToolUses(SYS, trigger=10**9), turns)[-1]
    policy_view, _ = run(
        ClearToolUses(SYS, trigger=0, keep=keep, exclude_tools=exclude, clear_tool_inputs=inputs_too), turns
    )[-1]
    system, messages = as_params(whole)
    edit = {
        "type": "clear_tool_uses_20250919",
        "trigger": ZERO,
        "keep": {"type": "tool_uses", "value": keep},
        "exclude_tools": [name for name in exclude.split("+") if name],
        "clear_tool_inputs": inputs_too == "true",
    }
    exchange = create([edit], messages, system=system)
    assert shape(exchange.view) == shape(policy_view)
    assert PLACEHOLDER in [m.content for m in exchange.view]
