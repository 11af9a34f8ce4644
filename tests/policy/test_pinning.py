"""Pinned statements (`harness.policy.pinning`) and a system message a turn adds, under each
policy: with `pin=true` the pinned copies open every later view after the system message, in
turn order, and stay in the retained state; with `pin=false` (the default) nothing is copied."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest

from harness.base.messages import Message
from harness.chronology import Forget, UserTurn
from harness.models import CallRequest
from harness.policy import Drop
from harness.policy.history import exchange
from harness.policy.pinning import Pins, pinned_statements
from tests.conftest import builtin_registry, user

SYS = Message("system", "SYS", origin="system")
RULE = "Never truncate a table on db-prod-shared."
# Policies that take pin=, with parameters that make them compact this short conversation.
PINNING = [
    "summary",
    "summary-buffer:budget=1,turns=0",
    "compaction-pipeline:window_turns=1",
    "request-compaction:trigger=1,preserve=1",
    "retained-reduction:trigger=1,preserve=1",
    "tool-result-compaction",
    "token-budget:budget=1",
    "last-turns:turns=1",
]


class SummaryAux:
    """A summarizer that writes the same short summary every time."""

    def call(
        self,
        role: str,
        messages: Sequence[Message],
        schema: Mapping[str, Any] | None = None,
        reference: Callable[[CallRequest], str] | None = None,
    ) -> str:
        assert role == "summarizer", role
        return "s"


def turns() -> list[UserTurn]:
    return [
        user(1, "u1 pinned", pin=True),
        user(2, "u2", system=RULE, pin_system=True),
        user(3, "u3", system="not pinned"),
        user(4, "u4"),
        user(5, "u5"),
    ]


def replay(spec: str) -> list[list[Message]]:
    """The view at each turn, the answer to turn n being `a<n>`."""
    registry = builtin_registry()
    policy = registry.create(registry.parse(spec), SYS)
    views = []
    for turn in turns():
        views.append(list(policy.view(turn)))
        policy.after_answer(turn, f"a{turn.number}", SummaryAux())
    views.append(list(policy.retained()))
    return views


@pytest.mark.parametrize("spec", PINNING)
def test_pinned_copies_open_every_later_view_after_the_system_message(spec: str) -> None:
    views = replay(f"{spec},pin=true" if ":" in spec else f"{spec}:pin=true")
    assert views[0][1].origin != "pinned"  # at its own turn the statement is the current message
    for view in views[2:5]:
        copies = view[1:3]
        assert [(m.role, m.content, m.origin, m.turn) for m in copies] == [
            ("user", "u1 pinned", "pinned", 1),
            ("system", RULE, "pinned", 2),
        ]
        assert view[0] is SYS
    retained = views[5]
    assert [m.content for m in retained if m.origin == "pinned"] == ["u1 pinned", RULE]


@pytest.mark.parametrize("spec", PINNING)
def test_without_pin_nothing_is_copied(spec: str) -> None:
    assert not [m for view in replay(spec) for m in view if m.origin == "pinned"]


def test_the_pin_param_is_off_by_default_and_takes_true_or_false() -> None:
    registry = builtin_registry()
    for spec in PINNING:
        parsed = registry.parse(spec.split(":")[0])
        assert parsed.params["pin"] == "false", spec
    with pytest.raises(Exception, match="false, true"):
        registry.parse("summary:pin=yes")


def test_a_forget_clears_the_pinned_statements_with_a_forget_drop() -> None:
    pins = Pins("true")
    pins.after_answer(user(1, "keep me", pin=True))
    dropped = pins.forget(Forget(number=2, line=2, key=None))
    assert dropped == [Drop("keep me", "pinned statements cleared by forget all at turn 2 (the seed's rule)", "forget")]
    assert pins.of("main") == [] and pins.retained() == []


def test_pins_are_kept_per_session() -> None:
    pins = Pins("true")
    pins.after_answer(user(1, "ops rule", session="ops", pin=True))
    assert pins.of("main") == [] and [m.content for m in pins.of("ops")] == ["ops rule"]


def test_an_unpinned_turn_has_no_pinned_statement() -> None:
    assert pinned_statements(user(1, "u", system="s")) == []


# --- a system message a turn adds -----------------------------------------------------------


def test_a_turns_system_message_follows_its_user_message_in_the_view_and_the_history() -> None:
    turn = user(2, "u2", system=RULE)
    assert [(m.role, m.origin) for m in exchange(turn, "a2")] == [
        ("user", "history"),
        ("system", "history"),
        ("assistant", "history"),
    ]
    policy = builtin_registry().create(builtin_registry().parse("full-history"), SYS)
    assert [(m.role, m.content, m.origin) for m in policy.view(turn)][1:] == [
        ("user", "u2", "current"),
        ("system", RULE, "current"),
    ]


@pytest.mark.parametrize(
    ("spec", "kept"),
    [
        ("last-turns:turns=1", False),  # a window cuts whole turns: the system message goes with its turn
        ("token-budget:budget=1", False),
        ("request-compaction:trigger=1,preserve=1", True),  # MAF keeps every system message
        ("retained-reduction:trigger=1,preserve=1", True),
        ("compaction-pipeline:window_turns=1", True),
    ],
)
def test_windows_keep_a_mid_conversation_system_message_as_their_framework_does(spec: str, kept: bool) -> None:
    last = replay(spec)[4]  # turn 5: turns 2 and 3 are out of every window
    assert (RULE in [m.content for m in last]) is kept


class RecordingAux(SummaryAux):
    """The same summarizer, recording each request's last message."""

    def __init__(self) -> None:
        self.requests: list[str] = []

    def call(
        self,
        role: str,
        messages: Sequence[Message],
        schema: Mapping[str, Any] | None = None,
        reference: Callable[[CallRequest], str] | None = None,
    ) -> str:
        self.requests.append(messages[-1].content)
        return super().call(role, messages, schema, reference)


def test_the_summary_policy_sends_the_turns_system_message_to_its_summarizer_and_drops_it() -> None:
    registry = builtin_registry()
    policy = registry.create(registry.parse("summary"), SYS)
    aux, turn = RecordingAux(), user(1, "u1", system=RULE)
    policy.view(turn)
    outcome = policy.after_answer(turn, "a1", aux)
    assert "User: u1\nSystem: Never truncate a table on db-prod-shared.\nAssistant: a1" in aux.requests[0]
    assert Drop(RULE, "absent from the summary written at turn 1", "summary") in outcome.dropped


def test_the_fact_store_never_stores_a_turns_system_message() -> None:
    registry = builtin_registry()
    policy = registry.create(registry.parse("bounded-facts"), SYS)
    turn = user(1, "database=db-staging", system=RULE)
    assert [m.content for m in policy.view(turn)][-1] == RULE  # sent at its turn
    drops = policy.after_answer(turn, "a1", WriterAux()).dropped
    assert Drop(RULE, "not stored: system messages are not read by the fact store (turn 1)", "not-stored") in drops


class WriterAux:
    """The fact writer's reference reply (the one reader of declarations)."""

    def call(
        self,
        role: str,
        messages: Sequence[Message],
        schema: Mapping[str, Any] | None = None,
        reference: Callable[[CallRequest], str] | None = None,
    ) -> str:
        assert reference is not None
        return reference(CallRequest(role, tuple(messages), user(1, "database=db-staging")))
