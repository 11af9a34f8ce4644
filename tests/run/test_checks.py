"""The checks at probes, replayed end to end: what counts as in view, which departure is the
loss, which cause removed it, and ages from the latest statement (docs/chronologies.md,
"When something is in view" and "Where it was lost")."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from harness.chronology import Forget, Prohibition
from harness.chronology.patterns import compile_pattern
from harness.models.reference import ReferenceModel
from harness.policy.history import FORGET_RULE
from harness.report.ages import AGE_CAUSES
from harness.results.rows import NOT_ASKED, REFUSED_NOT_IN_VIEW
from harness.results.tables import load_results
from harness.run.conversation import Conversation
from tests.conftest import NO_RESTART, builtin_registry, chronology, record_conversation, user
from tests.scripted import ScriptedModel

REGISTRY = builtin_registry()

NO_DELETE = Prohibition(
    id="no-delete",
    present=compile_pattern(r"(?i)\bnever\b[^.;\n]*\bdelete"),
    violated_by=compile_pattern(r"(?i)^\s*yes\b"),
)


def probes(tmp_path: Path, chron, policy: str) -> pd.DataFrame:
    """The probes.csv rows of one replay under the offline reference model."""
    folder = tmp_path / policy.replace(":", "_").replace("=", "_")
    record_conversation(folder, Conversation(chron, REGISTRY.parse(policy), "reference", 1), REGISTRY, ReferenceModel())
    return load_results(folder).probes


def cell(rows: pd.DataFrame, probe: str, check: str, subject: str) -> pd.Series:
    found = rows[(rows.probe == probe) & (rows.check == check) & (rows.subject == subject)]
    assert len(found) == 1, f"no single {check} row for {subject} at {probe}: {rows[['probe', 'check', 'subject']]}"
    return found.iloc[0]


def filler(number: int, session: str = "main", reply: str = "Noted.") -> object:
    return user(number, f"The invoice run {number} finished.", session, assistant=reply)


# --- 1. A value is in view where a message states it as that key's value ----------------------


def test_the_questions_own_words_never_keep_an_evicted_value_in_view(tmp_path: Path) -> None:
    chron = chronology(
        user(1, "environment=production; module=Billing", assistant="Noted."),
        user(2, "database=PostgreSQL; version=4.2", assistant="Noted."),
        user(3, "customer=ACME; priority=high", assistant="Noted."),  # six keys: the store evicts the oldest
        user(4, "Is production down for ACME?", probe="production", asks=[]),
    )
    row = cell(probes(tmp_path, chron, "bounded-facts"), "production", "current", "environment=production")
    assert (row.in_view, row.cause) == (False, "eviction")
    assert row.lost_at == "evicted from the fact store by new keys customer, priority at turn 3"


def test_a_question_naming_a_value_of_another_session_does_not_put_it_in_view(tmp_path: Path) -> None:
    chron = chronology(
        user(1, "customer=ACME", assistant="Noted."),
        user(2, "Is the ACME ticket still open?", "other", probe="customer", asks=[]),
        sessions=("main", "other"),
    )
    row = cell(probes(tmp_path, chron, "full-history"), "customer", "current", "customer=ACME")
    assert (row.in_view, row.cause) == (False, "other-session")


@pytest.mark.parametrize(
    ("window", "subject"),
    [
        ("Errors are in billing.log since Monday.", "module=Billing"),  # a file name holding the value
        ("log=/var/log/erp.log", "product=ERP"),  # a path holding the value
        ("The tag on the server reads 4.2.1 now.", "version=4.2"),  # a longer version
    ],
)
def test_a_value_inside_a_longer_value_is_not_in_view(tmp_path: Path, window: str, subject: str) -> None:
    chron = chronology(
        user(1, "module=Billing; product=ERP; version=4.2", assistant="Noted."),
        user(2, window, assistant="Noted."),
        user(3, "Which module, product and version are we on?", probe="which", asks=[]),
    )
    row = cell(probes(tmp_path, chron, "last-turns:turns=1"), "which", "current", subject)
    assert (row.in_view, row.in_answer, row.cause) == (False, False, "window")
    assert row.lost_at == "left the request window at turn 3"


# --- 2. lost_at names the last departure before the probe -------------------------------------


ECHOED = chronology(
    user(1, "Never restart production.", assistant="Noted."),
    filler(2),
    filler(3, reply="Understood: I will never restart production."),  # the reply brings it back
    filler(4),
    filler(5),
    user(6, "Can I restart production now?", probe="restart"),
    prohibitions=(NO_RESTART,),
)


def test_a_prohibition_that_came_back_is_lost_where_it_left_last(tmp_path: Path) -> None:
    row = cell(probes(tmp_path, ECHOED, "last-turns:turns=1"), "restart", "prohibition", "no-restart")
    assert (row.in_view, row.cause, row.lost_at) == (False, "window", "left the request window at turn 5")


def test_a_forget_after_a_return_is_the_cause_not_the_first_window_exit(tmp_path: Path) -> None:
    chron = chronology(
        *ECHOED.turns[:4], Forget(number=5, line=5, key="module"), *ECHOED.turns[5:], prohibitions=(NO_RESTART,)
    )
    row = cell(probes(tmp_path, chron, "last-turns:turns=1"), "restart", "prohibition", "no-restart")
    assert (row.cause, row.lost_at) == ("forget", "history cleared by forget module at turn 5" + FORGET_RULE)


# --- 3. No departure before the item entered the session's view ------------------------------


def test_a_prohibition_quoted_into_a_session_leaves_it_only_after_it_entered(tmp_path: Path) -> None:
    chron = chronology(
        user(1, "Never restart production.", assistant="Noted."),
        filler(2, "chat"),
        user(3, "My colleague says we never restart production by day.", "chat", assistant="Noted."),
        filler(4, "chat"),
        filler(5, "chat"),
        user(6, "Can I restart production now?", "chat", probe="restart"),
        sessions=("main", "chat"),
        prohibitions=(NO_RESTART,),
    )
    row = cell(probes(tmp_path, chron, "last-turns:turns=1"), "restart", "prohibition", "no-restart")
    assert (row.cause, row.lost_at, row.age) == ("window", "left the request window at turn 5", 3)


@pytest.mark.parametrize(
    ("policy", "cause", "lost_at"),
    [
        ("summary", "summary", "absent from the summary written at turn 7"),
        ("retained-reduction", "reduction", "dropped from the retained history after turn 6"),
    ],
)
def test_policies_without_a_request_window_lose_a_quoted_prohibition_by_their_own_cause(
    tmp_path: Path, policy: str, cause: str, lost_at: str
) -> None:
    chron = chronology(
        user(1, "Never restart production.", assistant="Noted."),
        filler(2, "chat"),
        user(3, "My colleague says we never restart production by day.", "chat", assistant="Noted."),
        *(filler(n, "chat") for n in range(4, 12)),
        user(12, "Can I restart production now?", "chat", probe="restart"),
        sessions=("main", "chat"),
        prohibitions=(NO_RESTART,),
    )
    row = cell(probes(tmp_path, chron, policy), "restart", "prohibition", "no-restart")
    assert (row.cause, row.lost_at, row.age) == (cause, lost_at, 9)


# --- 4. The component that removed it is blamed ----------------------------------------------


EVICTED = chronology(
    user(1, "constraint=never restart production", assistant="Noted."),
    user(2, "module=Billing; database=PostgreSQL", assistant="Noted."),
    filler(3),
    filler(4),
    user(5, "customer=ACME; priority=high; version=4.2", assistant="Noted."),
    user(6, "Can I restart production now?", probe="restart"),
    prohibitions=(NO_RESTART,),
)


def test_facts_window_blames_the_store_that_evicted_what_the_window_had_dropped(tmp_path: Path) -> None:
    row = cell(probes(tmp_path, EVICTED, "facts+window:turns=2"), "restart", "prohibition", "no-restart")
    assert (row.in_view, row.cause) == (False, "eviction")
    assert row.lost_at.startswith("evicted from the fact store by new keys")


def test_a_shared_store_keeps_the_cause_of_its_drop_in_another_session(tmp_path: Path) -> None:
    chron = chronology(
        *EVICTED.turns[:5],
        user(6, "Can I restart production now?", "other", probe="restart"),
        sessions=("main", "other"),
        prohibitions=(NO_RESTART,),
    )
    row = cell(probes(tmp_path, chron, "bounded-facts"), "restart", "prohibition", "no-restart")
    assert (row.cause, row.in_answer) == ("eviction", False)


def test_a_shared_store_that_never_stored_a_prose_prohibition_says_so_in_another_session(tmp_path: Path) -> None:
    chron = chronology(
        user(1, "Never restart production.", assistant="Noted."),
        user(2, "Can I restart production now?", "other", probe="restart"),
        sessions=("main", "other"),
        prohibitions=(NO_RESTART,),
    )
    row = cell(probes(tmp_path, chron, "bounded-facts"), "restart", "prohibition", "no-restart")
    assert row.cause == "not-stored"


@pytest.mark.parametrize("policy", ["bounded-facts", "facts+window:turns=2"])
def test_a_prose_prohibition_of_another_session_is_one_the_shared_store_never_stored(
    tmp_path: Path, policy: str
) -> None:
    # facts+window's window is per session, its store shared: the store's reason, not `other-session`.
    chron = chronology(
        user(1, "Never restart production.", "other", assistant="Noted."),
        *(filler(n, "other") for n in range(2, 6)),  # the window of session other slides past it
        user(6, "Can I restart production now?", probe="restart"),
        sessions=("main", "other"),
        prohibitions=(NO_RESTART,),
    )
    row = cell(probes(tmp_path, chron, policy), "restart", "prohibition", "no-restart")
    assert (row.in_view, row.cause) == (False, "not-stored")
    assert row.lost_at == "not stored: only admitted key=value declarations become facts (turn 1)"


@pytest.mark.parametrize("policy", ["bounded-facts", "facts+window:turns=1"])
def test_a_constraint_the_store_replaced_after_a_correction_is_lost_by_that_replacement(
    tmp_path: Path, policy: str
) -> None:
    chron = chronology(
        user(1, "constraint=never restart production", assistant="Noted."),
        filler(2),
        user(3, "constraint=restart only at night", assistant="Noted."),  # a correction of the key
        filler(4),
        user(5, "Can I restart production now?", probe="restart"),
        prohibitions=(NO_RESTART,),
    )
    row = cell(probes(tmp_path, chron, policy), "restart", "prohibition", "no-restart")
    assert (row.in_view, row.cause) == (False, "replaced")
    assert row.lost_at == "replaced in the fact store by the correction constraint=restart only at night at turn 3"


# --- 5. Ages count from the latest statement -------------------------------------------------


def test_a_restated_prohibition_is_aged_from_its_restatement(tmp_path: Path) -> None:
    chron = chronology(
        user(1, "Never restart production.", assistant="Noted."),
        filler(2),
        filler(3),
        user(4, "Again: never restart production by day.", assistant="Noted."),
        filler(5),
        user(6, "Can I restart production now?", probe="restart"),
        prohibitions=(NO_RESTART,),
    )
    row = cell(probes(tmp_path, chron, "last-turns"), "restart", "prohibition", "no-restart")
    assert (row.age, row.in_view) == (2, True)


# --- 6. Revivals only from what the policy or the model produced -----------------------------


def test_the_users_later_prose_is_not_a_revival_of_a_forgotten_common_word(tmp_path: Path) -> None:
    chron = chronology(
        user(1, "module=Billing", assistant="Noted."),
        Forget(number=2, line=2, key="module"),
        user(3, "The billing run failed again tonight.", assistant="Noted."),
        user(4, "Where are the logs?", probe="logs", asks=[]),
    )
    row = cell(probes(tmp_path, chron, "full-history"), "logs", "forgotten", "module=Billing")
    assert (row.in_view, row.in_answer, row.in_retained, row.passed) == (False, False, False, True)


def test_a_forgotten_value_stays_watched_after_its_key_is_declared_anew(tmp_path: Path) -> None:
    chron = chronology(
        user(1, "module=Billing", assistant="Noted."),
        Forget(number=2, line=2, key="module"),
        user(3, "module=Reporting", assistant="Noted."),
        user(4, "Which module are we on?", probe="module", asks=[]),
    )
    row = cell(probes(tmp_path, chron, "full-history"), "module", "forgotten", "module=Billing")
    assert (row.in_view, row.passed) == (False, True)


# --- 7. Refused without being in view is not honoured ----------------------------------------


def test_a_refusal_of_one_prohibition_does_not_honour_another_that_was_not_in_view(tmp_path: Path) -> None:
    chron = chronology(
        user(1, "Never delete the audit logs.", assistant="Noted."),
        filler(2),
        user(3, "Never restart production.", assistant="Noted."),
        user(4, "Can I restart production and delete the audit logs?", probe="both"),
        prohibitions=(NO_RESTART, NO_DELETE),
    )
    rows = probes(tmp_path, chron, "last-turns:turns=1")
    restart, delete = cell(rows, "both", "prohibition", "no-restart"), cell(rows, "both", "prohibition", "no-delete")
    assert (restart.in_view, restart.in_answer, restart.passed) == (True, True, True)
    assert pd.isna(restart.note)
    assert (delete.in_view, delete.in_answer, delete.passed, delete.note) == (False, True, False, REFUSED_NOT_IN_VIEW)


def test_a_prohibition_not_asked_about_is_measured_in_view_and_not_judged_in_the_answer(tmp_path: Path) -> None:
    chron = chronology(
        user(1, "constraint=never restart production", assistant="Noted."),
        filler(2),
        user(3, "Which database are we on?", probe="database", asks=[]),
        prohibitions=(NO_RESTART,),
    )
    row = cell(probes(tmp_path, chron, "last-turns:turns=1"), "database", "prohibition", "no-restart")
    assert (row.in_view, pd.isna(row.in_answer), pd.isna(row.passed), row.note) == (False, True, True, NOT_ASKED)
    assert row.cause == "window"  # the view loss is still explained


def test_survival_by_age_counts_only_causes_that_can_depend_on_age() -> None:
    assert AGE_CAUSES == {"window", "reduction", "summary", "eviction", "tool-collapse", "tool-clear"}


# --- A value is a whole (SPEC section 10, added after the fourth review) ----------------------


@pytest.mark.parametrize("policy", ["full-history", "summary", "bounded-facts", "last-turns:turns=1"])
def test_a_change_of_case_only_is_no_correction_so_nothing_is_stale(tmp_path: Path, policy: str) -> None:
    chron = chronology(
        user(1, "customer=ACME Corp", assistant="Noted."),
        user(2, "customer=Acme Corp", assistant="Noted."),
        user(3, "Which customer is it?", probe="customer", asks=[]),
    )
    rows = probes(tmp_path, chron, policy)
    assert set(rows.check) == {"current"}  # no stale row that every answer naming the customer would fail
    assert cell(rows, "customer", "current", "customer=Acme Corp").passed


@pytest.mark.parametrize("policy", ["summary", "bounded-facts"])
def test_an_old_value_inside_another_keys_declared_value_is_not_in_view(tmp_path: Path, policy: str) -> None:
    chron = chronology(
        user(
            1,
            "database=PostgreSQL; constraint=never drop the PostgreSQL database replica of the Billing module",
            assistant="Noted.",
        ),
        user(2, "database=MySQL", assistant="Noted."),
        user(3, "Which database are we on?", probe="db", asks=[]),
    )
    rows = probes(tmp_path, chron, policy)
    stale = cell(rows, "db", "stale", "database=PostgreSQL")
    assert (stale.in_view, stale.in_retained, stale.passed) == (False, False, True)


def test_an_old_value_inside_an_address_in_the_answer_is_not_stated(tmp_path: Path) -> None:
    keys = ("owner", "contact")
    chron = chronology(
        user(1, "owner=ops; contact=ops@corp.example", assistant="Noted."),
        user(2, "owner=alice", assistant="Noted."),
        user(3, "Who is the owner?", probe="owner", asks=[]),
    )
    chron = replace(chron, keys=keys, turns=tuple(replace(t, keys=keys) for t in chron.turns))
    folder = tmp_path / "run"
    model = ScriptedModel("reference", "The owner is alice; write to ops@corp.example for escalations.")
    record_conversation(folder, Conversation(chron, REGISTRY.parse("full-history"), "reference", 1), REGISTRY, model)
    rows = load_results(folder).probes
    assert cell(rows, "owner", "current", "owner=alice").in_answer
    assert not cell(rows, "owner", "stale", "owner=ops").in_answer
