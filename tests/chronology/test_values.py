"""A value is a whole (SPEC section 10): where a text states a value, and when two spellings are
one value. The one definition every reader uses (`harness.chronology.values`)."""

from __future__ import annotations

import unicodedata

import pytest

from harness.chronology.values import WholeValues, holds, identity, same

NFD = unicodedata.normalize("NFD", "Café Müller")


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("Mail alice@example.com today.", "alice"),  # an address keeps its identity
        ("Mail alice@example.com today.", "example.com"),  # its domain too
        ("We ship the C++ toolkit.", "C"),  # a name like C++
        ("Written in C# mostly.", "C"),
        ("Install 4.2~rc1 first.", "4.2"),  # a version's suffix
        ("Install 4.2+build7 first.", "4.2"),
        ("Install 4.2-beta first.", "4.2"),
        ("The tag reads 4.2.1 now.", "4.2"),
        ("Page ops@corp.example at night.", "ops"),
        ("Connect to db1:5432 for it.", "db1"),  # host:port
        ("See /var/log/erp.log for it.", "ERP"),  # a path
        ("Open https://shop.example/?user=alice to see.", "alice"),  # a URL's query
        ("It costs $40.50 a month.", "40"),  # an amount
    ],
)
def test_a_value_inside_a_longer_token_is_not_stated(text: str, value: str) -> None:
    assert not holds(text, value)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("The owner is alice.", "alice"),  # sentence punctuation ends it
        ("alice, then bob", "alice"),
        ("We ship C++.", "C++"),  # a value that ends in punctuation of its own
        ("Languages: C, Go.", "C"),
        ("Written in C# mostly.", "C#"),
        ("Install 4.2, not 4.3.", "4.2"),
        ("Mail alice@example.com today.", "alice@example.com"),
        ("db1: up since Monday", "db1"),  # a colon followed by a space ends a sentence part
        ("log=/var/log/erp.log", "/var/log/erp.log"),  # after a key's `=`
        ("The database is **PostgreSQL**.", "postgresql"),  # markdown emphasis, case ignored
        ('He said "Billing" (twice).', "Billing"),
        ("Lisbon's old town", "Lisbon"),  # a possessive
        ("SQL\nServer 2022", "SQL Server 2022"),  # white space of any kind between its words
        ("I restored one last year—nothing like it.", "last year"),  # a dash parts words (LoCoMo)
    ],
)
def test_a_value_standing_whole_is_stated(text: str, value: str) -> None:
    assert holds(text, value)


def test_both_sides_are_nfc_and_case_is_folded() -> None:
    assert NFD != "Café Müller"
    assert holds(f"The customer is {NFD}.", "Café Müller")
    assert holds("The customer is CAFÉ MÜLLER.", NFD)
    assert same("ACME Corp", "Acme  corp") and same(NFD, "café müller")
    assert not same("ACME Corp", "ACME Corporation")
    assert identity("Straße") == identity("STRASSE")  # full case folding, not lower()


def test_sentence_punctuation_at_a_values_end_is_no_part_of_it() -> None:
    """`database=SQL Server 2022.` ends a sentence: its value is the one without the full stop."""
    assert same("SQL Server 2022.", "SQL Server 2022") and same("Lisbon!", "lisbon")
    assert holds("We run SQL Server 2022 now.", "SQL Server 2022.")
    assert WholeValues(["SQL Server 2022."]).found("It is SQL Server 2022.") == {"SQL Server 2022."}
    assert not same("C++", "C") and not same("f(x)", "f(x")  # a value's own marks stay
    assert identity("...") == "..."  # a value of punctuation only keeps it


def test_the_longest_value_at_a_place_wins() -> None:
    values = WholeValues(["SQL Server", "SQL Server 2022"])
    assert values.found("We run SQL Server 2022.") == {"SQL Server 2022"}
    assert values.found("SQL Server 2022, and SQL Server too") == {"SQL Server 2022", "SQL Server"}


def test_without_sets_aside_the_values_a_text_quotes() -> None:
    values = WholeValues(["I'm not sure, maybe the disk"])
    assert "not sure" not in values.without("The symptom was: I'm not sure, maybe the disk.")
    assert "not sure" in values.without("I'm not sure.")
