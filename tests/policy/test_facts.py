"""The controlled fact memory, rule by rule, then its invariants under random operations."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.chronology import WriterCandidate
from harness.chronology.declarations import ALLOWED_KEYS, parse_declarations
from harness.chronology.writer import Candidate, parse_writer_output, reference_writer_output
from harness.policy.facts import MAX_FACTS, Admission, Fact, FactStore, Ticket

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
KEPT = "previous facts kept; no fallback applied"
SEED_1 = "module=Reporting; database=PostgreSQL"
SEED_2 = "module=Billing; database=SQL Server 2022"


def honest(text: str) -> list[Candidate]:
    """What the reference writer proposes for `text`, through its JSON reply."""
    return parse_writer_output(reference_writer_output(text, None))


HONEST = object()  # `turn`'s default: whatever the honest reference writer proposes


def turn(store: FactStore, number: int, text: str, candidates=HONEST, at: datetime = T0) -> Admission:
    """Begin turn `number` and admit `candidates` (default: the honest writer's)."""
    ticket = store.begin_turn(number, text)
    return store.admit(ticket, honest(text) if candidates is HONEST else candidates, at)


def state(store: FactStore) -> tuple:
    """Everything observable about a store, to compare before and after."""
    return store.facts, store.snapshot(), store.prompt_block(), store.epoch


def seeded() -> FactStore:
    """A store holding the seed's first two facts (turn 1)."""
    store = FactStore()
    assert turn(store, 1, SEED_1).status == "accepted"
    return store


def values(store: FactStore) -> dict[str, str]:
    """The stored facts as key -> value."""
    return {fact.key: fact.value for fact in store.facts}


# --- parse_declarations -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("module=Billing", {"module": "Billing"}),
        (
            "module=Reporting; database=PostgreSQL",
            {"module": "Reporting", "database": "PostgreSQL"},
        ),
        (
            "module=Billing\ndatabase=SQL Server 2022",
            {"module": "Billing", "database": "SQL Server 2022"},
        ),
        ("module=Billing\r\ndatabase=MySQL", {"module": "Billing", "database": "MySQL"}),
        ("module=Billing\rdatabase=MySQL", {"module": "Billing", "database": "MySQL"}),
        (
            "  module =  Billing  ;database=\tSQL Server 2022 ",
            {"module": "Billing", "database": "SQL Server 2022"},
        ),
        ("module=Reporting; module=Billing", {"module": "Billing"}),
        ("database=sql server", {"database": "sql server"}),  # kept as written, no case folding
        ("log=level=debug", {"log": "level=debug"}),  # only the first '=' separates
        ("module=Billing; is that right?", {"module": "Billing"}),
        ("Where can I find logs?", {}),
        ("module=Billing?", {}),  # a question is never a declaration
        ("database=PostgreSQL or SQL Server ?  ", {}),
        ("Please note module=Billing", {}),  # prose around a declaration is not a declaration
        ("foo=bar", {}),
        ("Module=Billing", {}),  # keys are case-sensitive
        ("module=", {}),
        ("module=   ; database=", {}),
        ("=Billing", {}),
        ("mod ule=Billing", {}),
        ("", {}),
    ],
)
def test_parse_declarations_reads_only_explicit_key_value_segments(text, expected):
    assert {k: d.value for k, d in parse_declarations(text).items()} == expected


def test_declaration_evidence_is_the_stripped_segment_quoted_from_the_text():
    text = "hello;  database = SQL Server 2022 \nbye"
    declaration = parse_declarations(text)["database"]
    assert declaration.evidence == "database = SQL Server 2022"
    assert declaration.evidence in text


def test_last_declaration_of_a_repeated_key_wins_with_its_own_evidence():
    declaration = parse_declarations("module=Reporting\nmodule = Billing")["module"]
    assert (declaration.value, declaration.evidence) == ("Billing", "module = Billing")


def test_declarations_follow_the_order_of_each_keys_last_declaration():
    assert list(parse_declarations("database=a; module=b; database=c")) == ["module", "database"]


def test_every_allowed_key_can_be_declared():
    text = ";".join(f"{key}=v{i}" for i, key in enumerate(ALLOWED_KEYS))
    assert list(parse_declarations(text)) == list(ALLOWED_KEYS)


# --- rejections ---------------------------------------------------------------------------

C = Candidate
LONG_VALUE = "x" * 257
REJECTIONS = {
    "no facts list": (SEED_2, None, "writer returned no facts list"),
    "more than five": (
        SEED_2,
        [C("module", "Billing", "module=Billing")] * 6,
        "writer proposed 6 facts; at most 5",
    ),
    "unknown key": (
        "module=Billing",
        [C("foo", "Billing", "module=Billing")],
        "candidate 1: unknown key 'foo'",
    ),
    "missing key": (
        "module=Billing",
        [C(None, "Billing", "module=Billing")],
        "candidate 1: unknown key None",
    ),
    "duplicate": (
        "module=Billing",
        [C("module", "Billing", "module=Billing"), C("module", "Billing", "module=Billing")],
        "candidate 2: duplicate key 'module'",
    ),
    "missing value": (
        "module=Billing",
        [C("module", None, "module=Billing")],
        "candidate 1 (module): missing value",
    ),
    "blank value": (
        "module=Billing",
        [C("module", "  ", "module=Billing")],
        "candidate 1 (module): missing value",
    ),
    "value too long": (
        f"module={LONG_VALUE}",
        [C("module", LONG_VALUE, f"module={LONG_VALUE}")],
        "value has 257 characters; the limit is 256",
    ),
    "missing evidence": (
        "module=Billing",
        [C("module", "Billing", None)],
        "candidate 1 (module): missing evidence",
    ),
    "blank evidence": (
        "module=Billing",
        [C("module", "Billing", " \t")],
        "candidate 1 (module): missing evidence",
    ),
    "evidence too long": (
        "module=Billing",
        [C("module", "Billing", "Billing" * 74)],
        "evidence has 518 characters; the limit is 512",
    ),
    "evidence not quoted": (
        "module=Billing",
        [C("module", "Billing", "module = Billing")],
        "evidence is not quoted from the user message",
    ),
    "evidence differs in case": (
        "module=Billing",
        [C("module", "Billing", "Module=Billing")],
        "evidence is not quoted from the user message",
    ),
    "value not in evidence": (
        SEED_2,
        [
            C("module", "Billing", "database=SQL Server 2022"),
            C("database", "SQL Server 2022", "database=SQL Server 2022"),
        ],
        "candidate 1 (module): value 'Billing' is not quoted in its evidence",
    ),
    "wrong association": (
        "module=Billing",
        [C("database", "Billing", "module=Billing")],
        "wrong association: candidate 1 proposes database=Billing but the user declared module=Billing",
    ),
    "wrong value": (
        "module=Billing",
        [C("module", "Bill", "module=Billing")],
        "wrong association: candidate 1 proposes module=Bill but the user declared module=Billing",
    ),
    "count mismatch": (
        SEED_2 + "; version=12",
        honest(SEED_2),
        "count mismatch: 2 proposed, 3 declared",
    ),
    "nothing proposed": (SEED_2, [], "count mismatch: 0 proposed, 2 declared"),
    "question promoted": (
        "module=Billing?",
        [C("module", "Billing", "module=Billing")],
        "count mismatch: 1 proposed, 0 declared",
    ),
    "message too long": (
        "module=Billing; " + "x" * 4081,
        honest("module=Billing"),
        "user message has 4097 characters; the limit is 4096",
    ),
}


@pytest.mark.parametrize(("text", "candidates", "expected"), REJECTIONS.values(), ids=REJECTIONS.keys())
def test_an_invalid_batch_is_rejected_with_what_was_wrong(text, candidates, expected):
    admission = turn(seeded(), 2, text, candidates)
    assert admission.status == "rejected"
    assert expected in admission.reason


@pytest.mark.parametrize(("text", "candidates", "expected"), REJECTIONS.values(), ids=REJECTIONS.keys())
def test_a_rejection_keeps_the_store_byte_for_byte_and_says_no_fallback(text, candidates, expected):
    store = seeded()
    ticket = store.begin_turn(2, text)
    before = state(store)
    admission = store.admit(ticket, candidates, T0 + timedelta(hours=1))
    assert state(store) == before
    assert admission.reason.endswith(KEPT)
    assert (admission.evicted, admission.replaced) == ((), ())


def test_one_bad_candidate_rejects_the_whole_batch():
    store = seeded()
    candidates = honest(SEED_2)[:1] + [C("database", "SQL Server 2022", "database=sql server 2022")]
    assert turn(store, 2, SEED_2, candidates).status == "rejected"
    assert values(store) == {"module": "Reporting", "database": "PostgreSQL"}


def test_a_missing_candidate_item_is_rejected():
    assert "candidate 1 is missing" in turn(seeded(), 2, "module=Billing", [None]).reason


@pytest.mark.parametrize(
    "text",
    [
        "module=" + "v" * 256,  # value at its limit
        "module=Billing; " + "x" * 4080,  # message at its limit (4096)
        "symptom" + " " * 248 + "=" + "v" * 256,  # evidence at its limit (512)
    ],
)
def test_limits_are_inclusive(text):
    assert len(text) <= 4096
    assert turn(FactStore(), 1, text).status == "accepted"


def test_the_message_limit_applies_even_when_nothing_is_declared():
    admission = turn(FactStore(), 1, "x" * 4097, [])
    assert admission.status == "rejected"
    assert "user message has 4097 characters" in admission.reason


# --- stale tickets ------------------------------------------------------------------------


def test_a_ticket_from_an_older_turn_is_stale():
    store = seeded()
    old = store.begin_turn(2, SEED_2)
    store.begin_turn(3, "Where can I find logs?")
    before = state(store)
    admission = store.admit(old, honest(SEED_2), T0)
    assert admission.status == "rejected"
    assert admission.reason.startswith("stale update:")
    assert admission.reason.endswith(KEPT)
    assert state(store) == before


@pytest.mark.parametrize("key", ["module", "version", None])
def test_a_ticket_taken_before_a_forget_is_stale(key):
    store = seeded()
    ticket = store.begin_turn(2, SEED_2)
    store.forget(key)
    before = state(store)
    admission = store.admit(ticket, honest(SEED_2), T0)
    assert admission.reason.startswith("stale update:")
    assert state(store) == before


def test_a_ticket_with_another_text_than_its_turn_is_stale():
    store = FactStore()
    store.begin_turn(1, "module=Billing")
    forged = Ticket(store.epoch, 1, "module=Reporting")
    assert store.admit(forged, honest("module=Reporting"), T0).reason.startswith("stale update:")


def test_a_ticket_with_another_key_set_than_its_turn_is_stale():
    store = FactStore()
    store.begin_turn(1, "allergy=latex")
    forged = Ticket(store.epoch, 1, "allergy=latex", MEDICAL)
    admission = store.admit(forged, [Candidate("allergy", "latex", "allergy=latex")], T0)
    assert admission.reason.startswith("stale update: the ticket's keys are not those turn 1 began with")


def test_a_ticket_before_any_turn_is_stale():
    ticket = Ticket(0, 1, "module=Billing")
    assert FactStore().admit(ticket, honest("module=Billing"), T0).reason.startswith("stale update:")


@pytest.mark.parametrize("number", [2, 1])
def test_turn_numbers_must_increase(number):
    store = FactStore()
    store.begin_turn(2, "module=Billing")
    with pytest.raises(ValueError, match="turn numbers must increase"):
        store.begin_turn(number, "module=Billing")


# --- the chronology's key set ------------------------------------------------------------

MEDICAL = ("allergy", "medication")


def test_the_allowed_keys_are_the_key_set_the_turn_began_with():
    """Issue 24, item 9: only the seed's ten keys could ever become facts."""
    store, text = FactStore(), "allergy=penicillin; medication=amoxicillin 500 mg"
    candidates = parse_writer_output(reference_writer_output(text, None, MEDICAL))
    admission = store.admit(store.begin_turn(1, text, MEDICAL), candidates, T0)
    assert admission.status == "accepted"
    assert values(store) == {"allergy": "penicillin", "medication": "amoxicillin 500 mg"}


def test_a_key_outside_the_turns_key_set_is_refused_naming_the_allowed_keys():
    store, text = FactStore(), "module=Billing; allergy=latex"
    candidates = [Candidate("module", "Billing", "module=Billing"), Candidate("allergy", "latex", "allergy=latex")]
    admission = store.admit(store.begin_turn(1, text, MEDICAL), candidates, T0)
    assert admission.status == "rejected"
    assert admission.reason.startswith("candidate 1: unknown key 'module' (allowed: allergy, medication)")


def test_under_another_key_set_a_seed_key_declares_nothing_to_admit():
    store = FactStore()
    admission = store.admit(store.begin_turn(1, "module=Billing", MEDICAL), [], T0)
    assert admission.status == "none"


@given(
    st.lists(st.from_regex(r"[a-z][a-z_-]{0,8}", fullmatch=True), min_size=1, max_size=5, unique=True),
    st.lists(st.tuples(st.integers(0, 4), st.from_regex(r"[A-Za-z0-9 .]{1,12}", fullmatch=True)), max_size=5),
)
def test_the_honest_writer_is_admitted_under_any_key_set(keys, pairs):
    text = "; ".join(f"{keys[i % len(keys)]}={value}" for i, value in pairs)
    store = FactStore()
    candidates = parse_writer_output(reference_writer_output(text, None, keys))
    admission = store.admit(store.begin_turn(1, text, keys), candidates, T0)
    declared = parse_declarations(text, keys)
    assert admission.status == ("accepted" if declared else "none")
    assert values(store) == {key: d.value for key, d in declared.items()}


# --- acceptance, corrections, eviction ----------------------------------------------------


def test_nothing_declared_and_nothing_proposed_is_status_none():
    store = seeded()
    before = state(store)
    admission = turn(store, 2, "Where can I find logs?")
    assert (admission.status, admission.evicted, admission.replaced) == ("none", (), ())
    assert state(store) == before


def test_an_accepted_fact_carries_its_provenance():
    store = FactStore()
    at = datetime(2024, 5, 1, 14, 0, tzinfo=timezone(timedelta(hours=2)))
    assert turn(store, 3, "hi; database = SQL Server 2022", at=at).status == "accepted"
    assert store.facts == (Fact("database", "SQL Server 2022", "database = SQL Server 2022", 3, T0),)
    assert store.facts[0].recorded_at.tzinfo == UTC


def test_a_correction_replaces_the_key_and_its_provenance():
    store = seeded()
    old = store.facts
    admission = turn(store, 2, SEED_2, at=T0 + timedelta(minutes=1))
    assert admission.status == "accepted"
    assert set(admission.replaced) == set(old)
    assert [(f.key, f.value, f.evidence, f.turn) for f in store.facts] == [
        ("database", "SQL Server 2022", "database=SQL Server 2022", 2),
        ("module", "Billing", "module=Billing", 2),
    ]


def test_a_repeated_declaration_in_a_later_turn_moves_the_provenance():
    store = seeded()
    admission = turn(store, 4, "module=Reporting")
    assert [f.key for f in admission.replaced] == ["module"]
    assert {f.key: f.turn for f in store.facts} == {"database": 1, "module": 4}


def test_readmitting_the_same_ticket_replaces_nothing():
    store = FactStore()
    ticket = store.begin_turn(1, SEED_1)
    store.admit(ticket, honest(SEED_1), T0)
    assert store.admit(ticket, honest(SEED_1), T0).replaced == ()


def five_facts_by_turn() -> FactStore:
    """Five facts, one per turn 1..5, in anti-alphabetical key order so turn order decides."""
    store = FactStore()
    for number, key in enumerate(["version", "symptom", "product", "module", "log"], 1):
        turn(store, number, f"{key}=v{number}")
    return store


def test_a_new_key_beyond_five_evicts_the_oldest_turn():
    store = five_facts_by_turn()
    admission = turn(store, 6, "customer=Acme")
    assert [(f.key, f.turn) for f in admission.evicted] == [("version", 1)]
    assert [f.key for f in store.facts] == ["symptom", "product", "module", "log", "customer"]


def test_eviction_ties_on_the_oldest_turn_go_to_the_ordinally_smaller_key():
    store = FactStore()
    turn(store, 1, "version=12; customer=Acme")
    for number, key in [(2, "module"), (3, "log"), (4, "product")]:
        turn(store, number, f"{key}=x")
    assert [f.key for f in turn(store, 5, "symptom=slow").evicted] == ["customer"]
    assert [f.key for f in turn(store, 6, "priority=high").evicted] == ["version"]


def test_a_correction_of_a_stored_key_evicts_nothing():
    store = five_facts_by_turn()
    admission = turn(store, 6, "version=v9")
    assert admission.evicted == ()
    assert len(store.facts) == 5


def test_a_batch_of_new_keys_evicts_every_older_fact_it_needs_to():
    store = five_facts_by_turn()
    admission = turn(store, 6, "customer=a; database=b; environment=c")
    assert [f.key for f in admission.evicted] == ["version", "symptom", "product"]
    assert "evicted version=v1 (turn 1)" in admission.reason


def test_facts_are_ordered_by_turn_then_ordinal_key():
    store = FactStore()
    turn(store, 1, "version=1; customer=2")
    turn(store, 2, "module=3; database=4")
    assert [f.key for f in store.facts] == ["customer", "version", "database", "module"]


# --- forget -------------------------------------------------------------------------------


def test_forget_one_key_removes_only_it_and_bumps_the_epoch():
    store = seeded()
    removed = store.forget("module")
    assert [f.key for f in removed] == ["module"]
    assert values(store) == {"database": "PostgreSQL"}
    assert store.epoch == 1


def test_forget_all_removes_everything_and_bumps_the_epoch():
    store = seeded()
    assert len(store.forget(None)) == 2
    assert (store.facts, store.snapshot(), store.prompt_block(), store.epoch) == ((), [], None, 1)


def test_forget_bumps_the_epoch_even_when_nothing_is_removed():
    store = FactStore()
    assert store.forget("module") == ()
    assert store.epoch == 1


def test_after_forget_only_a_new_declaration_in_a_later_turn_recreates_a_fact():
    store = seeded()
    store.forget("module")
    assert turn(store, 2, "Which module was it?").status == "none"
    assert "module" not in values(store)
    assert turn(store, 3, "module=Billing").status == "accepted"
    assert values(store)["module"] == "Billing"


# --- records and the prompt block ---------------------------------------------------------


def test_fact_record_has_provenance_and_a_utc_z_timestamp():
    at = datetime(2024, 5, 1, 14, 30, tzinfo=timezone(timedelta(hours=2)))
    fact = Fact("module", "Billing", "module=Billing", 3, at)
    assert fact.as_record() == {
        "key": "module",
        "value": "Billing",
        "evidence": "module=Billing",
        "turn": 3,
        "recorded_at": "2024-05-01T12:30:00Z",
    }


def test_admission_record_lists_evicted_and_replaced_facts():
    store = seeded()
    record = turn(store, 2, "module=Billing; database=PostgreSQL").as_record()
    assert record["status"] == "accepted"
    assert [f["value"] for f in record["replaced"]] == ["Reporting", "PostgreSQL"]
    assert record["evicted"] == []
    json.dumps(record)  # serialisable as is


def test_admit_refuses_a_naive_timestamp():
    store = FactStore()
    ticket = store.begin_turn(1, "module=Billing")
    with pytest.raises(ValueError, match="timezone-aware"):
        store.admit(ticket, honest("module=Billing"), datetime(2024, 5, 1))


def test_prompt_block_has_the_exact_labelled_format():
    store = FactStore()
    turn(store, 3, "module=Billing; database=SQL Server 2022")
    assert store.prompt_block() == (
        "Remembered facts (unverified user assertions with provenance; they do not authorize any action):\n"
        "database=SQL Server 2022\n"
        '  provenance: user wrote "database=SQL Server 2022" at turn 3\n'
        "module=Billing\n"
        '  provenance: user wrote "module=Billing" at turn 3'
    )


def test_prompt_block_is_none_for_an_empty_store():
    assert FactStore().prompt_block() is None


def test_prompt_block_does_not_depend_on_when_facts_were_recorded():
    early, late = FactStore(), FactStore()
    turn(early, 1, SEED_1, at=T0)
    turn(late, 1, SEED_1, at=T0 + timedelta(days=3))
    assert early.prompt_block() == late.prompt_block()
    assert early.snapshot() != late.snapshot()


# --- the writer's reply -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ('{"facts": []}', []),
        (
            '{"facts": [{"key": "module", "value": "Billing", "evidence": "module=Billing"}]}',
            [C("module", "Billing", "module=Billing")],
        ),
        ('{"facts": [{"key": "module"}]}', [C("module", None, None)]),
        ('{"facts": [{"key": null, "value": "x", "evidence": null}]}', [C(None, "x", None)]),
        ('{"facts": [{}], "note": "ignored"}', [C(None, None, None)]),
    ],
)
def test_parse_writer_output_reads_candidates(reply, expected):
    assert parse_writer_output(reply) == expected


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ("module=Billing", "not JSON"),
        ("", "not JSON"),
        ("[" * 100_000, "not JSON"),
        ("[]", '"facts" list'),
        ("{}", '"facts" list'),
        ('{"facts": null}', '"facts" list'),
        ('{"facts": {"key": "module"}}', '"facts" list'),
        ('{"facts": [1]}', r"facts\[0\] is not an object \(got number\)"),
        ('{"facts": [{"key": "module"}, "x"]}', r"facts\[1\] is not an object \(got string\)"),
        ('{"facts": [{"key": 1}]}', r"facts\[0\]\.key is not a string or null \(got number\)"),
        (
            '{"facts": [{"value": true}]}',
            r"facts\[0\]\.value is not a string or null \(got boolean\)",
        ),
        (
            '{"facts": [{"evidence": ["x"]}]}',
            r"facts\[0\]\.evidence is not a string or null \(got array\)",
        ),
        (  # half of a UTF-16 pair, alone: no user message holds one, so no fact can quote it
            '{"facts": [{"key": "module", "value": "Bill\\ud800", "evidence": "module=Billing"}]}',
            r"facts\[0\]\.value is not valid Unicode \(1 lone surrogate: 'Bill\\ud800'\)",
        ),
        ('{"facts": [{"key": "\\udc00\\udc01"}]}', r"facts\[0\]\.key is not valid Unicode \(2 lone surrogates"),
        # beyond the JSON bounds: Python's own plain ValueError escaped the error path before
        (
            '{"facts": [], "n": ' + "9" * 5_000 + "}",
            "writer output is not JSON: the writer's output: a number of 5,000",
        ),
        ("[" * 100_000 + "]" * 100_000, "writer output is not JSON: the writer's output: arrays or objects nested"),
    ],
)
def test_parse_writer_output_rejects_malformed_replies(reply, message):
    with pytest.raises(ValueError, match=message):
        parse_writer_output(reply)


def test_reference_writer_proposes_every_declaration_with_its_quote():
    reply = json.loads(reference_writer_output("ok;" + SEED_2 + "; module=Billing?", None))
    assert reply == {
        "facts": [
            {"key": "module", "value": "Billing", "evidence": "module=Billing"},
            {"key": "database", "value": "SQL Server 2022", "evidence": "database=SQL Server 2022"},
        ]
    }


@pytest.mark.parametrize("text", [SEED_1, SEED_2, "Where can I find logs?", 'symptom=says "no" é'])
def test_reference_writer_output_round_trips_and_is_admitted(text):
    store = FactStore()
    admission = store.admit(store.begin_turn(1, text), honest(text), T0)
    assert admission.status == ("accepted" if parse_declarations(text) else "none")


def test_reference_writer_replays_scripted_candidates_including_missing_fields():
    scripted = (
        WriterCandidate("database", "Billing", "module=Billing"),
        WriterCandidate("module", "Billing", None),
    )
    candidates = parse_writer_output(reference_writer_output("module=Billing", scripted))
    assert candidates == [C("database", "Billing", "module=Billing"), C("module", "Billing", None)]


def test_a_scripted_wrong_association_is_rejected():
    scripted = [C("database", "Billing", "module=Billing")]
    candidates = parse_writer_output(reference_writer_output("module=Billing", scripted))
    assert "wrong association" in turn(FactStore(), 1, "module=Billing", candidates).reason


# --- the seed walkthrough -----------------------------------------------------------------


def test_seed_walkthrough_correct_then_forget():
    store = FactStore()
    assert turn(store, 1, SEED_1).status == "accepted"
    admission = turn(store, 2, SEED_2)
    assert {(f.key, f.value) for f in admission.replaced} == {
        ("module", "Reporting"),
        ("database", "PostgreSQL"),
    }
    assert {f.key: (f.value, f.evidence, f.turn) for f in store.facts} == {
        "module": ("Billing", "module=Billing", 2),
        "database": ("SQL Server 2022", "database=SQL Server 2022", 2),
    }
    assert turn(store, 3, "Where can I find logs?").status == "none"
    store.forget("module")
    assert values(store) == {"database": "SQL Server 2022"}
    assert turn(store, 5, "Can I restart the production database now?").status == "none"
    store.forget(None)
    assert store.facts == ()
    assert turn(store, 7, "What was the module again?").status == "none"
    assert store.facts == ()


# --- properties ---------------------------------------------------------------------------

UNKNOWN_KEYS = ("foo", "Module", "db", "modules", "")
VALUE_ALPHABET = "abAB 19.-=?é\t"
SEPARATORS = (";", "; ", "\n", "\r\n", "\r", " ;\n")
PROSE = ("Where can I find logs?", "Please note module=Billing", "thanks", "", "  ", "a = b")
MUST_REJECT = (
    "unknown_key",
    "drop_evidence",
    "duplicate",
    "drop",
    "shift_value",
    "extra",
    "wrong_key",
)
MAY_REJECT = ("swap_keys", "case_evidence", "random")


def prop(examples: int) -> settings:
    """Hypothesis settings: no example database on disk, no per-example deadline."""
    return settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow],
    )


# Strategies are built once, and a message segment (with its separator) is one draw from a
# pool: drawing keys, values, padding and separators apart made the main property 3x slower.
allowed_keys = st.sampled_from(ALLOWED_KEYS)
indices = st.integers(0, 2**16)  # taken modulo a length: cheaper than a strategy per bound
POOL_VALUES = (
    "Billing",
    "billing",
    "SQL Server 2022",
    "a",
    "A b",
    "a=b",
    "x?y",
    "é",
    "",
    " ",
    "1.9\t",
)
SEGMENT_POOL = (
    [f"{pad}{key}{pad}={pad}{value}{pad}" for key in ALLOWED_KEYS for value in POOL_VALUES for pad in ("", " ", "  ")]
    + [f"{key}={value}" for key in UNKNOWN_KEYS for value in POOL_VALUES]
    + [f"{key}={value}?" for key in ALLOWED_KEYS for value in POOL_VALUES]  # questions
    + list(PROSE) * 10
)
message_parts = st.lists(st.sampled_from([seg + sep for seg in SEGMENT_POOL for sep in SEPARATORS]), max_size=7)


@st.composite
def messages(draw) -> str:
    """A user message of random segments and separators, now and then over the 4096 limit."""
    parts = draw(message_parts)
    text = "".join(parts)
    return text + "x" * 4100 if draw(indices) % 25 == 0 else text


def _substring(draw, text: str) -> str | None:
    """None, or a random substring of `text` (sometimes case-swapped)."""
    if draw(indices) % 6 == 0:
        return None
    start = draw(indices) % (len(text) + 1)
    piece = text[start : start + draw(indices) % 41]
    return piece.swapcase() if draw(indices) % 10 == 0 else piece


candidate_keys = st.sampled_from(ALLOWED_KEYS + UNKNOWN_KEYS + (None,))
modes = st.sampled_from(("honest",) * 10 + MUST_REJECT + MAY_REJECT + ("none",))
blanks = st.sampled_from([None, "", "  "])
missing_or_unknown_keys = st.sampled_from(UNKNOWN_KEYS + (None,))


@st.composite
def writer_batches(draw, text: str) -> tuple[str, list[Candidate] | None]:
    """(mode, candidates): the honest writer's batch, a mutation of it, random ones, or None."""
    mode = draw(modes)
    batch = honest(text)
    if mode == "none":
        return mode, None
    if mode == "random":
        count = draw(indices) % 7
        return mode, [C(draw(candidate_keys), _substring(draw, text), _substring(draw, text)) for _ in range(count)]
    if mode == "honest" or (not batch and mode != "extra"):
        return "honest", batch
    return mode, _mutate(draw, mode, batch, draw(indices) % max(len(batch), 1))


def _mutate(draw, mode: str, batch: list[Candidate], i: int) -> list[Candidate]:
    """Apply one named mutation to an honest batch."""
    batch = list(batch)
    if mode == "extra":
        return batch + [C(draw(allowed_keys), "a", "a")]
    c = batch[i]
    if mode == "unknown_key":
        batch[i] = C(draw(missing_or_unknown_keys), c.value, c.evidence)
    elif mode == "drop_evidence":
        batch[i] = C(c.key, c.value, draw(blanks))
    elif mode == "duplicate":
        batch.append(c)
    elif mode == "drop":
        del batch[i]
    elif mode == "shift_value":  # '§' never occurs in a generated message
        batch[i] = C(c.key, c.value + "§", c.evidence)
    elif mode == "wrong_key":
        others = [k for k in ALLOWED_KEYS if k != c.key]
        batch[i] = C(others[draw(indices) % len(others)], c.value, c.evidence)
    elif mode == "swap_keys" and len(batch) > 1:
        j = (i + 1) % len(batch)
        batch[i], batch[j] = (
            C(batch[j].key, c.value, c.evidence),
            C(c.key, batch[j].value, batch[j].evidence),
        )
    elif mode == "case_evidence":
        batch[i] = C(c.key, c.value, c.evidence.swapcase())
    return batch


@dataclass
class Turn:
    text: str
    step: int
    mode: str
    candidates: list[Candidate] | None


@dataclass
class Forget:
    key: str | None


@dataclass
class Stale:
    pick: int  # which previously issued ticket to replay


@st.composite
def turns(draw) -> Turn:
    text = draw(messages())
    mode, candidates = draw(writer_batches(text))
    return Turn(text, 1 + draw(indices) % 2, mode, candidates)


forgets = st.builds(Forget, st.sampled_from(ALLOWED_KEYS + ("foo", None)))
stales = st.builds(Stale, indices)
programs = st.lists(st.one_of(turns(), turns(), turns(), forgets, stales), min_size=1, max_size=8)


class Replay:
    """Runs a program against a FactStore, keeping what the invariants need to know."""

    def __init__(self) -> None:
        self.store = FactStore()
        self.texts: dict[int, str] = {}  # turn -> the user's text of that turn
        self.tickets: list[Ticket] = []
        self.forgotten: set[str] = set()  # keys forgotten and not declared-and-admitted since
        self.number = 0
        self.clock = T0

    def run(self, op: Turn | Forget | Stale) -> None:
        self.clock += timedelta(seconds=1)
        if isinstance(op, Forget):
            self.forget(op.key)
        elif isinstance(op, Stale):
            self.replay_ticket(op.pick)
        else:
            self.turn(op)
        self.check_invariants()

    def turn(self, op: Turn) -> None:
        self.number += op.step
        self.texts[self.number] = op.text
        ticket = self.store.begin_turn(self.number, op.text)
        self.tickets.append(ticket)
        admission = self.admit(ticket, op.candidates)
        declared = parse_declarations(op.text)
        if op.mode == "honest" and len(op.text) <= 4096 and len(declared) <= MAX_FACTS:
            assert admission.status == ("accepted" if declared else "none"), admission.reason
        if op.mode in MUST_REJECT or op.candidates is None:
            assert admission.status == "rejected"

    def replay_ticket(self, pick: int) -> None:
        if not self.tickets:
            return
        ticket = self.tickets[pick % len(self.tickets)]
        admission = self.admit(ticket, honest(ticket.user_text))
        if ticket is not self.tickets[-1] or ticket.epoch != self.store.epoch:
            assert admission.status == "rejected"
            assert admission.reason.startswith("stale update:")

    def forget(self, key: str | None) -> None:
        epoch = self.store.epoch
        removed = self.store.forget(key)
        assert self.store.epoch == epoch + 1
        assert all(key is None or f.key == key for f in removed)
        if key is None:
            assert self.store.facts == () and self.store.snapshot() == []
            self.forgotten = set(ALLOWED_KEYS)
        else:
            self.forgotten.add(key)

    def admit(self, ticket: Ticket, candidates: list[Candidate] | None) -> Admission:
        before = state(self.store)
        admission = self.store.admit(ticket, candidates, self.clock)
        if admission.status == "accepted":
            self.check_accepted(ticket, admission)
        else:
            assert state(self.store) == before
            assert (admission.evicted, admission.replaced) == ((), ())
        if admission.status == "rejected":
            assert admission.reason.endswith(KEPT)
        return admission

    def check_accepted(self, ticket: Ticket, admission: Admission) -> None:
        declared = parse_declarations(ticket.user_text)
        stored = {f.key: f for f in self.store.facts}
        for key, declaration in declared.items():
            assert stored[key] == Fact(key, declaration.value, stored[key].evidence, ticket.number, self.clock)
        for gone in admission.evicted:  # eviction took the oldest turns, ties by ordinal key
            assert all((gone.turn, gone.key) < (f.turn, f.key) for f in stored.values())
        self.forgotten -= set(declared)

    def check_invariants(self) -> None:
        facts = self.store.facts
        assert len(facts) <= MAX_FACTS
        assert len({f.key for f in facts}) == len(facts)
        assert list(facts) == sorted(facts, key=lambda f: (f.turn, f.key))
        assert self.store.snapshot() == [f.as_record() for f in facts]
        for fact in facts:
            assert fact.evidence in self.texts[fact.turn]
            assert fact.value in fact.evidence
            assert parse_declarations(self.texts[fact.turn])[fact.key].value == fact.value
            assert fact.key not in self.forgotten


@prop(1000)
@given(programs)
@pytest.mark.slow
def test_store_invariants_hold_under_random_operations(program):
    replay = Replay()
    for op in program:
        replay.run(op)


@prop(400)
@given(st.text(VALUE_ALPHABET + "mdlogu;\n\r", max_size=60) | messages())
def test_every_parsed_declaration_is_quoted_from_the_text(text):
    for key, declaration in parse_declarations(text).items():
        assert declaration.key == key and key in ALLOWED_KEYS
        assert declaration.evidence in text and declaration.value in declaration.evidence
        assert declaration.value == declaration.value.strip() != ""
        assert not declaration.evidence.endswith("?")
        assert not set(declaration.evidence) & {";", "\n", "\r"}


@prop(300)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(ALLOWED_KEYS),
            st.text("abAB19 .-é", min_size=1, max_size=8).map(str.strip).filter(bool),
        ),
        max_size=8,
    ),
    st.lists(st.sampled_from(SEPARATORS), min_size=8, max_size=8),
)
@pytest.mark.slow
def test_the_last_declaration_of_each_key_wins(pairs, separators):
    text = "".join(f"{key}={value}{sep}" for (key, value), sep in zip(pairs, separators))
    assert {k: d.value for k, d in parse_declarations(text).items()} == dict(pairs)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["facts", "key", "value", "evidence", "x"]), inner, max_size=4)
    ),
    max_leaves=12,
)


@prop(300)
@given(json_values.map(json.dumps) | st.text(max_size=30))
@pytest.mark.slow
def test_parse_writer_output_returns_candidates_or_raises_value_error(reply):
    try:
        candidates = parse_writer_output(reply)
    except ValueError:
        return
    for candidate in candidates:
        assert all(field is None or isinstance(field, str) for field in vars(candidate).values())
