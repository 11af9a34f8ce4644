"""The one reader of declarations, and the text it does not read as one."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.chronology.declarations import ALLOWED_KEYS, near_misses, outside_keys, parse_declarations

MEDICAL = ("allergy", "medication", "dose")


@pytest.mark.parametrize(
    ("text", "key", "before"),
    [
        ("Sorry, I misread the tag. version=4.2.1", "version", "Sorry, I misread the tag."),
        ("module=Billing; we also use database=Oracle", "database", "we also use"),
        ("Note:\nplease set environment=staging", "environment", "please set"),
    ],
)
def test_prose_before_a_declaration_is_a_near_miss(text: str, key: str, before: str) -> None:
    [miss] = near_misses(text)
    assert (miss.key, miss.before) == (key, before)
    assert key not in parse_declarations(text)
    assert f"put {key}=... after a ';' or on its own line" in miss.advice()


@pytest.mark.parametrize(
    "text",
    ["module=Billing; database=SQL Server 2022", "Is it version=4.2.1?", "my-module=x", "colour=red", "version= "],
)
def test_declarations_questions_and_other_keys_are_no_near_miss(text: str) -> None:
    assert near_misses(text) == []


@given(
    st.lists(
        st.tuples(st.sampled_from(ALLOWED_KEYS), st.from_regex(r"[A-Za-z0-9 .]{1,12}", fullmatch=True)),
        min_size=1,
        max_size=5,
    ),
    st.sampled_from(["; ", "\n", ";"]),
)
def test_segments_that_are_declarations_are_read_and_never_near_misses(pairs, separator) -> None:
    text = separator.join(f"{key}={value}" for key, value in pairs)
    expected = {key: value.strip() for key, value in pairs if value.strip()}
    assert {k: d.value for k, d in parse_declarations(text).items()} == expected
    assert near_misses(text) == []


# --- A chronology's own key set ----------------------------------------------------------


def test_a_key_set_of_another_domain_is_read_and_the_seeds_keys_are_then_prose() -> None:
    text = "allergy=penicillin; medication=amoxicillin 500 mg\nmodule=Billing"
    declared = parse_declarations(text, MEDICAL)
    assert {k: d.value for k, d in declared.items()} == {"allergy": "penicillin", "medication": "amoxicillin 500 mg"}
    assert declared["medication"].evidence == "medication=amoxicillin 500 mg"


def test_by_default_the_key_set_is_the_seeds_ten() -> None:
    assert parse_declarations("allergy=penicillin; module=Billing") == parse_declarations(
        "allergy=penicillin; module=Billing", ALLOWED_KEYS
    )
    assert list(parse_declarations("allergy=penicillin; module=Billing")) == ["module"]


def test_the_key_set_may_be_any_collection() -> None:
    text = "dose=2 tablets; allergy=latex"
    assert parse_declarations(text, set(MEDICAL)) == parse_declarations(text, list(MEDICAL))


def test_near_misses_follow_the_key_set() -> None:
    text = "The nurse noted allergy=penicillin"
    [miss] = near_misses(text, MEDICAL)
    assert (miss.key, miss.before) == ("allergy", "The nurse noted")
    assert near_misses(text) == []


def test_near_misses_take_the_longer_of_two_keys_that_begin_alike() -> None:
    [miss] = near_misses("Today: medication-dose=2", ("medication", "medication-dose"))
    assert miss.key == "medication-dose"


@pytest.mark.parametrize(
    ("text", "keys", "found"),
    [
        ("allergy=penicillin; module=Billing", ALLOWED_KEYS, ["allergy"]),
        ("allergy=penicillin; module=Billing", MEDICAL, ["module"]),
        ("allergy = penicillin", ALLOWED_KEYS, ["allergy"]),
        ("allergy=penicillin?", ALLOWED_KEYS, []),  # a question declares nothing, and says so
        ("The nurse noted allergy=penicillin", ALLOWED_KEYS, []),  # prose: not shaped like one
        ("allergy=", ALLOWED_KEYS, []),  # no value
        ("module=Billing; version=4.2", ALLOWED_KEYS, []),
    ],
)
def test_segments_shaped_as_declarations_of_a_key_outside_the_set_are_found(text, keys, found) -> None:
    assert [o.key for o in outside_keys(text, keys)] == found


def test_a_key_outside_the_set_is_explained_with_both_ways_on() -> None:
    [outside] = outside_keys("Allergy=penicillin", MEDICAL)
    advice = outside.advice(MEDICAL)
    assert "'Allergy=penicillin' declares nothing: 'Allergy' is not one of this chronology's keys" in advice
    assert "(allergy, medication, dose) (did you mean allergy?)" in advice
    assert "add it to keys: to have it declared, or leave it as prose" in advice


@given(
    st.lists(
        st.tuples(st.sampled_from(MEDICAL), st.from_regex(r"[A-Za-z0-9 .]{1,12}", fullmatch=True)),
        min_size=1,
        max_size=5,
    ),
)
def test_declarations_of_the_set_are_read_and_never_reported(pairs) -> None:
    text = "; ".join(f"{key}={value}" for key, value in pairs)
    expected = {key: value.strip() for key, value in pairs if value.strip()}
    assert {k: d.value for k, d in parse_declarations(text, MEDICAL).items()} == expected
    assert near_misses(text, MEDICAL) == [] and outside_keys(text, MEDICAL) == []


def test_a_segment_gives_one_near_miss_per_key_however_often_it_repeats() -> None:
    text = "note: module=a module=b database=c module=d"
    assert [(m.key, m.before) for m in near_misses(text)] == [
        ("module", "note:"),
        ("database", "note: module=a module=b"),
    ]


def test_advice_quotes_a_long_segment_as_every_message_quotes_outside_text() -> None:
    segment = "note " + "x" * 100_000 + " version=4.2 " + "y" * 100_000
    [miss] = near_misses(segment)
    [outside] = outside_keys("colour=" + "z" * 100_000)
    for advice in (miss.advice(), outside.advice(ALLOWED_KEYS)):
        assert len(advice) < 1_000
        assert "characters)" in advice
    assert "'note xxxxxxxxxxxxxxx'... (200,018 characters)" in miss.advice()
    assert "'colour=zzzzzzzzzzzzz'... (100,007 characters)" in outside.advice(ALLOWED_KEYS)


def test_a_value_is_as_long_as_the_fact_store_admits() -> None:
    from harness.chronology.declarations import MAX_VALUE_CHARS
    from harness.policy.facts import MAX_VALUE_CHARS as STORED

    assert MAX_VALUE_CHARS == STORED == 256


def test_a_key_named_in_prose_is_a_whole_word_singular_or_plural_in_any_case() -> None:
    from harness.chronology.declarations import key_name

    assert key_name("priority").search("Which Priorities are open?")
    assert key_name("allergy").search("two allergies") and key_name("address").search("the addresses")
    assert key_name("module").search("The MODULE is Billing.")
    assert not key_name("module").search("the billing-module") and not key_name("module").search("submodules")
