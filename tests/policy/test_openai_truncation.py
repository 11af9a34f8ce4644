"""`openai-truncation`: `truncation: "auto"` by the emulator's rule, history kept whole."""

from __future__ import annotations

from harness.base.messages import Message, estimate_tokens
from harness.emulate.openai import OpenAIEmulator
from harness.policy.groups import group_problems
from harness.policy.history import exchange
from policies.openai_truncation import OpenAITruncation
from tests.conftest import user
from tests.policy.test_anthropic_compaction import replay
from tests.policy.test_clear_tool_uses import turns_with_reads
from tests.policy.test_policies import SYS

TURNS = [user(n, f"statement {n}: " + "x" * 40, assistant=f"Noted {n}.") for n in range(1, 7)]


def test_within_the_window_the_whole_history_is_sent() -> None:
    view, outcome, _ = replay(OpenAITruncation(SYS), TURNS)[-1]
    assert len(view) == 12 and "nothing truncated" in outcome.note and outcome.trigger.counter == "estimate"


def test_over_the_window_the_oldest_messages_leave_the_request_as_the_emulator_drops_them() -> None:
    policy = OpenAITruncation(SYS, window=60)
    view, outcome, _ = replay(policy, TURNS)[-1]
    assert view[0] == SYS and view[-1].origin == "current" and "truncation auto" in outcome.note
    # The emulator, sent the same history with truncation auto, reads exactly what the view holds.
    items = [{"role": m.role, "content": m.content} for t in TURNS[:-1] for m in exchange(t, t.assistant or "")]
    items.append({"role": "user", "content": TURNS[-1].user})
    emulator = OpenAIEmulator(context_window=60)
    response = emulator.create({"model": "reference", "instructions": "SYS", "input": items, "truncation": "auto"})
    answer = response["output"][-1]["content"][0]["text"]
    assert response["usage"]["input_tokens"] == estimate_tokens(sum(len(m.text) for m in view))
    assert response["usage"]["output_tokens"] == estimate_tokens(len(answer))
    assert [m.content for m in policy.retained() if m.role == "user"] == [t.user for t in TURNS[:-1]] + [TURNS[-1].user]


def test_a_tool_result_goes_with_its_call_and_no_group_is_split() -> None:
    view, _, _ = replay(OpenAITruncation(SYS, window=400), turns_with_reads(6))[-1]
    assert group_problems(view) == [] and len([m for m in view if m.role == "tool"]) < 6


def test_a_turn_that_alone_exceeds_the_window_stops_the_replay_as_the_api_refuses_it() -> None:
    _, outcome, _ = replay(OpenAITruncation(SYS, window=5), TURNS[:1])[0]
    assert outcome.stop == "context_length_exceeded"


def test_what_leaves_the_request_is_still_retained() -> None:
    policy = OpenAITruncation(SYS, window=60)
    replay(policy, TURNS)
    assert isinstance(policy.retained()[0], Message) and len(policy.retained()) == 12
