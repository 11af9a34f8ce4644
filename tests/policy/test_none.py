"""`none`, the control: the system message and the current turn, nothing kept."""

from __future__ import annotations

from harness.chronology import Forget
from harness.policy.groups import group_problems
from policies.none import NoMemory
from tests.conftest import builtin_registry, contents, user
from tests.policy.test_policies import FakeAux
from tests.policy.test_tool_result_compaction import SYS, agent_turn, shape


def test_each_view_is_the_system_message_and_the_current_message_only() -> None:
    policy = NoMemory(SYS)
    for n, session in enumerate(["main", "main", "other", "main"], start=1):
        turn = user(n, f"u{n}", session=session)
        assert contents(policy.view(turn)) == ["SYS", f"u{n}"]
        policy.after_answer(turn, f"a{n}", FakeAux())
        assert list(policy.retained()) == []


def test_each_exchange_is_reported_as_never_stored() -> None:
    outcome = NoMemory(SYS).after_answer(agent_turn(1, steps=1), "a1", FakeAux())
    assert [(d.text, d.cause) for d in outcome.dropped] == [
        ("u1", "not-stored"),
        *[(d.text, "not-stored") for d in outcome.dropped[1:3]],
        ("a1", "not-stored"),
    ]
    assert all(d.why == "not kept: the control keeps nothing (turn 1)" for d in outcome.dropped)


def test_without_a_system_message_the_view_is_the_current_message() -> None:
    assert contents(NoMemory(None).view(user(1, "u1"))) == ["u1"]


def test_a_forget_clears_nothing_and_changes_no_view() -> None:
    policy = NoMemory(SYS)
    policy.after_answer(user(1, "database=Postgres"), "a1", FakeAux())
    outcome = policy.forget(Forget(number=2, line=2, key="database"))
    assert outcome.dropped == [] and list(policy.retained()) == []
    assert contents(policy.view(user(3, "u3"))) == ["SYS", "u3"]


def test_an_agent_turn_keeps_its_own_tool_calls_with_their_results_and_no_earlier_turns() -> None:
    policy = NoMemory(SYS)
    first = agent_turn(1)
    policy.after_answer(first, "a1", FakeAux())
    view = policy.view(agent_turn(2))
    assert shape(view) == shape(NoMemory(SYS).view(agent_turn(2)))  # nothing of turn 1
    assert [m.turn for m in view if m.role != "system"] == [2] * 5  # the user message, two calls, two results
    assert [m.role for m in view] == ["system", "user", "assistant", "tool", "assistant", "tool"]
    assert group_problems(view) == []


def test_it_is_the_control_a_plain_run_runs_last_and_the_seed_leaves_out() -> None:
    registry = builtin_registry()
    assert [s.label for s in registry.default_specs()][-1] == "none"
    assert "none" not in [s.label for s in registry.set_specs("seed")]
    assert registry.named_sets()["control"] == ["none"]
