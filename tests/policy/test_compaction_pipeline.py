"""`compaction-pipeline`: MAF's PipelineCompactionStrategy in its documented order (collapse tool
results, summarize, sliding window, truncate), each stage with its own trigger, target and
floor, over the retained history after each exchange; each stage's drops carry its cause."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.base.messages import Message, ToolCall
from harness.chronology import Forget, Step, ToolResult
from harness.models import CallRequest
from harness.models.reference import ReferenceModel
from harness.policy.tokens import TokenCounter
from harness.results.tables import load_results
from harness.run.conversation import Conversation
from policies.compaction_pipeline import CompactionPipeline
from policies.summary import SUMMARY_HEADER
from policies.tool_result_compaction import Index
from tests.conftest import NO_RESTART, builtin_registry, chronology, record_conversation, user
from tests.policy.test_tool_result_compaction import AGENT, SYS, agent_turn, shape, step

OFF = 10**8  # a trigger that never fires in these tests


class Summarizer:
    """Replies to each summarizer call with the next scripted summary; keeps each request's last message."""

    def __init__(self, *summaries: str) -> None:
        self.summaries = list(summaries)
        self.requests: list[str] = []

    def call(
        self,
        role: str,
        messages: Sequence[Message],
        schema: Mapping[str, Any] | None = None,
        reference: Callable[[CallRequest], str] | None = None,
    ) -> str:
        assert role == "summarizer"
        self.requests.append(messages[-1].content)
        return self.summaries.pop(0)


def pipeline(**params: int) -> CompactionPipeline:
    settings = {"collapse_messages": OFF, "summary_tokens": OFF, "window_turns": OFF, "budget": OFF}
    return CompactionPipeline(SYS, **{**settings, **params})


def answer(policy: CompactionPipeline, turn, aux: Summarizer | None = None):
    policy.view(turn)
    return policy.after_answer(turn, f"a{turn.number}", aux or Summarizer())


def test_with_no_trigger_reached_the_history_is_kept_whole() -> None:
    policy = CompactionPipeline(SYS)  # MAF's sample: messages > 7, tokens > 1280, turns > 4, tokens > 32768
    outcome = answer(policy, agent_turn(1, steps=1))
    assert shape(policy.retained()) == ["u1", "call c1.1", "result c1.1", "a1"]
    assert outcome.dropped == []
    assert outcome.note.startswith("nothing compacted; history ")
    assert outcome.note.endswith(f"tokens ({TokenCounter().method()}), 1 turn")


def test_tool_results_are_collapsed_before_the_summarizer_reads_the_history() -> None:
    # One turn, two steps: u1, c1.1, c1.2, a1. The collapse (floor 1) turns both tool groups into
    # notes; the summary (floor 1, a limit of 0 tokens that stays exceeded) then takes u1 and the
    # two notes, and reads the notes, not the tool results.
    policy = pipeline(collapse_messages=0, collapse_preserved=1, summary_tokens=0, summary_preserved=1)
    aux = Summarizer("S1")
    outcome = answer(policy, agent_turn(1), aux)
    assert aux.requests == [
        "Previous summary:\n(none yet)\n\nLatest exchange:\nUser: u1\n"
        "Assistant: [Tool Calls]\nread_file:\n  - ok\n[Tool Calls]\nread_file:\n  - ok"
    ]
    retained = list(policy.retained())
    assert [(m.role, m.origin, m.content) for m in retained] == [
        ("assistant", "summary", f"{SUMMARY_HEADER}\nS1"),
        ("assistant", "history", "a1"),
    ]
    assert [d.cause for d in outcome.dropped] == ["tool-collapse"] * 4 + ["summary"] * 3
    assert outcome.note.startswith("collapsed 2 tool groups (turn 1); summarized 3 groups; history ")


def test_the_summary_replaces_the_oldest_groups_and_carries_the_previous_one() -> None:
    policy = pipeline(summary_tokens=0, summary_preserved=2)
    aux = Summarizer("S1", "S2")
    answer(policy, user(1, "u1"), aux)  # two groups, both preserved
    answer(policy, user(2, "u2"), aux)  # u1, a1 summarized
    answer(policy, user(3, "u3"), aux)  # the summary, u2, a2 summarized again
    assert aux.requests[1] == "Previous summary:\nS1\n\nLatest exchange:\nUser: u2\nAssistant: a2"
    assert [m.content for m in policy.retained()] == [f"{SUMMARY_HEADER}\nS2", "u3", "a3"]


def test_a_summary_over_max_chars_stops_the_replay_and_changes_nothing() -> None:
    policy = pipeline(collapse_messages=0, collapse_preserved=0, summary_tokens=0, summary_preserved=1, max_chars=5)
    outcome = answer(policy, agent_turn(1, steps=1), Summarizer("far too long"))
    assert outcome.stop == "summary_too_long:12"
    assert list(policy.retained()) == []


def test_the_window_drops_the_oldest_whole_turns_and_keeps_the_summary() -> None:
    # Turn 2: u1 is summarized (floor 3 groups); the summary has no turn, and a1 is left as the
    # rest of turn 1, which the window (at most 1 turn) then drops.
    policy = pipeline(summary_tokens=0, summary_preserved=3, window_turns=1)
    aux = Summarizer("S1")
    answer(policy, user(1, "u1"), aux)
    outcome = answer(policy, user(2, "u2"), aux)
    assert [m.content for m in policy.retained()] == [f"{SUMMARY_HEADER}\nS1", "u2", "a2"]
    assert [(d.text, d.cause) for d in outcome.dropped] == [("u1", "summary"), ("a1", "reduction")]
    assert outcome.dropped[1].why == "dropped from the retained history after turn 2"


def test_the_window_keeps_a_turn_with_its_tool_groups() -> None:
    policy = pipeline(window_turns=2)
    for n in (1, 2, 3):
        outcome = answer(policy, agent_turn(n))
    assert shape(policy.retained()) == [
        *("u2", "call c2.1", "result c2.1", "call c2.2", "result c2.2", "a2"),
        *("u3", "call c3.1", "result c3.1", "call c3.2", "result c3.2", "a3"),
    ]
    assert {d.cause for d in outcome.dropped} == {"reduction"}
    assert [d.text for d in outcome.dropped] == ["u1", "read_file({})", "contents", "read_file({})", "contents", "a1"]


def test_truncation_removes_the_oldest_groups_down_to_its_floor() -> None:
    policy = pipeline(budget=0, truncate_preserved=2)  # 0 tokens: the target is never met
    outcome = answer(policy, agent_turn(1))
    assert shape(policy.retained()) == ["call c1.2", "result c1.2", "a1"]
    why = "truncated from the retained history to its 0-token budget after turn 1"
    assert [(d.text, d.why, d.cause) for d in outcome.dropped] == [
        ("u1", why, "reduction"),
        ("read_file({})", why, "reduction"),
        ("contents", why, "reduction"),
    ]
    assert outcome.note.startswith("truncation dropped 2 groups; history ")


def test_truncation_stops_once_the_history_fits_its_budget() -> None:
    # With cl100k_base each one-step-pair turn is 38 tokens (framing included): u 6, call 8,
    # result 5, call 8, result 5, a 6. Two turns are 76; without u1 70; without c1.1 too, 57.
    assert TokenCounter().budget_count([Message("user", "u1")], whole_request=False).tokens == 6
    policy = pipeline(budget=60, truncate_preserved=0)
    answer(policy, agent_turn(1))
    outcome = answer(policy, agent_turn(2))
    assert shape(policy.retained())[:3] == ["call c1.2", "result c1.2", "a1"]
    assert outcome.note == (
        f"truncation dropped 2 groups; history 57 tokens ({TokenCounter().method()}), 1 turn"
    )  # tc1.2 and a1 precede any user message now: turn 0


def test_a_forget_clears_the_history_and_the_summary() -> None:
    policy = pipeline(summary_tokens=0, summary_preserved=1)
    answer(policy, user(1, "u1"), Summarizer("S1"))
    outcome = policy.forget(Forget(number=2, line=2, key=None))
    assert {d.cause for d in outcome.dropped} == {"forget"}
    assert list(policy.retained()) == []


@pytest.mark.parametrize(
    "spec, prohibition_kept",
    [
        # MAF's sample keeps 4 turns: the prohibition of turn 1 leaves with its turn
        ("compaction-pipeline", False),
        ("compaction-pipeline:collapse_messages=1,collapse_preserved=1,window_turns=100", True),
        # the reference summarizer keeps the user's statement in the summary
        ("compaction-pipeline:summary_tokens=200,summary_preserved=4,window_turns=100", True),
        ("compaction-pipeline:window_turns=100,budget=150,truncate_preserved=1", False),
    ],
)
def test_replayed_over_an_agent_chronology_no_group_is_split(tmp_path: Path, spec: str, prohibition_kept: bool) -> None:
    registry = builtin_registry()
    parsed = registry.parse(spec)
    record_conversation(tmp_path, Conversation(AGENT, parsed, "reference", 1), registry, ReferenceModel())
    results = load_results(tmp_path)
    assert results.turns.group_violations.isna().all()
    probe = results.probes.query("turn == 9").iloc[0]
    assert bool(probe.in_view) is prohibition_kept
    if not prohibition_kept:
        assert probe.cause == "reduction"


def test_a_prohibition_last_seen_in_a_tool_result_is_lost_to_the_collapse(tmp_path: Path) -> None:
    # Turn 1 states it; turn 2's tool result echoes it. After turn 2 the window (1 turn) drops
    # turn 1 and the echo stays; after turn 3 the collapse takes the echo (7 messages exceed 6;
    # turn 3's 3 groups are protected), then the window drops turn 2's remains.
    echo = Step(
        (ToolCall("g1", "grep", '{"pattern": "restart"}'),),
        (ToolResult("g1", "RUNBOOK.md: never restart production"),),
    )
    agent = chronology(
        user(1, "Never restart production.", assistant="Noted."),
        user(2, "Where is that written?", steps=(echo,), assistant="In the runbook."),
        user(3, "Look at service 3.", steps=(step("c3.1"),), assistant="Done."),
        user(4, "Can I restart production?", probe="restart"),
        prohibitions=(NO_RESTART,),
    )
    registry = builtin_registry()
    spec = registry.parse("compaction-pipeline:collapse_messages=6,collapse_preserved=3,window_turns=1")
    record_conversation(tmp_path, Conversation(agent, spec, "reference", 1), registry, ReferenceModel())
    probe = load_results(tmp_path).probes.query("turn == 4").iloc[0]
    assert (bool(probe.in_view), probe.cause) == (False, "tool-collapse")
    assert probe.lost_at == "tool results of turn 2 collapsed into a [Tool Calls] note after turn 3"


class Numbered:
    """A summarizer whose every reply is new: `S1`, `S2`, ..."""

    def __init__(self) -> None:
        self.count = 0

    def call(self, role: str, messages: Sequence[Message], schema: object = None, reference: object = None) -> str:
        self.count += 1
        return f"S{self.count}"


@settings(max_examples=40, deadline=None)
@given(
    params=st.fixed_dictionaries(
        {
            "collapse_messages": st.integers(0, 30),
            "collapse_preserved": st.integers(0, 6),
            "summary_tokens": st.sampled_from([0, 60, 200, OFF]),
            "summary_preserved": st.integers(0, 6),
            "window_turns": st.sampled_from([1, 2, 5, OFF]),
            "budget": st.sampled_from([0, 80, 300, OFF]),
            "truncate_preserved": st.integers(0, 6),
        }
    ),
    turns=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 30)), min_size=1, max_size=10),
)
def test_the_kept_index_compacts_as_a_fresh_index_of_the_stored_history_would(
    params: dict[str, int], turns: list[tuple[int, int]]
) -> None:
    kept, fresh = pipeline(**params), pipeline(**params)
    kept_aux, fresh_aux = Numbered(), Numbered()
    for number, (steps, size) in enumerate(turns, start=1):
        turn = user(
            number, f"u{number}", steps=tuple(step(f"c{number}.{k}", content="w " * size) for k in range(steps))
        )
        # MAF's AsChatReducer: a new index of the stored history at every call
        fresh.indexes["main"] = Index(fresh.histories.of("main"), TokenCounter())
        outcomes = [p.after_answer(turn, f"a{number}", aux) for p, aux in ((kept, kept_aux), (fresh, fresh_aux))]
        assert outcomes[0] == outcomes[1]
        assert list(kept.retained()) == list(fresh.retained())
