"""The one definition of "in view": which subjects a message or an answer states."""

from __future__ import annotations

import unicodedata
from dataclasses import replace

from harness.base.messages import Message, ToolCall
from harness.chronology.ledger import Ledger
from harness.run.presence import Presence, prohibition, value
from tests.conftest import NO_RESTART, chronology, user

CHRON = chronology(
    user(1, "module=Billing; database=PostgreSQL; product=ERP"),
    user(2, "version=4.2; log=/var/log/erp.log"),
    user(3, "database=SQL Server 2022; version=4.2.1"),
    user(4, "We moved to the 5.0 release last night.", sets=(("version", "5.0"),)),
    user(5, "constraint=never restart production; environment=production"),
    prohibitions=(NO_RESTART,),
)
PRESENCE = Presence(CHRON, Ledger(CHRON).values())


def said(role: str, content: str, origin: str = "history", turn: int | None = None) -> frozenset:
    return PRESENCE.of_message(Message(role, content, origin, turn))  # type: ignore[arg-type]


def test_a_users_declaring_segment_states_the_value() -> None:
    assert value("module", "Billing") in said("user", "module=Billing; database=PostgreSQL")


def test_the_users_prose_never_states_a_value_even_naming_the_key() -> None:
    assert value("environment", "production") not in said("user", "Is production still the environment?", "current")
    assert value("module", "Billing") not in said("user", "The billing module is slow.")


def test_a_sets_statement_states_its_value_in_the_message_of_its_turn_only() -> None:
    text = "We moved to the 5.0 release last night."
    assert value("version", "5.0") in said("user", text, turn=4)
    assert value("version", "5.0") in said("user", text, "retrieved", turn=4)
    assert value("version", "5.0") not in said("user", text, turn=2)


def test_a_value_is_never_found_inside_a_longer_value_path_or_version() -> None:
    log = said("assistant", "The product log is log=/var/log/erp.log; see billing.log for the module.")
    assert value("product", "ERP") not in log
    assert value("module", "Billing") not in log
    assert value("log", "/var/log/erp.log") in log
    versions = said("assistant", "The version is 4.2.1 now.")
    assert value("version", "4.2") not in versions and value("version", "4.2.1") in versions


def test_a_value_is_never_found_inside_another_value_of_its_key_that_contains_it() -> None:
    stated = said("assistant", "The database is SQL Server 2022.")
    assert value("database", "SQL Server 2022") in stated
    assert value("database", "PostgreSQL") not in stated


def test_generated_text_states_a_value_where_a_clause_pairs_it_with_its_key() -> None:
    assert value("database", "PostgreSQL") in said("system", "[summary]\nThe database is PostgreSQL.", "summary")
    assert value("module", "Billing") not in said("assistant", "Check the billing run. The module is unknown.")


def test_a_facts_block_states_its_lines_and_never_the_question_after_it() -> None:
    block = (
        'Facts:\nmodule=Billing\n  provenance: user wrote "module=Billing" at turn 1\n\nIs production the environment?'
    )
    stated = said("user", block, "facts+current", turn=6)
    assert value("module", "Billing") in stated
    assert value("environment", "production") not in stated


def test_the_chronologys_system_message_states_values_only_by_declaration() -> None:
    assert value("product", "ERP") not in said("system", "You are a support assistant for an ERP product.", "system")


def test_a_prohibition_is_stated_wherever_its_present_pattern_matches() -> None:
    assert prohibition("no-restart") in said("user", "Never restart production, please.", "current")


def test_an_answer_may_lean_on_the_keys_its_question_names() -> None:
    assert value("database", "PostgreSQL") in PRESENCE.of_answer("PostgreSQL.", "Which database are we on?")
    assert value("database", "PostgreSQL") not in PRESENCE.of_answer("PostgreSQL.", "Can I restart now?")
    assert value("module", "Billing") not in PRESENCE.of_answer("Check the billing logs.", "Where are the logs?")


def test_a_chronologys_own_keys_state_values_and_the_seeds_keys_then_do_not() -> None:
    keys = ("allergy",)
    turn = replace(user(1, "allergy=penicillin; module=Billing"), keys=keys)
    ward = replace(chronology(), turns=(turn,), keys=keys)
    presence = Presence(ward, [("allergy", "penicillin"), ("module", "Billing")])
    stated = presence.of_message(Message("user", "allergy=penicillin; module=Billing", "history", 1))
    assert value("allergy", "penicillin") in stated and value("module", "Billing") not in stated
    assert value("allergy", "penicillin") in presence.of_answer("The allergy is penicillin.")


def test_a_tool_result_is_outside_text_never_the_users_declaration() -> None:
    # turn 4's `sets:` is the user's truth for the user's message of turn 4, never for a tool's output
    assert value("version", "5.0") not in said("tool", "release notes", "history", turn=4)
    assert value("database", "PostgreSQL") in said("tool", "The database is PostgreSQL.", "current", turn=4)
    assert value("database", "PostgreSQL") in said("tool", "database=PostgreSQL")


def test_a_tool_calls_arguments_are_read_as_generated_text() -> None:
    call = ToolCall("call_1", "query", '{"sql": "select 1"}; database=PostgreSQL')
    assert value("database", "PostgreSQL") in PRESENCE.of_message(Message("assistant", "", tool_calls=(call,)))


# --- a value is a whole (SPEC section 10, added after the fourth review) ------------------------

OWNERS = replace(
    chronology(),
    turns=tuple(
        replace(t, keys=("owner", "host", "language"))
        for t in chronology(
            user(1, "owner=ops; host=db1; language=C"),
            user(2, "owner=alice"),
        ).turns
    ),
    keys=("owner", "host", "language"),
)
OWNED = Presence(OWNERS, Ledger(OWNERS).values())


def test_a_value_inside_an_address_a_host_port_or_a_name_like_cpp_is_not_stated() -> None:
    stated = OWNED.of_message(
        Message("assistant", "The owner is reachable at ops@corp.example; the host is db1:5432; language: C++ toolkit.")
    )
    assert not {value("owner", "ops"), value("host", "db1"), value("language", "C")} & stated
    assert value("host", "db1") in OWNED.of_message(Message("assistant", "The host is db1, port 5432."))


def test_a_value_inside_another_keys_declared_value_is_not_that_keys_value() -> None:
    text = "constraint=never drop the PostgreSQL database replica of the Billing module"
    for origin in ("summary", "history"):
        stated = said("system" if origin == "summary" else "assistant", text, origin)
        assert value("database", "PostgreSQL") not in stated and value("module", "Billing") not in stated
    # the same words in prose, outside any declaration, pair the key with its value
    assert value("database", "PostgreSQL") in said("assistant", "The database is PostgreSQL.")


def test_a_declaring_segment_of_generated_text_states_its_keys_whole_values() -> None:
    assert value("database", "PostgreSQL") in PRESENCE.of_text("database=PostgreSQL (turn 1)")
    assert value("database", "SQL Server 2022") in said("assistant", "database=MySQL; database=SQL Server 2022")


def test_a_value_in_another_case_or_unicode_form_is_the_same_value() -> None:
    assert value("module", "Billing") in said("assistant", "The module is BILLING.")
    nfd = Presence(chronology(user(1, "customer=Café Müller")), [("customer", "Café Müller")]).of_answer(
        unicodedata.normalize("NFD", "The customer is Café Müller.")
    )
    assert value("customer", "Café Müller") in nfd


def test_a_turns_system_message_states_a_value_only_by_a_declaring_segment() -> None:
    for origin in ("history", "current", "pinned"):
        assert value("database", "PostgreSQL") in said("system", "database=PostgreSQL", origin, turn=2)
        assert value("database", "PostgreSQL") not in said("system", "We left the PostgreSQL database.", origin, turn=2)


def test_a_pinned_copy_of_a_user_message_states_what_the_message_states() -> None:
    assert said("user", "We moved to the 5.0 release last night.", "pinned", turn=4) == said(
        "user", "We moved to the 5.0 release last night.", "history", turn=4
    )
    assert prohibition("no-restart") in said("user", "never restart production", "pinned", turn=5)
