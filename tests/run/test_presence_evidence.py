"""Evidence in the one definition of "in view": only the marked message itself, whole (a
turn's user message or a tool result), states it; and the whole-value rule without a key, as `expect: {value: ...}` uses it."""

from __future__ import annotations

import pytest

from harness.base.messages import Message, ToolCall
from harness.chronology.ledger import Ledger
from harness.chronology.types import Step, ToolResult
from harness.run.presence import Presence, evidence, evidence_of, holds_value
from tests.conftest import chronology, user

MOVED = "I moved to Lisbon last spring."
CHRON = chronology(
    user(1, MOVED, evidence=("where", "since")),
    user(2, "Where do I live now?", probe="where"),
    user(3, "Since when?", probe="since"),
)
PRESENCE = Presence(CHRON, Ledger(CHRON).values())


def said(role: str, content: str, origin: str = "history", turn: int | None = 1) -> frozenset:
    return PRESENCE.of_message(Message(role, content, origin, turn))  # type: ignore[arg-type]


@pytest.mark.parametrize("origin", ["history", "retrieved", "current"])
def test_the_users_own_message_of_an_evidence_turn_states_it_for_each_probe(origin: str) -> None:
    assert {evidence("where", 1), evidence("since", 1)} <= said("user", MOVED, origin)


def test_the_message_under_a_facts_block_states_it() -> None:
    assert evidence("where", 1) in said("user", f"Facts:\n- city=Porto\n\n{MOVED}", "facts+current")


@pytest.mark.parametrize(
    ("role", "content", "origin", "turn"),
    [
        ("assistant", MOVED, "history", 1),  # a reply repeating it
        ("system", f"Summary: {MOVED}", "summary", None),  # a summary carrying it
        ("user", "I moved to Lisbon", "history", 1),  # the message clipped by a policy
        ("user", MOVED, "history", 2),  # the same words at another turn
    ],
    ids=["reply", "summary", "clipped", "another-turn"],
)
def test_nothing_else_states_evidence(role: str, content: str, origin: str, turn: int | None) -> None:
    assert not any(s.kind == "evidence" for s in said(role, content, origin, turn))


@pytest.mark.parametrize(
    ("text", "wanted", "held"),
    [
        ("You live in Lisbon.", "lisbon", True),  # ignoring case
        ("4.2.1 is installed", "4.2", False),  # not inside a longer version
        ("see /var/log/erp.log", "ERP", False),  # nor inside a path
        ("Lisbon's old town", "Lisbon", True),
        ("We use SQL Server 2022", "SQL Server", True),  # no key: no longer value of it to prefer
    ],
)
def test_a_value_without_a_key_is_held_as_a_whole_value(text: str, wanted: str, held: bool) -> None:
    assert holds_value(text, wanted) is held


# --- a tool result marked as evidence (an agent's fact lives there) ----------------------------

PATCHED = "Patch applied.\nfile=billing/rounding.py"
AGENT = chronology(
    user(
        1,
        "Fix it.",
        steps=(
            Step(
                (ToolCall("c1", "apply_patch", "{}"), ToolCall("c2", "run_tests", "{}")),
                (ToolResult("c1", PATCHED, evidence=("changed",)), ToolResult("c2", "3 passed")),
            ),
        ),
        assistant="Done.",
    ),
    user(2, "Which file did you change?", probe="changed"),
)
AGENT_PRESENCE = Presence(AGENT, Ledger(AGENT).values())


def result(call: str, content: str, turn: int = 1) -> frozenset:
    return AGENT_PRESENCE.of_message(Message("tool", content, "history", turn, "main", tool_call_id=call))


def test_a_marked_tool_result_sent_whole_states_its_evidence_and_only_it() -> None:
    assert evidence("changed", 1, "c1") in result("c1", PATCHED)
    assert not any(s.kind == "evidence" for s in result("c2", "3 passed"))  # not marked
    assert evidence_of(AGENT.user_turns[0], "changed") == [evidence("changed", 1, "c1")]  # not the user message


@pytest.mark.parametrize("content", ["[cleared]", "Patch applied."])
def test_a_marked_result_cleared_or_clipped_states_no_evidence(content: str) -> None:
    assert not any(s.kind == "evidence" for s in result("c1", content))
