"""`anthropic-compaction`: Anthropic's compaction run by the in-process emulator, as its own call."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest

from harness.base.errors import InputError, ModelError
from harness.base.messages import Message
from harness.chronology import Forget, UserTurn
from harness.emulate.anthropic import AnthropicEmulator, Faults
from harness.models import CallRequest, Completion, ProviderRequest
from harness.models.reference import ReferenceModel
from harness.policy import PolicyRegistry
from harness.policy.delegated import COMPACTION_ROLE, EMULATED_NOTE
from policies.anthropic_compaction import AnthropicCompaction
from tests.conftest import user
from tests.policy.test_policies import SYS


class OfflineAux:
    """The seam as the runner gives it with `--model reference`: each call answered by the
    reference model, which replies with the policy's stand-in; every call and reply kept."""

    def __init__(self, turn: UserTurn, empty: bool = False) -> None:
        self.turn, self.empty = turn, empty
        self.calls: list[tuple[str, list[Message], Completion]] = []

    def call(
        self,
        role: str,
        messages: Sequence[Message],
        schema: Mapping[str, Any] | None = None,
        reference: Callable[[CallRequest], str | Completion] | None = None,
        provider: ProviderRequest | None = None,
    ) -> str:
        self.provider = provider
        completion = ReferenceModel().complete(CallRequest(role, tuple(messages), self.turn, schema, reference))
        self.calls.append((role, list(messages), completion))
        return "" if self.empty else completion.text


def replay(policy: Any, turns: list[UserTurn], empty: bool = False) -> list[tuple[list[Message], Any, OfflineAux]]:
    """(view, outcome, the turn's aux) at each turn, the recorded reply as the answer."""
    seen = []
    for turn in turns:
        view = list(policy.view(turn))
        aux = OfflineAux(turn, empty)
        seen.append((view, policy.after_answer(turn, turn.assistant or "Noted.", aux), aux))
    return seen


TURNS = [
    user(1, "database=PostgreSQL. Never restart production during business hours.", assistant="Noted."),
    user(2, "environment=staging", assistant="Noted."),
    user(3, "Which database do we use?", assistant="PostgreSQL."),
]


def test_under_its_trigger_nothing_is_compacted_and_the_count_is_the_emulators_estimate() -> None:
    seen = replay(AnthropicCompaction(SYS), TURNS)
    view, outcome, aux = seen[-1]
    assert aux.calls == [] and [m.origin for m in view].count("summary") == 0
    assert outcome.trigger.counter == "estimate" and outcome.trigger.tokens > 0
    assert "trigger 150000" in outcome.note and "no compaction" in outcome.note


def test_on_demand_compaction_is_its_own_call_with_the_emulated_providers_usage() -> None:
    seen = replay(AnthropicCompaction(SYS, on_demand=10), TURNS)
    _, first, aux = seen[0]
    ((role, window, completion),) = aux.calls
    assert role == COMPACTION_ROLE and window[0] == SYS and window[-1].content == "Noted."
    assert completion.usage is not None and completion.usage.prompt_tokens > 0 and completion.notes == (EMULATED_NOTE,)
    assert "on-demand compaction after turn 1" in first.note
    assert aux.provider.body == {"compaction": {"type": "summarize"}} and aux.provider.betas == ("compact-2026-09-04",)
    # What the block replaced left the view (cause summary); the history is kept whole.
    assert {d.cause for d in first.dropped} == {"summary"} and "no longer reads it" in first.dropped[0].why
    view, _, _ = seen[1]
    assert [m.origin for m in view] == ["system", "summary", "current"]
    assert "database=PostgreSQL" in view[1].content and "Never restart production" in view[1].content


def test_the_next_compaction_summarises_the_block_and_what_followed_it() -> None:
    policy = AnthropicCompaction(SYS, on_demand=10)
    seen = replay(policy, TURNS)
    view, outcome, aux = seen[2]
    assert [m.origin for m in view] == ["system", "summary", "current"]
    assert "environment=staging" in view[1].content and "database=PostgreSQL" in view[1].content
    retained = list(policy.retained())
    assert [m.content for m in retained if m.role == "user"] == [t.user for t in TURNS]  # the client keeps it all
    assert [m.origin for m in retained].count("summary") == 1


def test_threshold_compaction_waits_for_the_trigger_the_api_allows() -> None:
    big = [user(n, f"note {n}: " + "x" * 120_000, assistant="Noted.") for n in (1, 2)]
    seen = replay(AnthropicCompaction(SYS, trigger=50_000), big)
    assert seen[0][2].calls == []  # about 30,000 estimated tokens: under the trigger
    assert [role for role, *_ in seen[1][2].calls] == [COMPACTION_ROLE]
    assert "threshold compaction after turn 2" in seen[1][1].note
    # What anthropic:NAME sends the real API for it: the same edit, paused after the compaction.
    asked = seen[1][2].provider
    assert asked.api == "anthropic" and asked.betas == ("compact-2026-01-12",)
    assert asked.body == {
        "context_management": {
            "edits": [
                {
                    "type": "compact_20260112",
                    "trigger": {"type": "input_tokens", "value": 50_000},
                    "pause_after_compaction": True,
                }
            ]
        }
    }


def test_a_trigger_under_the_apis_minimum_is_refused() -> None:
    registry = PolicyRegistry({"anthropic-compaction": AnthropicCompaction})
    with pytest.raises(InputError, match="trigger"):
        registry.parse("anthropic-compaction:trigger=1000")


def test_an_empty_block_is_the_apis_failed_compaction_and_changes_nothing() -> None:
    seen = replay(AnthropicCompaction(SYS, on_demand=10), TURNS, empty=True)
    view, outcome, _ = seen[1]
    assert "compaction failed" in seen[0][1].note and seen[0][1].dropped == []
    assert [m.origin for m in view].count("summary") == 0 and len(view) == 4


def test_a_forget_discards_the_block_with_the_history() -> None:
    policy = AnthropicCompaction(SYS, on_demand=10)
    replay(policy, TURNS[:1])
    outcome = policy.forget(Forget(number=2, line=2, key=None))
    assert "compaction block discarded" in outcome.dropped[-1].why and list(policy.retained()) == []


def test_pinned_statements_follow_the_block_which_the_api_reads_from() -> None:
    turns = [user(1, "Never restart production.", assistant="Noted.", pin=True), *TURNS[1:]]
    seen = replay(AnthropicCompaction(SYS, on_demand=10, pin="true"), turns)
    view, _, aux = seen[2]
    assert [m.origin for m in view] == ["system", "summary", "pinned", "current"]
    ((_, window, _),) = aux.calls  # the request it compacted alternates user and assistant as the API requires
    assert [m.origin for m in window][:3] == ["system", "summary", "pinned"]


def test_the_apis_refusal_fails_the_compaction_call_as_a_real_endpoints_would() -> None:
    policy = AnthropicCompaction(SYS, on_demand=10)
    policy.emulator = AnthropicEmulator(Faults(compaction_unavailable=True))  # 529 compaction_unavailable
    turn = TURNS[0]
    policy.view(turn)
    with pytest.raises(ModelError, match="529 overloaded_error"):
        policy.after_answer(turn, "Noted.", OfflineAux(turn))
