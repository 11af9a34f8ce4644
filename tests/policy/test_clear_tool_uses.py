"""`clear-tool-uses`: Anthropic's `clear_tool_uses_20250919` on the request view, history kept whole."""

from __future__ import annotations

import re

import pytest

from harness.base.messages import Message, ToolCall
from harness.chronology import Forget, Step, ToolResult
from harness.chronology.ledger import Ledger
from harness.policy import PolicyRegistry
from harness.policy.groups import group_problems
from harness.policy.tokens import TokenCounter
from harness.run.presence import Presence, prohibition
from harness.run.trace import Trace
from policies.clear_tool_uses import PLACEHOLDER, ClearToolUses, parse_names, tool_uses
from tests.conftest import NO_RESTART, chronology, user
from tests.policy.test_policies import SYS, FakeAux


def read(number: int, tool: str = "read_file", size: int = 400) -> Step:
    """One call and its result, the result `size` characters long and naming its call."""
    call = f"call_{number}"
    body = (f"result of {call} " * size)[:size]
    return Step((ToolCall(call, tool, f'{{"n": {number}}}'),), (ToolResult(call, body),))


def turns_with_reads(count: int, tool_of=lambda n: "read_file") -> list:  # noqa: ANN001
    return [user(n, f"step {n}", steps=(read(n, tool_of(n)),), assistant=f"a{n}") for n in range(1, count + 1)]


def run(policy: ClearToolUses, turns: list) -> list[tuple[list[Message], object]]:
    """(view, outcome) at each turn."""
    seen = []
    for turn in turns:
        view = list(policy.view(turn))
        seen.append((view, policy.after_answer(turn, turn.assistant or "", FakeAux())))
    return seen


def tool_contents(view: list[Message]) -> dict[str, str]:
    return {m.tool_call_id or "": m.content for m in view if m.role == "tool"}


def test_under_the_trigger_the_view_is_the_whole_history_and_nothing_is_cleared() -> None:
    seen = run(ClearToolUses(SYS), turns_with_reads(6))
    view, outcome = seen[-1]
    assert PLACEHOLDER not in tool_contents(view).values() and len(tool_contents(view)) == 6
    assert outcome.dropped == [] and "trigger 100000 not exceeded: cleared_tool_uses=0" in outcome.note


def test_over_the_trigger_all_but_the_three_most_recent_tool_results_become_the_placeholder() -> None:
    policy = ClearToolUses(SYS, trigger=0)
    view, _ = run(policy, turns_with_reads(6))[-1]
    contents = tool_contents(view)
    assert [call for call, text in contents.items() if text == PLACEHOLDER] == ["call_1", "call_2", "call_3"]
    assert all(contents[f"call_{n}"].startswith(f"result of call_{n}") for n in (4, 5, 6))
    assert group_problems(view) == []  # each cleared result keeps its tool message: no group split
    assert [m.content for m in policy.retained() if m.role == "tool"][0].startswith("result of call_1")


def test_the_trigger_must_be_exceeded_not_reached() -> None:
    turns = turns_with_reads(5)
    probe = ClearToolUses(SYS)
    for turn in turns[:-1]:
        probe.view(turn)
        probe.after_answer(turn, turn.assistant or "", FakeAux())
    size = TokenCounter().budget_count(list(probe.view(turns[-1]))).tokens
    assert PLACEHOLDER not in tool_contents(run(ClearToolUses(SYS, trigger=size), turns)[-1][0]).values()
    assert PLACEHOLDER in tool_contents(run(ClearToolUses(SYS, trigger=size - 1), turns)[-1][0]).values()


def test_the_note_gives_the_counts_the_api_reports_counted_by_the_labelled_local_tokenizer() -> None:
    policy = ClearToolUses(SYS, trigger=0)
    seen = run(policy, turns_with_reads(5))
    view, outcome = seen[-1]
    note = outcome.note
    counter = TokenCounter()
    before = int(re.search(r"view (\d+) tokens", note).group(1))
    assert f"view after clearing {counter.budget_count(view).tokens} tokens" in note
    assert "cleared_tool_uses=2," in note
    assert f"cleared_input_tokens={before - counter.budget_count(view).tokens};" in note
    assert f"view {before} tokens ({counter.method()}) exceeds" in note


def test_keep_counts_the_newest_tool_uses_and_the_current_turns_own_steps_can_be_cleared() -> None:
    several = Step(
        (ToolCall("c_a", "grep", "{}"), ToolCall("c_b", "grep", "{}")),
        (ToolResult("c_a", "alpha " * 50), ToolResult("c_b", "beta " * 50)),
    )
    policy = ClearToolUses(SYS, trigger=0, keep=1)
    view = list(policy.view(user(1, "search", steps=(several, read(2)))))
    assert tool_contents(view) == {"c_a": PLACEHOLDER, "c_b": PLACEHOLDER, "call_2": tool_contents(view)["call_2"]}
    assert tool_contents(view)["call_2"].startswith("result of call_2") and group_problems(view) == []
    assert [m.origin for m in view if m.role == "tool"] == ["current"] * 3


def test_keep_zero_clears_every_tool_result() -> None:
    view, _ = run(ClearToolUses(SYS, trigger=0, keep=0), turns_with_reads(3))[-1]
    assert set(tool_contents(view).values()) == {PLACEHOLDER}


def test_excluded_tools_are_never_cleared_and_still_count_among_the_kept() -> None:
    tool_of = lambda n: "read_runbook" if n in (1, 5) else "read_file"  # noqa: E731
    policy = ClearToolUses(SYS, trigger=0, exclude_tools=" read_runbook + other ")
    view, _ = run(policy, turns_with_reads(6, tool_of))[-1]
    cleared = [call for call, text in tool_contents(view).items() if text == PLACEHOLDER]
    assert cleared == ["call_2", "call_3"]  # 4, 5, 6 are the three kept; 1 is excluded


def test_a_clearing_that_frees_less_than_clear_at_least_is_not_applied() -> None:
    small = run(ClearToolUses(SYS, trigger=0, clear_at_least=10_000), turns_with_reads(5))[-1]
    assert PLACEHOLDER not in tool_contents(small[0]).values()
    assert "cleared_tool_uses=0 (it would free" in small[1].note and "under clear_at_least 10000" in small[1].note
    enough = run(ClearToolUses(SYS, trigger=0, clear_at_least=50), turns_with_reads(5))[-1]
    assert PLACEHOLDER in tool_contents(enough[0]).values()


def test_clear_tool_inputs_empties_the_cleared_calls_arguments_only() -> None:
    view, outcome = run(ClearToolUses(SYS, trigger=0, clear_tool_inputs="true"), turns_with_reads(4))[-1]
    arguments = {c.id: c.arguments for m in view for c in m.tool_calls}
    assert arguments == {"call_1": "{}", "call_2": '{"n": 2}', "call_3": '{"n": 3}', "call_4": '{"n": 4}'}
    assert group_problems(view) == []
    kept_calls = run(ClearToolUses(SYS, trigger=0), turns_with_reads(4))[-1][0]
    assert {c.arguments for m in kept_calls for c in m.tool_calls} >= {'{"n": 1}'}


def test_a_result_is_reported_as_a_tool_clear_drop_at_the_turn_its_view_first_clears_it() -> None:
    seen = run(ClearToolUses(SYS, trigger=0), turns_with_reads(6))
    drops = [(n, d.text[:20], d.cause) for n, (_, outcome) in enumerate(seen, 1) for d in outcome.dropped]
    assert drops == [
        (4, "result of call_1 res", "tool-clear"),
        (5, "result of call_2 res", "tool-clear"),
        (6, "result of call_3 res", "tool-clear"),
    ]
    assert "cleared from the request view at turn 4" in seen[3][1].dropped[0].why


def test_a_forget_clears_the_history_and_what_was_cleared() -> None:
    policy = ClearToolUses(SYS, trigger=0)
    run(policy, turns_with_reads(5))
    outcome = policy.forget(Forget(number=6, line=6, key=None))
    assert {d.cause for d in outcome.dropped} == {"forget"} and list(policy.retained()) == []
    assert policy.cleared == {}


def test_tool_uses_pair_each_call_with_its_result_in_order() -> None:
    view = [
        Message("assistant", "", tool_calls=(ToolCall("a", "x", "{}"), ToolCall("b", "y", "{}"))),
        Message("tool", "ra", tool_call_id="a"),
        Message("tool", "rb", tool_call_id="b"),
        Message("assistant", "", tool_calls=(ToolCall("c", "x", "{}"),)),  # never answered
    ]
    assert [(u.call.id, u.call_at, u.result_at) for u in tool_uses(view)] == [("a", 0, 1), ("b", 0, 2)]
    assert parse_names(" a+ +b +") == parse_names("a,b") == frozenset({"a", "b"})


@pytest.mark.parametrize("clear_inputs", ["false", "true"])
def test_what_left_the_view_with_a_cleared_result_is_lost_to_tool_clear(clear_inputs: str) -> None:
    # A prohibition read in a tool result (the runbook), and nowhere else: once the result is
    # cleared from the view the trace names `tool-clear`, not `window` (the history still holds it).
    runbook = Step(
        (ToolCall("call_r", "read_runbook", '{"page": "restarts"}'),),
        (ToolResult("call_r", "Never restart production during business hours."),),
    )
    turns = [user(1, "Read the runbook.", steps=(runbook,), assistant="Read it.")]
    turns += [user(n, f"step {n}", steps=(read(n),), assistant=f"a{n}") for n in range(2, 6)]
    chron = chronology(*turns, prohibitions=(NO_RESTART,))
    trace = Trace(Presence(chron, Ledger(chron).values()))
    policy = ClearToolUses(SYS, trigger=0, clear_tool_inputs=clear_inputs)
    for turn in turns:
        trace.view(turn.number, turn.session, list(policy.view(turn)))
        outcome = policy.after_answer(turn, turn.assistant or "", FakeAux())
        trace.after(turn.number, turn.session, list(policy.retained()), outcome.dropped)
    subject = prohibition("no-restart")
    assert trace.in_retained(subject) and not trace.in_view("main", subject)
    loss = trace.loss("main", subject, 1, "main")
    assert loss.cause == "tool-clear" and loss.where.startswith(
        "tool result of call_r cleared from the request view at turn 4"
    )


def test_several_excluded_tools_are_given_on_the_command_line_joined_by_plus() -> None:
    spec = PolicyRegistry.from_mapping({"clear-tool-uses": ClearToolUses}).parse(
        "clear-tool-uses:trigger=0,exclude_tools=read_runbook+query,clear_tool_inputs=true"
    )
    policy = ClearToolUses(SYS, **spec.params)
    assert policy.exclude == {"read_runbook", "query"} and policy.clear_inputs and policy.trigger == 0
