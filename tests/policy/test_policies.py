"""Each built-in policy's request view and retained state, turn by turn."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import pytest

from harness.base.errors import ModelError
from harness.base.messages import Message, ToolCall
from harness.chronology import Forget, Step, ToolResult, UserTurn
from harness.chronology.writer import reference_writer_output
from harness.models import CallRequest
from harness.policy import Drop, Outcome, PolicyRegistry
from harness.policy.history import FORGET_RULE
from policies.bounded_facts import FACTS_SCHEMA, BoundedFacts
from policies.compaction import RequestCompaction, RetainedReduction
from policies.facts_window import FactsWindow
from policies.full_history import FullHistory
from policies.last_turns import LastTurns
from policies.summary import SUMMARY_HEADER, Summary
from tests.conftest import COMPARISON, contents, user

SYS = Message("system", "SYS", origin="system")


class FakeAux:
    """The seam with scripted summaries and the reference writer; records each call's role and schema."""

    def __init__(self, summaries: list[str] | None = None, writer_fails: bool = False) -> None:
        self.summaries = list(summaries or [])
        self.writer_fails = writer_fails
        self.writer_inputs: list[str] = []
        self.calls: list[tuple[str, Mapping[str, Any] | None]] = []

    def call(
        self,
        role: str,
        messages: Sequence[Message],
        schema: Mapping[str, Any] | None = None,
        reference: Callable[[CallRequest], str] | None = None,
    ) -> str:
        self.calls.append((role, schema))
        if role == "summarizer":
            return self.summaries.pop(0)
        assert role == "writer", role
        self.writer_inputs.append(messages[-1].content)
        if self.writer_fails:
            raise ModelError("HTTP 500 after 3 tries")
        return reference_writer_output(messages[-1].content, None)


def replay(policy, texts: list[str], aux: FakeAux | None = None) -> list[tuple[list[str], list[str]]]:
    """(view, retained) contents at each turn; the answer to turn n is `a<n>`."""
    seen = []
    for n, text in enumerate(texts, start=1):
        turn = user(n, text)
        view = policy.view(turn)
        policy.after_answer(turn, f"a{n}", aux or FakeAux())
        seen.append((contents(view), contents(policy.retained())))
    return seen


FIVE = ["u1", "u2", "u3", "u4", "u5"]


@pytest.mark.parametrize(
    "policy, views",
    [
        (
            FullHistory(SYS),
            {
                1: ["SYS", "u1"],
                4: ["SYS", "u1", "a1", "u2", "a2", "u3", "a3", "u4"],
                5: ["SYS", "u1", "a1", "u2", "a2", "u3", "a3", "u4", "a4", "u5"],
            },
        ),
        (
            LastTurns(SYS),
            {
                2: ["SYS", "u1", "a1", "u2"],
                3: ["SYS", "u1", "a1", "u2", "a2", "u3"],
                4: ["SYS", "u1", "a1", "u2", "a2", "u3", "a3", "u4"],
                5: ["SYS", "u2", "a2", "u3", "a3", "u4", "a4", "u5"],
            },
        ),
        (
            RequestCompaction(SYS),
            {
                3: ["SYS", "u1", "a1", "u2", "a2", "u3"],
                4: ["SYS", "u2", "a2", "u3", "a3", "u4"],
                5: ["SYS", "u3", "a3", "u4", "a4", "u5"],
            },
        ),
        (
            RetainedReduction(SYS),
            {
                3: ["SYS", "u1", "a1", "u2", "a2", "u3"],
                4: ["SYS", "u1", "a1", "u2", "a2", "u3", "a3", "u4"],
                5: ["SYS", "u2", "a2", "u3", "a3", "u4", "a4", "u5"],
            },
        ),
        (LastTurns(SYS, turns=1), {3: ["SYS", "u2", "a2", "u3"]}),
        # preserve is a floor (as in MAF): 5 turns exceed 4, the oldest goes, 4 remain (not 2)
        (
            RequestCompaction(SYS, trigger=4, preserve=2),
            {
                4: ["SYS", "u1", "a1", "u2", "a2", "u3", "a3", "u4"],
                5: ["SYS", "u2", "a2", "u3", "a3", "u4", "a4", "u5"],
            },
        ),
    ],
    ids=["full-history", "last-turns", "request-compaction", "retained-reduction", "last-turns:1", "compaction:4/2"],
)
def test_request_views(policy, views: dict[int, list[str]]) -> None:
    seen = replay(policy, FIVE)
    for turn, expected in views.items():
        assert seen[turn - 1][0] == expected, f"turn {turn}"


ALL_TEN = ["u1", "a1", "u2", "a2", "u3", "a3", "u4", "a4", "u5", "a5"]


@pytest.mark.parametrize(
    "policy, retained",
    [
        (FullHistory(SYS), ALL_TEN),
        (LastTurns(SYS), ALL_TEN),  # the window is only a view
        (RequestCompaction(SYS), ALL_TEN),  # history kept whole, only the view shrinks
        (RetainedReduction(SYS), ["u3", "a3", "u4", "a4", "u5", "a5"]),  # the snapshot holds the reduced list
    ],
    ids=["full-history", "last-turns", "request-compaction", "retained-reduction"],
)
def test_retained_state_after_the_last_turn(policy, retained: list[str]) -> None:
    assert replay(policy, FIVE)[-1][1] == retained


def test_the_two_compaction_variants_differ_by_one_turn_in_view() -> None:
    request = replay(RequestCompaction(SYS), FIVE)
    retained = replay(RetainedReduction(SYS), FIVE)
    for n in (4, 5):
        assert request[n - 1][0].count("a" + str(n - 3)) == 0
        assert sum(c.startswith("u") for c in retained[n - 1][0]) == 4
        assert sum(c.startswith("u") for c in request[n - 1][0]) == 3


def test_retained_reduction_says_what_it_dropped() -> None:
    policy = RetainedReduction(SYS)
    replay(policy, FIVE[:3])
    turn = user(4, "u4")
    policy.view(turn)
    outcome = policy.after_answer(turn, "a4", FakeAux())
    assert outcome.dropped == [
        Drop("u1", "dropped from the retained history after turn 4", "reduction"),
        Drop("a1", "dropped from the retained history after turn 4", "reduction"),
    ]


def test_sessions_never_share_history() -> None:
    policy = FullHistory(SYS)
    for turn in (user(1, "s1", "support"), user(2, "l1", "logs"), user(3, "s2", "support")):
        view = policy.view(turn)
        policy.after_answer(turn, f"a{turn.number}", FakeAux())
    assert contents(view) == ["SYS", "s1", "a1", "s2"]


def test_forget_starts_fresh_histories_in_every_session() -> None:
    policy = FullHistory(SYS)
    for turn in (user(1, "s1", "support"), user(2, "l1", "logs")):
        policy.view(turn)
        policy.after_answer(turn, "a", FakeAux())
    outcome = policy.forget(Forget(number=3, line=3, key="module"))
    assert policy.retained() == []
    assert {(d.why, d.cause) for d in outcome.dropped} == {
        ("history cleared by forget module at turn 3" + FORGET_RULE, "forget")
    }
    assert contents(policy.view(user(4, "s2", "support"))) == ["SYS", "s2"]


def test_no_system_message_when_the_chronology_has_none() -> None:
    assert contents(FullHistory(None).view(user(1, "hi"))) == ["hi"]


# --- summary ---------------------------------------------------------------------------------


def test_summary_view_is_system_summary_and_current_message() -> None:
    policy = Summary(SYS)
    seen = replay(policy, ["u1", "u2"], FakeAux(["first", "second"]))
    assert seen[0] == (["SYS", "u1"], ["first"])
    assert seen[1] == (["SYS", f"{SUMMARY_HEADER}\nfirst", "u2"], ["second"])


def test_summary_message_is_marked_unverified() -> None:
    policy = Summary(SYS)
    replay(policy, ["u1"], FakeAux(["s"]))
    summary = policy.view(user(2, "u2"))[1]
    assert summary.origin == "summary" and "unverified" in summary.content


@pytest.mark.parametrize("text", ["", "   \n"])
def test_an_empty_summary_stops_the_policy(text: str) -> None:
    policy = Summary(SYS)
    turn = user(1, "u1")
    policy.view(turn)
    assert policy.after_answer(turn, "a1", FakeAux([text])) == Outcome(stop="summary_empty")
    assert policy.retained() == []


def test_a_summary_over_the_cap_stops_the_policy_with_its_length_and_is_not_kept() -> None:
    policy = Summary(SYS)
    replay(policy, ["u1"], FakeAux(["kept"]))
    turn = user(2, "u2")
    policy.view(turn)
    outcome = policy.after_answer(turn, "a2", FakeAux(["x" * 701]))
    assert outcome.stop == "summary_too_long:701"
    assert contents(policy.retained()) == ["kept"]  # no truncation, no replacement


def test_a_summary_at_exactly_the_cap_is_accepted() -> None:
    policy = Summary(SYS, max_chars=10)
    replay(policy, ["u1"], FakeAux(["x" * 10]))
    assert contents(policy.retained()) == ["x" * 10]


def test_each_session_has_its_own_summary() -> None:
    policy = Summary(SYS)
    aux = FakeAux(["support summary", "logs summary"])
    for turn in (user(1, "s1", "support"), user(2, "l1", "logs")):
        policy.view(turn)
        policy.after_answer(turn, "a", aux)
    assert contents(policy.view(user(3, "s2", "support")))[1].endswith("support summary")


# --- bounded facts -----------------------------------------------------------------------------


def test_message_mode_prepends_the_block_to_the_user_message() -> None:
    policy = BoundedFacts(SYS, mode="message")
    replay(policy, ["module=Billing"])
    view = policy.view(user(2, "Which module?"))
    assert [m.origin for m in view] == ["system", "facts+current"]
    assert view[1].content.startswith("Remembered facts") and view[1].content.endswith("\n\nWhich module?")


def test_provider_mode_sends_the_block_as_a_separate_message() -> None:
    policy = BoundedFacts(SYS, mode="provider")
    replay(policy, ["module=Billing"])
    view = policy.view(user(2, "Which module?"))
    assert [m.origin for m in view] == ["system", "facts", "current"]
    assert view[2].content == "Which module?"


@pytest.mark.parametrize("mode", ["message", "provider"])
def test_the_writer_reads_only_the_users_original_text(mode: str) -> None:
    policy, aux = BoundedFacts(SYS, mode=mode), FakeAux()
    replay(policy, ["module=Billing", "database=SQL Server 2022"], aux)
    assert aux.writer_inputs == ["module=Billing", "database=SQL Server 2022"]


def test_each_extra_call_names_its_role_and_the_writer_its_schema() -> None:
    summary, facts = FakeAux(["s1"]), FakeAux()
    replay(Summary(SYS), ["u1"], summary)
    replay(BoundedFacts(SYS), ["module=Billing"], facts)
    assert summary.calls == [("summarizer", None)] and facts.calls == [("writer", FACTS_SCHEMA)]


def test_no_history_and_no_block_before_any_fact() -> None:
    policy = BoundedFacts(SYS)
    assert replay(policy, ["hello", "again"])[1] == (["SYS", "again"], [])


def test_a_failed_writer_call_is_a_rejection_that_keeps_the_facts() -> None:
    policy = BoundedFacts(SYS)
    replay(policy, ["module=Billing"])
    turn = user(2, "module=Reporting")
    policy.view(turn)
    outcome = policy.after_answer(turn, "a2", FakeAux(writer_fails=True))
    assert outcome.facts["admission"]["status"] == "rejected"
    assert "no fallback" in outcome.facts["admission"]["reason"]
    assert [f["value"] for f in outcome.facts["facts"]] == ["Billing"]


def test_unusable_writer_output_is_a_rejection() -> None:
    class Garbage(FakeAux):
        def call(self, role: str, messages: Sequence[Message], schema: Any = None, reference: Any = None) -> str:
            return "module is Billing"

    policy = BoundedFacts(SYS)
    turn = user(1, "module=Billing")
    policy.view(turn)
    outcome = policy.after_answer(turn, "a", Garbage())
    assert outcome.facts["admission"]["status"] == "rejected" and policy.retained() == []


def test_sessions_share_one_store() -> None:
    policy = BoundedFacts(SYS)
    turn = user(1, "module=Billing", "support")
    policy.view(turn)
    policy.after_answer(turn, "a", FakeAux())
    assert "module=Billing" in policy.view(user(2, "Where are the logs?", "logs"))[1].content


def test_eviction_is_reported_with_the_keys_that_caused_it() -> None:
    policy = BoundedFacts(SYS)
    texts = ["constraint=never restart", "module=A; database=B", "version=1; customer=C", "priority=high"]
    replay(policy, texts[:3])
    turn = user(4, texts[3])
    policy.view(turn)
    outcome = policy.after_answer(turn, "a", FakeAux())
    assert (
        Drop(
            'constraint=never restart (user wrote "constraint=never restart" at turn 1)',
            "evicted from the fact store by new key priority at turn 4",
            "eviction",
        )
        in outcome.dropped
    )


def test_forget_one_key_keeps_the_others_and_records_it() -> None:
    policy = BoundedFacts(SYS)
    replay(policy, ["module=Billing; database=SQL Server 2022"])
    outcome = policy.forget(Forget(number=2, line=2, key="module"))
    assert [f["key"] for f in outcome.facts["facts"]] == ["database"]
    assert outcome.facts["forget"]["key"] == "module"
    assert json.dumps(outcome.facts)  # serialisable as a facts.jsonl record


class ReferenceWriter:
    """The seam as the runner offers the writer role under the reference model: the policy's
    own deterministic reply to a request of `turn`; keeps each request."""

    def __init__(self) -> None:
        self.turn: UserTurn | None = None
        self.requests: list[CallRequest] = []

    def call(self, role: str, messages: Sequence[Message], schema: Any = None, reference: Any = None) -> str:
        assert self.turn is not None and reference is not None
        self.requests.append(CallRequest(role, tuple(messages), self.turn, schema))
        return reference(self.requests[-1])


@pytest.mark.parametrize("make", [lambda: BoundedFacts(SYS), lambda: FactsWindow(SYS)], ids=["bounded", "window"])
def test_the_fact_store_keeps_the_declarations_of_the_chronologys_keys(make) -> None:
    """Issue 24, item 9: the writer was told the seed's ten keys and admission allowed no other."""
    policy, aux = make(), ReferenceWriter()
    for number, text in enumerate(["allergy=penicillin; module=Billing", "allergy=sulfonamides"], start=1):
        aux.turn = turn = replace(user(number, text), keys=("allergy", "medication"))
        policy.view(turn)
        outcome = policy.after_answer(turn, "a", aux)
    assert "Allowed keys: allergy, medication. Reply with JSON only" in aux.requests[0].messages[0].content
    assert [(f["key"], f["value"]) for f in outcome.facts["facts"]] == [("allergy", "sulfonamides")]
    assert [f["value"] for f in outcome.facts["admission"]["replaced"]] == ["penicillin"]


# --- registry ----------------------------------------------------------------------------------


def test_every_builtin_policy_is_installed_through_entry_points() -> None:
    registry = PolicyRegistry.installed()
    assert {
        "full-history",
        "last-turns",
        "summary",
        "bounded-facts",
        "request-compaction",
        "retained-reduction",
    } <= set(registry.factories)
    assert registry.broken == {}


def test_default_specs_run_bounded_facts_in_both_modes_in_declared_order() -> None:
    labels = [s.label for s in PolicyRegistry.installed().default_specs()]
    assert labels[: len(COMPARISON)] == COMPARISON  # plug-ins installed on the machine follow


@pytest.mark.parametrize("mode", ["message", "provider"])
def test_provenance_off_renders_the_same_facts_without_their_quotations(mode: str) -> None:
    texts = ["module=Billing; database=SQL Server 2022", "Can I restart?"]
    with_provenance = replay(BoundedFacts(SYS, mode=mode), texts)[1][0]
    without = replay(BoundedFacts(SYS, mode=mode, provenance="off"), texts)[1][0]
    assert "provenance: user wrote" in "\n".join(with_provenance) and "provenance" not in "\n".join(without)
    assert [line for m in without for line in m.splitlines() if "=" in line] == [
        "database=SQL Server 2022",
        "module=Billing",
    ]  # store order: oldest turn, then key
    assert sum(map(len, without)) < sum(map(len, with_provenance))


def test_the_summarizer_reads_a_turns_tool_steps_as_the_assistants_side() -> None:
    class Recording(FakeAux):
        def call(self, role, messages, schema=None, reference=None):  # type: ignore[no-untyped-def]
            self.body = messages[-1].content
            return super().call(role, messages, schema, reference)

    step = Step((ToolCall("call_1", "read_file", '{"path": "a.py"}'),), (ToolResult("call_1", "print(1)"),))
    aux = Recording(["The user asked about a.py."])
    outcome = Summary(SYS).after_answer(user(1, "Read a.py.", steps=(step,)), "It prints 1.", aux)
    assert aux.body.endswith(
        'Latest exchange:\nUser: Read a.py.\nAssistant: read_file({"path": "a.py"})\n[call_1] print(1)\nIt prints 1.'
    )
    assert any("print(1)" in drop.text for drop in outcome.dropped)  # the tool's output is not kept
