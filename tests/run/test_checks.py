"""What the checks derive from a chronology, and how they describe a loss."""

from __future__ import annotations

from harness.chronology import Forget
from harness.chronology.ledger import Ledger
from harness.policy import Drop
from harness.report.ages import AGE_CAUSES
from harness.results.rows import ProbeCells
from harness.run.checks import Loss, Observation, Trace, check_probe, lost_at, value_matcher
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


def test_declaring_an_old_value_again_makes_it_current_not_stale_nor_forgotten() -> None:
    state = Ledger(DRIFT).after(5)
    assert state.current["module"].value == "Reporting"
    assert "module=Reporting" not in subjects(state.stale.values())
    assert "module=Billing" not in subjects(state.forgotten.values())


def test_a_prohibition_is_in_force_from_the_turn_that_states_it() -> None:
    ledger = Ledger(DRIFT)
    assert ledger.prohibitions_in_force(1) == {}
    assert ledger.prohibitions_in_force(5) == {"no-restart": 2}


def test_forgetting_the_key_that_declared_a_prohibition_withdraws_it() -> None:
    assert Ledger(DRIFT).prohibitions_in_force(6) == {}


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


def test_a_stale_value_is_not_found_inside_the_current_value_that_contains_it() -> None:
    stale = value_matcher("SQL Server", mask=["SQL Server 2022"])
    assert not stale("database=SQL Server 2022")
    assert stale("database=SQL Server, later SQL Server 2022")


def test_values_match_whole_words_case_insensitively() -> None:
    assert value_matcher("Billing")("the billing module")
    assert not value_matcher("Bill")("the billing module")


def trace_of(*turns: tuple[int, str | None, list[str] | None, list[str], list[Drop]]) -> Trace:
    trace = Trace()
    for number, session, view, retained, dropped in turns:
        trace.add(number, session, view, retained, dropped)
    return trace


RULE = value_matcher("rule")


def test_lost_from_a_window_while_still_retained() -> None:
    trace = trace_of(
        (1, "s", ["rule"], ["rule"], []), (2, "s", ["rule", "x"], ["rule", "x"], []), (3, "s", ["x"], ["rule", "x"], [])
    )
    assert lost_at(trace, RULE, 1, 3) == Loss("window", "left the request window at turn 3")


def test_lost_from_the_retained_state_takes_the_policys_reason() -> None:
    trace = trace_of(
        (1, "s", ["rule"], ["rule"], []),
        (2, "s", ["rule"], [], [Drop("rule", "evicted at turn 2", "eviction")]),
        (3, "s", ["x"], [], []),
    )
    assert lost_at(trace, RULE, 1, 3) == Loss("eviction", "evicted at turn 2")


def test_lost_without_a_reason_says_when_it_left_the_retained_state() -> None:
    trace = trace_of((1, "s", ["rule"], [], []), (2, "s", ["x"], [], []))
    assert lost_at(trace, RULE, 1, 2) == Loss(
        "untraced", "not in the retained state after turn 1 (the policy reported no reason)"
    )


def test_another_sessions_history_is_never_a_window_loss() -> None:
    trace = trace_of((1, "support", ["rule"], ["rule"], []), (2, "logs", ["x"], ["rule", "x"], []))
    loss = lost_at(trace, RULE, 1, 2)
    assert loss.cause == "other-session"
    assert loss.where.startswith("never in the view of session logs: stated at turn 1 in session support")


# --- Issue 9: one reading of declarations, answers judged only where asked, causes ------------


def test_prose_around_a_declaration_is_read_by_the_checks_as_by_the_store_and_the_model() -> None:
    """Case 1: `Sorry, I misread the tag. version=4.2.1` is not a declaration anywhere."""
    prose = chronology(user(1, "version=4.2.0"), user(2, "Sorry, I misread the tag. version=4.2.1"))
    assert Ledger(prose).after(2).current["version"].value == "4.2.0"
    assert Ledger(prose).after(2).stale == {}


def test_sets_gives_the_checks_a_value_stated_in_prose() -> None:
    prose = chronology(
        user(1, "version=4.2.0"), user(2, "Sorry, I misread the tag. version=4.2.1", sets=(("version", "4.2.1"),))
    )
    state = Ledger(prose).after(2)
    assert state.current["version"].value == "4.2.1" and subjects(state.stale.values()) == {"version=4.2.0"}


ASKS = chronology(
    user(1, "constraint=never restart production"),
    user(2, "Which database are we on?", probe="database", asks=()),
    user(3, "Can I restart production now?", probe="restart", asks=("no-restart",)),
    prohibitions=(NO_RESTART,),
)


def probe_rows(chron, number: int, view: list[str], answer: str) -> list[ProbeCells]:
    trace = Trace()
    for turn in chron.user_turns[:number]:
        trace.add(turn.number, turn.session, view, view, [])
    return check_probe(Ledger(chron), trace, chron.user_turns[number - 1], Observation(view, answer, view))


def test_a_prohibition_not_asked_about_is_measured_in_view_and_not_judged_in_the_answer() -> None:
    """Case 2: an answer to "Which database?" honoured the prohibition trivially."""
    [row] = [r for r in probe_rows(ASKS, 2, ["x"], "no database in my context") if r.check == "prohibition"]
    assert (row.in_view, row.in_answer, row.passed, row.note) == (False, None, None, "not asked")
    assert row.cause is not None  # the view loss is still explained


def test_a_prohibition_asked_about_is_judged_in_the_answer() -> None:
    [row] = [
        r for r in probe_rows(ASKS, 3, ["constraint=never restart production"], "Yes.") if r.check == "prohibition"
    ]
    assert (row.in_view, row.in_answer, row.passed, row.note) == (True, False, False, None)


def test_without_asks_every_prohibition_in_force_is_asked() -> None:
    plain = chronology(
        user(1, "constraint=never restart production"),
        user(2, "Which database?", probe="db"),
        prohibitions=(NO_RESTART,),
    )
    [row] = [r for r in probe_rows(plain, 2, ["x"], "no database") if r.check == "prohibition"]
    assert row.note is None and row.in_answer is True


def test_every_loss_carries_a_cause_category_beside_its_words() -> None:
    """Case 4: causes kept apart, so survival by age counts only what can depend on age."""
    trace = trace_of(
        (1, "s", ["rule"], ["rule"], []),
        (2, None, None, [], [Drop("rule", "history cleared by forget module at turn 2", "forget")]),
        (3, "s", ["x"], [], []),
    )
    assert lost_at(trace, RULE, 1, 3) == Loss("forget", "history cleared by forget module at turn 2")
    assert "forget" not in AGE_CAUSES and "other-session" not in AGE_CAUSES and "not-stored" not in AGE_CAUSES
    assert AGE_CAUSES == {"window", "reduction", "summary", "eviction"}
