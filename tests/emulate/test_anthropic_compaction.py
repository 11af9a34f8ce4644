"""Compaction in the emulated Anthropic API: threshold compaction `compact_20260112` (a readable
block, the next request answered from it, `pause_after_compaction`, usage per iteration, a failed
compaction, 529 when it is unavailable), on-demand compaction (`compaction: {type: summarize}`),
where a block may be sent back, and a streamed compaction."""

from __future__ import annotations

from typing import Any

import pytest

from harness.emulate.anthropic import AnthropicEmulator, Exchange, Faults, headers_for
from harness.emulate.anthropic_compaction import DEFAULT_SUMMARY_CHARS, THRESHOLD, sign
from harness.emulate.anthropic_wire import ApiError
from tests.emulate.anthropic_fixtures import (
    COMPACT,
    CONTEXT,
    EVENTS,
    ON_DEMAND,
    anthropic,
    assistant,
    client,
    parsed,
    served_sdk,  # noqa: F401
    text,
    user,
)


def as_param(message: Any) -> dict[str, Any]:
    """An SDK reply as the assistant message a later request sends back (plain JSON, in process)."""
    return {"role": "assistant", "content": [block.model_dump() for block in message.content]}


RULE = "Never truncate the orders table."
FILLER = "The quarterly figures were discussed at length. " * 4_400  # about 53,000 estimated tokens
TRIGGER = {"type": "input_tokens", "value": 50_000}


def long_conversation() -> list[dict[str, Any]]:
    """A rule and a declaration early, then enough talk to cross a 50,000-token trigger."""
    return [
        user(RULE),
        assistant(text("Understood.")),
        user("database=orders_prod"),
        assistant(text("Noted.")),
        user(FILLER),
        assistant(text("Noted.")),
        user("Can I truncate the orders table?"),
    ]


def compacting(**edit: Any) -> dict[str, Any]:
    return {"edits": [{"type": "compact_20260112", "trigger": TRIGGER, **edit}]}


def create(body: dict[str, Any], betas: list[str], emulator: AnthropicEmulator | None = None) -> Exchange:
    exchange = (emulator or AnthropicEmulator()).create(
        {"model": "reference", "max_tokens": 200, **body}, headers_for(betas)
    )
    parsed(exchange.message)  # the SDK's type reads it
    return exchange


@pytest.fixture(scope="module")
def compacted(sdk: Any) -> Any:
    """A threshold compaction's reply, through the SDK."""
    return sdk.beta.messages.create(
        model="reference",
        max_tokens=200,
        messages=long_conversation(),
        betas=[COMPACT],
        context_management=compacting(),
    )


def test_over_the_trigger_the_reply_opens_with_a_readable_compaction_block_then_the_answer(compacted: Any) -> None:
    block, answer = compacted.content
    assert block.type == "compaction" and RULE.rstrip(".") in block.content and "database=orders_prod" in block.content
    assert block.signature and len(block.content) <= DEFAULT_SUMMARY_CHARS
    assert answer.type == "text" and answer.text == 'No — "Never truncate the orders table"'
    assert compacted.stop_reason == "end_turn"


def test_usage_lists_the_compaction_and_the_message_iterations_the_top_level_being_the_messages(compacted: Any) -> None:
    first, second = compacted.usage.iterations
    assert (first.type, second.type) == ("compaction", "message")
    assert first.input_tokens > 50_000 > second.input_tokens
    assert (compacted.usage.input_tokens, compacted.usage.output_tokens) == (second.input_tokens, second.output_tokens)


def test_the_next_request_is_answered_from_the_block_everything_before_it_ignored(sdk: Any, compacted: Any) -> None:
    later = [*long_conversation(), as_param(compacted), user("Which database is it?")]
    message = sdk.beta.messages.create(
        model="reference", max_tokens=200, messages=later, betas=[COMPACT], context_management=compacting()
    )
    assert message.content[0].text == "database=orders_prod"
    assert message.usage.input_tokens < 5_000 and [i.type for i in message.usage.iterations] == ["message"]
    exchange = create(
        {"messages": [*later[:-1], user("Can I truncate the orders table?")], "context_management": compacting()},
        [COMPACT],
    )
    assert exchange.view[0].origin == "summary" and FILLER not in [m.content for m in exchange.view]
    assert exchange.message["content"][0]["text"].startswith("No")


def test_under_the_trigger_nothing_is_compacted_and_usage_still_lists_the_iteration() -> None:
    exchange = create({"messages": [user("Hello.")], "context_management": compacting()}, [COMPACT])
    assert exchange.summarised is None and [b["type"] for b in exchange.message["content"]] == ["text"]
    assert [i["type"] for i in exchange.message["usage"]["iterations"]] == ["message"]


def test_pause_after_compaction_returns_the_block_alone_with_stop_reason_compaction(sdk: Any) -> None:
    message = sdk.beta.messages.create(
        model="reference",
        max_tokens=200,
        messages=long_conversation(),
        betas=[COMPACT],
        context_management=compacting(pause_after_compaction=True),
    )
    assert [b.type for b in message.content] == ["compaction"] and message.stop_reason == "compaction"
    assert [i.type for i in message.usage.iterations] == ["compaction"]
    resumed = sdk.beta.messages.create(
        model="reference", max_tokens=200, messages=[*long_conversation(), message.to_param()], betas=[COMPACT]
    )  # the block sent back last: the paused turn goes on, from the summary
    assert resumed.content[0].text == 'No — "Never truncate the orders table"'
    assert resumed.usage.input_tokens < 5_000


def test_instructions_that_state_a_cap_bound_the_summary() -> None:
    instructions = "Keep the rules, in at most 40 characters."
    exchange = create(
        {"messages": long_conversation(), "context_management": compacting(instructions=instructions)}, [COMPACT]
    )
    assert len(exchange.message["content"][0]["content"]) <= 40


def test_the_trigger_defaults_to_150000_and_must_be_at_least_50000() -> None:
    exchange = create(
        {"messages": long_conversation(), "context_management": {"edits": [{"type": "compact_20260112"}]}}, [COMPACT]
    )
    assert exchange.summarised is None
    low = {"edits": [{"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 49_999}}]}
    with pytest.raises(ApiError, match="must be at least 50000"):
        create({"messages": [user("a")], "context_management": low}, [COMPACT])
    with pytest.raises(ApiError, match=f"requires the beta header anthropic-beta: {COMPACT}"):
        create({"messages": [user("a")], "context_management": compacting()}, [CONTEXT])


def test_a_failed_compaction_has_null_content_and_sent_back_is_a_no_op() -> None:
    emulator = AnthropicEmulator(Faults(failed_compaction=True))
    exchange = create({"messages": long_conversation(), "context_management": compacting()}, [COMPACT], emulator)
    block = exchange.message["content"][0]
    assert block == {"type": "compaction", "content": None, "signature": None, "encrypted_content": None}
    assert FILLER in [m.content for m in exchange.view]  # the answer read the whole context
    later = [*long_conversation(), assistant(block, text("ok")), user("Which database?")]
    again = create({"messages": later}, [])
    assert FILLER in [m.content for m in again.view]


def test_compaction_unavailable_answers_529_overloaded() -> None:
    with client(Faults(compaction_unavailable=True)) as sdk, pytest.raises(anthropic.InternalServerError) as refused:
        sdk.beta.messages.create(
            model="reference",
            max_tokens=200,
            messages=long_conversation(),
            betas=[COMPACT],
            context_management=compacting(),
        )
    assert refused.value.status_code == 529 and refused.value.body["error"]["type"] == "overloaded_error"
    assert refused.value.body["error"]["message"].startswith("compaction_unavailable")


def mid_conversation_rule() -> list[dict[str, Any]]:
    return [
        user("database=orders_prod"),
        assistant(text("Sure.")),
        {"role": "system", "content": RULE},
        user("First step: back up everything."),
        assistant(text("Done.")),
    ]


def test_on_demand_compaction_returns_one_block_that_summarises_a_system_message_too(sdk: Any) -> None:
    message = sdk.beta.messages.create(
        model="reference",
        max_tokens=200,
        messages=mid_conversation_rule(),
        betas=[ON_DEMAND],
        compaction={"type": "summarize"},
    )
    (block,) = message.content
    assert block.type == "compaction" and message.stop_reason == "compaction"
    assert RULE.rstrip(".") in block.content and "database=orders_prod" in block.content
    later = [as_param(message), user("Can I truncate the orders table?")]
    answer = sdk.beta.messages.create(model="reference", max_tokens=200, messages=later)
    assert answer.content[0].text.startswith("No")  # the rule now stands in the summary only
    exchange = create({"messages": later}, [])
    assert [m.role for m in exchange.view] == ["assistant", "user"] and exchange.view[0].origin == "summary"


def test_a_rule_summarised_away_is_gone_from_the_view_once_the_block_replaces_its_range() -> None:
    capped = create(
        {
            "messages": mid_conversation_rule(),
            "compaction": {"type": "summarize", "instructions": "in at most 20 characters"},
        },
        [ON_DEMAND],
    )
    block = capped.message["content"][0]
    assert RULE not in block["content"]
    exchange = create({"messages": [assistant(block), user("Can I truncate the orders table?")]}, [])
    assert exchange.message["content"][0]["text"] == "Yes — nothing in my context forbids it."


def test_on_demand_compaction_needs_its_beta_and_excludes_context_management() -> None:
    body = {"messages": [user("a")], "compaction": {"type": "summarize"}}
    with pytest.raises(ApiError, match=f"requires the beta header anthropic-beta: {ON_DEMAND}"):
        create(body, [])
    with pytest.raises(ApiError, match="cannot be combined with context_management"):
        create({**body, "context_management": compacting()}, [ON_DEMAND, COMPACT])


def on_demand_block() -> dict[str, Any]:
    return create({"messages": mid_conversation_rule(), "compaction": {"type": "summarize"}}, [ON_DEMAND]).message[
        "content"
    ][0]


def threshold(block: dict[str, Any]) -> dict[str, Any]:
    """The block as a threshold compaction would have signed it (it may then stand anywhere)."""
    return {**block, "signature": sign(block["content"], THRESHOLD)}


MISPLACED = [
    ("a block from on-demand compaction must come first", lambda b: [user("a"), assistant(b), user("b")]),
    ("it must be the first block of its message", lambda b: [user("a"), assistant(text("x"), b), user("b")]),
    ("a message holds at most one", lambda b: [assistant(b, {**b, "signature": None}), user("b")]),
    ("duplicate compaction block", lambda b: [assistant(threshold(b)), user("a"), assistant(threshold(b)), user("b")]),
    ("does not match its content", lambda b: [assistant({**b, "content": b["content"] + " edited"}), user("b")]),
    ("cannot be sent in a user message", lambda b: [{"role": "user", "content": [b]}]),
]


@pytest.mark.parametrize(("says", "messages_with"), MISPLACED, ids=[says for says, _ in MISPLACED])
def test_a_misplaced_duplicate_or_edited_compaction_block_answers_400(says: str, messages_with: Any) -> None:
    with pytest.raises(ApiError) as refused:
        create({"messages": messages_with(on_demand_block())}, [])
    assert refused.value.status == 400 and says in refused.value.message


def test_a_streamed_compaction_arrives_as_a_block_start_and_one_compaction_delta(sdk: Any, compacted: Any) -> None:
    request = {
        "model": "reference",
        "max_tokens": 200,
        "messages": long_conversation(),
        "betas": [COMPACT],
        "context_management": compacting(),
    }
    with sdk.beta.messages.with_streaming_response.create(**request, stream=True) as raw:
        events = [
            EVENTS.validate_json(line.removeprefix("data: "))
            for line in raw.iter_lines()
            if line.startswith("data: ") and '"ping"' not in line
        ]
    deltas = [e.delta for e in events if e.type == "content_block_delta" and e.delta.type == "compaction_delta"]
    assert len(deltas) == 1 and deltas[0].content == compacted.content[0].content
    with sdk.beta.messages.stream(**request) as stream:
        final = stream.get_final_message()
    assert (
        final.content[0].content == compacted.content[0].content and final.content[1].text == compacted.content[1].text
    )
    assert [i.type for i in final.usage.iterations] == ["compaction", "message"]


def test_reference_lossy_degrades_the_compaction_summary_as_it_degrades_any_summary() -> None:
    body = {"messages": mid_conversation_rule(), "compaction": {"type": "summarize"}}
    exact = create(body, [ON_DEMAND]).message["content"][0]["content"]
    lossy = create({**body, "model": "reference:lossy:summary_drop=1"}, [ON_DEMAND]).message["content"][0]["content"]
    assert RULE in exact and "database=orders_prod" in exact
    assert lossy == "First step: back up everything."
