"""`reference:lossy` as a specification: the reference reader, degraded on purpose by seeded
draws that depend on what is decided alone, each degradation recorded with the reply."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from harness.base.capabilities import Capabilities
from harness.base.errors import InputError
from harness.base.messages import Message
from harness.chronology import UserTurn, WriterCandidate
from harness.chronology.writer import parse_writer_output
from harness.models import CallRequest, Completion
from harness.models.catalog import check_model_name, model_factory, model_roles
from harness.models.lossy import PARAMS, LossyModel, LossySpec, chance, parse_lossy
from harness.models.options import ModelOptions
from harness.models.reference import ReferenceModel
from harness.policy.facts import FactStore
from policies.bounded_facts import BoundedFacts
from policies.summary import Summary

RULE = "constraint=never restart production during business hours"
ASK_RESTART = "Can I restart production now to apply the patch?"
YES = "Yes — nothing in my context forbids it."


def turn(number: int, user: str = "Thanks.", **scripted: Any) -> UserTurn:
    return UserTurn(number=number, line=number, user=user, session="main", **scripted)


def model(spec: str = "reference:lossy", run_seed: int = 0) -> LossyModel:
    return LossyModel(spec, parse_lossy(spec), run_seed)


def said(number: int, text: str, role: str = "user") -> Message:
    return Message(role, text, origin="history", turn=number, session="main")  # type: ignore[arg-type]


def current(number: int, text: str) -> Message:
    return Message("user", text, origin="current", turn=number, session="main")


def answer_request(now: int, *history: Message, draw: int = 0) -> CallRequest:
    question = history[-1].content
    return CallRequest("answer", (Message("system", "SYS", origin="system"), *history), turn(now, question), draw=draw)


# --- parameters ----------------------------------------------------------------------------


def test_the_name_alone_means_the_documented_defaults_and_the_runs_seed() -> None:
    assert parse_lossy("reference:lossy") == LossySpec(summary_drop=0.3, writer_miss=0.2, recency=6, stale=0.1)
    assert {p.name: p.default for p in PARAMS if p.name != "seed"} == {
        "summary_drop": 0.3,
        "writer_miss": 0.2,
        "recency": 6,
        "stale": 0.1,
    }
    assert model("reference:lossy", run_seed=7).seed == 7


def test_named_parameters_turn_on_only_those_degradations() -> None:
    assert parse_lossy("reference:lossy:recency=4,seed=1") == LossySpec(recency=4, seed=1)
    assert parse_lossy("reference:lossy: summary_drop = 1 ") == LossySpec(summary_drop=1.0)
    assert model("reference:lossy:stale=0.5,seed=3", run_seed=9).seed == 3


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("reference:lossy:recency=x", "--model reference:lossy:recency=x: recency: 'x' is not a whole number"),
        ("reference:lossy:recency=-1", "recency: must be at least 0"),
        ("reference:lossy:stale=1.5", "stale: must be at most 1.0"),
        ("reference:lossy:summary_drop=nan", "summary_drop: must be a finite number"),
        ("reference:lossy:sumary_drop=0.2", "unknown parameter 'sumary_drop=0.2'; reference:lossy takes: summary_drop"),
        ("reference:lossy:recency", "unknown parameter 'recency'"),
        ("reference:lossy:seed=1,seed=2", "seed is given twice: give it once"),
        ("reference:lossy:", "give parameters after `reference:lossy:`"),
        ("reference:lossy:,", "give parameters after `reference:lossy:`"),
    ],
)
def test_a_bad_parameter_is_refused_in_one_message_naming_it(name: str, message: str) -> None:
    with pytest.raises(InputError) as error:
        check_model_name(name)
    assert message in str(error.value)
    assert error.value.exit_code == 2
    assert "\n" not in str(error.value)


def test_a_role_mapped_to_the_lossy_model_is_checked_the_same_way() -> None:
    assert model_roles(("summarizer=reference:lossy:summary_drop=1",), {}) == {
        "summarizer": "reference:lossy:summary_drop=1"
    }
    with pytest.raises(
        InputError, match=r"--model-role writer=reference:lossy:writer_miss=2: writer_miss: must be at most 1.0"
    ):
        model_roles(("writer=reference:lossy:writer_miss=2",), {})


def test_the_model_factory_opens_the_lossy_model_with_the_runs_seed() -> None:
    opened = model_factory(ModelOptions(), seed=5)("reference:lossy:recency=2", None)  # type: ignore[arg-type]
    assert isinstance(opened, LossyModel)
    assert opened.describe() == {
        "name": "reference:lossy:recency=2",
        "model": "reference:lossy",
        "parameters": {"summary_drop": 0.0, "writer_miss": 0.0, "recency": 2, "stale": 0.0, "seed": 5},
        "seed_from": "--seed",
    }
    # the reference reader degraded: the report says what it cannot answer, and it judges nothing
    assert opened.capabilities == Capabilities(degrades_on_purpose=True, can_judge=False, reader="literal")


# --- draws ---------------------------------------------------------------------------------


def test_a_draw_depends_on_what_is_decided_alone_and_repetition_k_uses_seed_plus_k() -> None:
    args = ("summarizer", 4, "prohibition", "never restart production", 1)
    first = [chance(1, 0, *args) for _ in range(3)]
    assert first == [first[0]] * 3
    assert chance(1, 1, *args) == chance(2, 0, *args)  # the draw of repetition 2 is seed + 1
    assert chance(1, 1, *args) != chance(1, 0, *args)
    assert 0 <= first[0] < 1


def test_the_same_requests_get_the_same_replies_in_any_order() -> None:
    requests = [summary_request(n, f"module=M{n}; Never restart host{n}.") for n in range(1, 30)]
    forward = [model("reference:lossy:summary_drop=0.5,seed=2").complete(r) for r in requests]
    one = model("reference:lossy:summary_drop=0.5,seed=2")
    backward = [one.complete(r) for r in reversed(requests)][::-1]
    assert forward == backward
    assert 0 < sum(bool(c.degraded) for c in forward) < len(forward)  # some drawn, some not


def test_another_repetition_draws_anew() -> None:
    requests = [summary_request(n, f"module=M{n}; Never restart host{n}.") for n in range(1, 30)]
    lossy = model("reference:lossy:summary_drop=0.5,seed=2")
    first = [lossy.complete(r).degraded for r in requests]
    second = [
        lossy.complete(CallRequest(r.kind, r.messages, r.turn, draw=1, reference=r.reference)).degraded
        for r in requests
    ]
    assert first != second


# --- summarizer ----------------------------------------------------------------------------


def summary_request(number: int, user: str, previous: str | None = None, **scripted: Any) -> CallRequest:
    """The summarizer call the summary policy makes after one exchange."""
    calls: list[CallRequest] = []

    class Aux:
        def call(self, role, messages, schema=None, reference=None) -> str:  # noqa: ANN001
            calls.append(CallRequest(role, tuple(messages), this, schema, reference))
            return ReferenceModel().complete(calls[-1]).text

    policy, this = Summary(None), turn(number, user, **scripted)
    if previous is not None:
        policy.summaries["main"] = previous
    policy.after_answer(this, "Noted.", Aux())
    return calls[-1]


def test_summary_drop_1_drops_every_declaration_and_prohibition_clause_and_records_each() -> None:
    request = summary_request(5, "Never restart production; it is fragile.", previous="module=Billing\ndatabase=Oracle")
    assert ReferenceModel().complete(request).text == (
        "module=Billing\ndatabase=Oracle\nNever restart production; it is fragile."
    )
    completion = model("reference:lossy:summary_drop=1").complete(request)
    assert completion.text == "it is fragile."
    assert completion.degraded == (
        {"kind": "summary_drop", "what": "declaration", "key": "module", "text": "module=Billing", "from_turn": None},
        {
            "kind": "summary_drop",
            "what": "declaration",
            "key": "database",
            "text": "database=Oracle",
            "from_turn": None,
        },
        {
            "kind": "summary_drop",
            "what": "prohibition",
            "key": None,
            "text": "Never restart production",
            "from_turn": None,
        },
    )


def test_a_declared_prohibition_is_dropped_as_a_prohibition_naming_its_key() -> None:
    completion = model("reference:lossy:summary_drop=1").complete(summary_request(2, RULE))
    assert completion.text == ""
    assert completion.degraded == (
        {"kind": "summary_drop", "what": "prohibition", "key": "constraint", "text": RULE, "from_turn": None},
    )


def test_summary_drop_0_and_unnamed_degradations_leave_the_reference_reply() -> None:
    request = summary_request(5, "Never restart production; it is fragile.", previous="module=Billing")
    for spec in ("reference:lossy:summary_drop=0", "reference:lossy:recency=1,stale=1,writer_miss=1"):
        completion = model(spec).complete(request)
        assert completion.text == ReferenceModel().complete(request).text
        assert completion.degraded == ()


def test_a_scripted_summary_is_the_chronologys_and_never_degraded() -> None:
    request = summary_request(2, RULE, summary="Restarts were discussed; never restart on Fridays.")
    completion = model("reference:lossy:summary_drop=1").complete(request)
    assert completion.text == "Restarts were discussed; never restart on Fridays."
    assert completion.scripted and completion.degraded == ()


# --- writer --------------------------------------------------------------------------------


def writer_request(number: int, user: str, **scripted: Any) -> CallRequest:
    """The writer call bounded-facts makes after one exchange."""
    calls: list[CallRequest] = []

    class Aux:
        def call(self, role, messages, schema=None, reference=None) -> str:  # noqa: ANN001
            calls.append(CallRequest(role, tuple(messages), this, schema, reference))
            return ReferenceModel().complete(calls[-1]).text

    policy, this = BoundedFacts(None), turn(number, user, **scripted)
    policy.view(this)
    policy.after_answer(this, "Noted.", Aux())
    return calls[-1]


def test_writer_miss_1_omits_every_declaration_so_the_store_admits_nothing() -> None:
    request = writer_request(3, "module=Billing; database=SQL Server 2022")
    completion = model("reference:lossy:writer_miss=1").complete(request)
    assert json.loads(completion.text) == {"facts": []}
    assert completion.degraded == (
        {"kind": "writer_miss", "what": "declaration", "key": "module", "text": "module=Billing", "from_turn": 3},
        {
            "kind": "writer_miss",
            "what": "declaration",
            "key": "database",
            "text": "database=SQL Server 2022",
            "from_turn": 3,
        },
    )
    store = FactStore()
    ticket = store.begin_turn(3, request.turn.user)
    store.admit(ticket, parse_writer_output(completion.text), datetime.now(UTC))
    assert store.facts == ()


def test_a_scripted_writer_reply_is_never_degraded() -> None:
    scripted = (WriterCandidate("module", "Billing", "module=Billing"),)
    completion = model("reference:lossy:writer_miss=1").complete(writer_request(3, "module=Billing", writer=scripted))
    assert [c.key for c in parse_writer_output(completion.text)] == ["module"]
    assert completion.degraded == ()


def test_a_writer_reply_holding_a_number_beyond_the_json_bounds_is_left_as_it_is() -> None:
    """A plug-in's stand-in may send anything: Python's plain ValueError escaped before."""
    reply = '{"facts": [], "n": ' + "9" * 5_000 + "}"
    lossy = model("reference:lossy:writer_miss=1")
    assert lossy.writer(writer_request(3, "module=Billing"), reply) == (reply, [])


def test_another_roles_call_gets_the_reference_reply_unchanged() -> None:
    request = CallRequest("indexer", (Message("user", RULE),), turn(2), reference=lambda _r: RULE)
    assert model("reference:lossy:summary_drop=1,writer_miss=1").complete(request) == Completion(RULE, degraded=())


# --- answer --------------------------------------------------------------------------------


def test_recency_ignores_a_prohibition_stated_more_turns_ago_and_names_it() -> None:
    request = answer_request(7, said(1, RULE), said(1, "Understood.", "assistant"), current(7, ASK_RESTART))
    assert ReferenceModel().complete(request).text == f'No — "{RULE}"'
    completion = model("reference:lossy:recency=4").complete(request)
    assert completion.text == YES
    assert completion.degraded == (
        {"kind": "recency", "what": "prohibition", "key": "constraint", "text": RULE, "from_turn": 1},
    )
    kept = model("reference:lossy:recency=6").complete(request)  # turn 1 is 6 turns before 7: read
    assert (kept.text, kept.degraded) == (f'No — "{RULE}"', ())


def test_recency_reads_messages_without_a_turn_and_the_current_message() -> None:
    summary = Message("system", f"Summary:\n{RULE}", origin="summary", session="main")
    request = answer_request(9, summary, current(9, ASK_RESTART))
    completion = model("reference:lossy:recency=0").complete(request)
    assert (completion.text, completion.degraded) == (f'No — "{RULE}"', ())


def test_recency_records_only_what_ignoring_changed() -> None:
    restated = answer_request(8, said(1, RULE), said(6, RULE), current(8, ASK_RESTART))
    completion = model("reference:lossy:recency=4").complete(restated)
    assert completion.text == f'No — "{RULE}"'
    assert completion.degraded == ()  # the quote is the same clause, read at turn 6
    quoted = answer_request(8, said(1, RULE), said(6, f'No — "{RULE}"', "assistant"), current(8, ASK_RESTART))
    completion = model("reference:lossy:recency=4").complete(quoted)
    assert completion.text == f'No — "No — "{RULE}""'  # still refused, by its own earlier quote
    assert completion.degraded == ()


def test_recency_loses_an_old_declaration_and_names_its_turn() -> None:
    request = answer_request(
        9,
        said(1, "database=PostgreSQL; module=Billing"),
        said(7, "module=Reporting"),
        current(9, "Which database and module?"),
    )
    completion = model("reference:lossy:recency=3").complete(request)
    assert completion.text == "no database in my context; module=Reporting"
    assert completion.degraded == (
        {"kind": "recency", "what": "declaration", "key": "database", "text": "database=PostgreSQL", "from_turn": 1},
    )


def test_stale_answers_a_corrected_keys_previous_value_and_names_both() -> None:
    request = answer_request(
        5,
        said(1, "database=PostgreSQL"),
        said(2, "database=Oracle"),
        said(3, "database=SQL Server 2022"),
        current(5, "Which database are we on?"),
    )
    completion = model("reference:lossy:stale=1").complete(request)
    assert completion.text == "database=Oracle"
    assert completion.degraded == (
        {
            "kind": "stale",
            "what": "declaration",
            "key": "database",
            "text": "database=Oracle",
            "from_turn": 2,
            "replaced": "database=SQL Server 2022",
        },
    )


def test_stale_needs_a_correction_within_what_the_answer_reads() -> None:
    once = answer_request(5, said(1, "database=PostgreSQL"), current(5, "Which database are we on?"))
    assert model("reference:lossy:stale=1").complete(once).degraded == ()
    corrected_long_ago = answer_request(
        9, said(1, "database=PostgreSQL"), said(7, "database=Oracle"), current(9, "Which database are we on?")
    )
    completion = model("reference:lossy:stale=1,recency=3").complete(corrected_long_ago)
    assert (completion.text, completion.degraded) == ("database=Oracle", ())


def test_without_degradations_the_answer_is_the_reference_answer() -> None:
    request = answer_request(7, said(1, RULE), said(2, "database=PostgreSQL"), current(7, "Which database?"))
    completion = model("reference:lossy:seed=4").complete(request)
    assert completion.text == ReferenceModel().complete(request).text
    assert completion.degraded == ()
    assert ReferenceModel().complete(request).degraded is None  # every other model: nothing degraded on purpose


@pytest.mark.parametrize("reply", ["not json", '{"facts": "none"}', "[" * 100_000, '{"facts": [7, {"key": "module"}]}'])
def test_a_writer_reply_of_another_shape_is_left_as_it_is(reply: str) -> None:
    request = CallRequest("writer", (Message("user", "module=Billing"),), turn(3), reference=lambda _r: reply)
    completion = model("reference:lossy:writer_miss=1").complete(request)
    assert (completion.text, completion.degraded) == (reply, ())  # nothing declared: nothing to omit
