"""`openai-compaction`: the Responses API's compaction by the in-process emulator; its item opaque."""

from __future__ import annotations

from harness.emulate.openai_wire import COMPACTION
from harness.emulate.sealing import unseal
from harness.policy.delegated import COMPACTION_ROLE, EMULATED_NOTE
from policies.openai_compaction import OpenAICompaction
from tests.policy.test_anthropic_compaction import TURNS, replay
from tests.policy.test_policies import SYS


def test_under_its_threshold_the_whole_history_is_sent() -> None:
    seen = replay(OpenAICompaction(SYS), TURNS)
    view, outcome, aux = seen[-1]
    assert aux.calls == [] and len(view) == 6
    assert outcome.trigger.counter == "estimate" and "compact_threshold 115200: no compaction" in outcome.note


def test_compaction_is_its_own_call_whose_reply_is_the_sealed_item() -> None:
    seen = replay(OpenAICompaction(SYS, compact_threshold=10), TURNS)
    ((role, window, completion),) = seen[0][2].calls
    assert role == COMPACTION_ROLE and window[0] == SYS
    assert completion.usage is not None and completion.usage.prompt_tokens > 0 and completion.notes == (EMULATED_NOTE,)
    summary = unseal(completion.text, COMPACTION)
    assert summary is not None and "database=PostgreSQL" in summary and "database" not in completion.text
    view, _, _ = seen[1]
    assert [m.origin for m in view] == ["system", "opaque", "current"] and view[1].content == summary
    assert {d.cause for d in seen[0][1].dropped} == {"summary"}


def test_the_next_compaction_sends_the_item_back_and_the_client_keeps_its_history() -> None:
    policy = OpenAICompaction(SYS, compact_threshold=10)
    seen = replay(policy, TURNS)
    view, _, aux = seen[2]
    assert [m.origin for m in view] == ["system", "opaque", "current"]
    assert "environment=staging" in view[1].content and "database=PostgreSQL" in view[1].content
    assert [m.content for m in policy.retained() if m.role == "user"] == [t.user for t in TURNS]
