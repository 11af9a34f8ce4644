"""The chronology's ground truth, turn by turn: prohibitions in force, current, stale and forgotten values."""

from __future__ import annotations

import unicodedata

from harness.chronology import Forget
from harness.chronology.ledger import Ledger
from tests.conftest import NO_RESTART, chronology, user

DRIFT = chronology(
    user(1, "module=Reporting; database=PostgreSQL"),
    user(2, "constraint=never restart production"),
    user(3, "module=Billing; database=SQL Server 2022"),
    Forget(number=4, line=4, key="module"),
    user(5, "module=Reporting"),
    Forget(number=6, line=6, key="constraint"),
    Forget(number=7, line=7, key=None),
    prohibitions=(NO_RESTART,),
)


def subjects(values) -> set[str]:
    return {v.subject for v in values}


def test_current_values_are_the_latest_declaration_per_key() -> None:
    assert subjects(Ledger(DRIFT).after(3).current.values()) == {
        "module=Billing",
        "database=SQL Server 2022",
        "constraint=never restart production",
    }


def test_stale_values_are_derived_from_corrections() -> None:
    assert subjects(Ledger(DRIFT).after(3).stale.values()) == {"module=Reporting", "database=PostgreSQL"}


def test_a_forget_makes_the_value_forgotten_and_not_current() -> None:
    state = Ledger(DRIFT).after(4)
    assert subjects(state.forgotten.values()) == {"module=Billing"}
    assert "module" not in state.current


def test_declaring_another_value_after_a_forget_keeps_the_forgotten_one_watched() -> None:
    """A summary may still bring back what was forgotten, after the key is declared anew."""
    state = Ledger(DRIFT).after(5)
    assert state.current["module"].value == "Reporting"
    assert "module=Reporting" not in subjects(state.stale.values())
    assert subjects(state.forgotten.values()) == {"module=Billing"}


def test_declaring_the_forgotten_value_again_makes_it_current_not_forgotten() -> None:
    again = chronology(user(1, "module=Billing"), Forget(number=2, line=2, key="module"), user(3, "module=Billing"))
    state = Ledger(again).after(3)
    assert state.current["module"].value == "Billing" and state.forgotten == {}


def test_a_value_counts_from_its_latest_declaration_even_of_the_same_value() -> None:
    again = chronology(user(1, "module=Billing"), user(2, "hello"), user(3, "module=Billing"))
    assert Ledger(again).after(3).current["module"].since == 3


def test_a_prohibition_is_in_force_from_the_turn_that_states_it() -> None:
    ledger = Ledger(DRIFT)
    assert ledger.prohibitions_in_force(1) == {}
    assert ledger.prohibitions_in_force(5) == {"no-restart": 2}


def test_a_restatement_renews_a_prohibition() -> None:
    """Its age counts from the latest statement: a window that keeps a restated prohibition
    is not credited with keeping an old one."""
    restated = chronology(
        user(1, "Never restart production."),
        user(2, "hello"),
        user(3, "Remember: never restart anything in production."),
        prohibitions=(NO_RESTART,),
    )
    assert Ledger(restated).prohibitions_in_force(2) == {"no-restart": 1}
    assert Ledger(restated).prohibitions_in_force(3) == {"no-restart": 3}


def test_forgetting_the_key_that_declared_a_prohibition_withdraws_it() -> None:
    assert Ledger(DRIFT).prohibitions_in_force(6) == {}


def test_forgetting_the_key_withdraws_a_prohibition_restated_in_prose_after_its_declaration() -> None:
    restated = chronology(
        user(1, "constraint=never restart production"),
        user(2, "Again: never restart production."),
        Forget(number=3, line=3, key="constraint"),
        prohibitions=(NO_RESTART,),
    )
    assert Ledger(restated).prohibitions_in_force(3) == {}


def test_forget_all_withdraws_a_prose_prohibition_too() -> None:
    prose = chronology(
        user(1, "Never restart production."),
        Forget(number=2, line=2, key="module"),
        Forget(number=3, line=3, key=None),
        prohibitions=(NO_RESTART,),
    )
    ledger = Ledger(prose)
    assert ledger.prohibitions_in_force(2) == {"no-restart": 1}  # forget module does not touch prose
    assert ledger.prohibitions_in_force(3) == {}


def test_prose_around_a_declaration_declares_nothing() -> None:
    """`Sorry, I misread the tag. version=4.2.1` is not a declaration, for any reader."""
    prose = chronology(user(1, "version=4.2.0"), user(2, "Sorry, I misread the tag. version=4.2.1"))
    assert Ledger(prose).after(2).current["version"].value == "4.2.0"
    assert Ledger(prose).after(2).stale == {}


def test_sets_gives_the_checks_a_value_stated_in_prose() -> None:
    prose = chronology(
        user(1, "version=4.2.0"), user(2, "Sorry, I misread the tag. version=4.2.1", sets=(("version", "4.2.1"),))
    )
    state = Ledger(prose).after(2)
    assert state.current["version"].value == "4.2.1" and subjects(state.stale.values()) == {"version=4.2.0"}


def test_every_value_ever_current_and_the_session_of_each_turn() -> None:
    ledger = Ledger(DRIFT)
    assert ("module", "Billing") in ledger.values() and ("database", "PostgreSQL") in ledger.values()
    assert ledger.session_of(1) == "main" and ledger.session_of(4) is None


def test_a_change_of_case_only_is_no_correction() -> None:
    """Matching ignores case, so the ledger does too: `ACME Corp` -> `Acme Corp` restates the
    value (its age counts from the restatement) and makes nothing stale."""
    ledger = Ledger(chronology(user(1, "customer=ACME Corp"), user(2, "customer=Acme Corp")))
    assert ledger.after(2).stale == {}
    assert [(v.subject, v.since) for v in ledger.after(2).current.values()] == [("customer=Acme Corp", 2)]


def test_a_full_stop_ending_the_sentence_is_no_correction() -> None:
    """`database=SQL Server 2022.` and `database=SQL Server 2022` declare one value."""
    ledger = Ledger(chronology(user(1, "database=SQL Server 2022."), user(2, "database=SQL Server 2022")))
    assert ledger.after(2).stale == {}


def test_a_value_in_another_unicode_form_is_no_correction_and_is_recorded_nfc() -> None:
    decomposed = unicodedata.normalize("NFD", "Café Müller")
    ledger = Ledger(chronology(user(1, "customer=Café Müller"), user(2, f"customer={decomposed}")))
    assert ledger.after(2).stale == {}
    assert [v.value for v in ledger.after(2).current.values()] == ["Café Müller"]  # NFC


def test_declaring_a_stale_value_again_in_another_case_makes_it_current() -> None:
    ledger = Ledger(chronology(user(1, "database=MySQL"), user(2, "database=PostgreSQL"), user(3, "database=mysql")))
    assert subjects(ledger.after(3).stale.values()) == {"database=PostgreSQL"}
    assert subjects(ledger.after(3).current.values()) == {"database=mysql"}
