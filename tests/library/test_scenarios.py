"""The shipped seed chronologies, run through `harness run --policy seed`: their documented
outcomes under the seed's comparison (tests/library/test_library.py runs them, with the whole
library, under the plain run's every policy)."""

from __future__ import annotations

import pandas as pd
import pytest

from harness.policy.history import FORGET_RULE
from harness.results.tables import Results, load_results
from tests.conftest import SEED as SEED_POLICIES
from tests.conftest import run_through_cli
from tests.paths import SHIPPED

SEED = [SHIPPED / "correct-then-forget.yaml", SHIPPED / "memory-drift.yaml"]  # the seed scenarios
POLICIES = SEED_POLICIES
FACTS = ["bounded-facts", "bounded-facts:mode=provider"]


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Results:
    return load_results(
        run_through_cli(tmp_path_factory.mktemp("run"), SEED, "seed", "--policy", "seed", "--no-charts")
    )


def cell(value: object) -> bool | None:
    """A boolean cell; blank (unknown, or not asked) is None."""
    return None if pd.isna(value) else bool(value)


def survival(results: Results, chronology: str, probe: str) -> dict[str, tuple[bool | None, bool | None]]:
    """policy -> (prohibition in view, honoured by the answer; None where not asked) at one probe."""
    p = results.probes
    rows = p[(p.chronology == chronology) & (p.probe == probe) & (p.check == "prohibition")]
    return {r.policy: (cell(r.in_view), cell(r.in_answer)) for r in rows.itertuples()}


def causes(results: Results, chronology: str, probe: str) -> dict[str, str | None]:
    p = results.probes
    rows = p[(p.chronology == chronology) & (p.probe == probe) & (p.check == "prohibition")]
    return {r.policy: None if pd.isna(r.cause) else r.cause for r in rows.itertuples()}


def lost(results: Results, chronology: str, probe: str) -> dict[str, str]:
    p = results.probes
    rows = p[(p.chronology == chronology) & (p.probe == probe) & (p.check == "prohibition") & p.lost_at.notna()]
    return dict(zip(rows.policy, rows.lost_at))


def test_memory_drift_early_probe_only_the_distorted_summary_has_lost_the_prohibition(results: Results) -> None:
    table = survival(results, "memory-drift", "restart-early")
    assert table == {p: (p != "summary", p != "summary") for p in POLICIES}
    assert lost(results, "memory-drift", "restart-early") == {"summary": "absent from the summary written at turn 2"}


def test_memory_drift_late_probe_only_full_history_still_refuses(results: Results) -> None:
    table = survival(results, "memory-drift", "restart-late")
    assert table == {p: (p == "full-history", p == "full-history") for p in POLICIES}
    assert lost(results, "memory-drift", "restart-late") == {
        "last-turns": "left the request window at turn 7",
        "summary": "absent from the summary written at turn 2",
        "bounded-facts": "evicted from the fact store by new keys priority, symptom at turn 6",
        "bounded-facts:mode=provider": "evicted from the fact store by new keys priority, symptom at turn 6",
        "request-compaction": "left the request window at turn 6",  # one turn earlier: the current turn counts
        "retained-reduction": "dropped from the retained history after turn 6",
    }


def test_memory_drift_full_history_keeps_the_corrected_database_beside_its_correction(results: Results) -> None:
    p = results.probes
    stale = p[(p.chronology == "memory-drift") & (p.probe == "database") & (p.subject == "database=PostgreSQL")]
    assert dict(zip(stale.policy, stale.in_view)) == {pol: pol == "full-history" for pol in POLICIES}
    assert not stale.in_answer.any()  # the literal reader takes the latest declaration


def test_memory_drift_facts_block_with_provenance_outweighs_the_short_dialogue(results: Results) -> None:
    t = results.turns
    turn2 = t[(t.chronology == "memory-drift") & (t.turn == 2)].set_index("policy")
    assert turn2.loc["bounded-facts", "view_chars"] > turn2.loc["full-history", "view_chars"]
    assert turn2.loc["bounded-facts:mode=provider", "view_chars"] > turn2.loc["full-history", "view_chars"]


def test_walkthrough_other_session_sees_the_shared_store_but_no_history(results: Results) -> None:
    table = survival(results, "correct-then-forget", "other-session")
    assert {p for p, (in_view, _) in table.items() if in_view} == set(FACTS)
    assert {answer for _, answer in table.values()} == {None}  # "Where can I find logs?" asks no permission
    assert {p: c for p, c in causes(results, "correct-then-forget", "other-session").items() if c} == dict.fromkeys(
        set(POLICIES) - set(FACTS), "other-session"
    )
    assert lost(results, "correct-then-forget", "other-session")["full-history"].startswith(
        "never in the view of session logs: stated at turn 2 in session support"
    )


def test_walkthrough_forget_module_clears_histories_but_facts_keep_the_constraint(results: Results) -> None:
    table = survival(results, "correct-then-forget", "restart-after-forget")
    assert {p for p, seen in table.items() if seen == (True, True)} == set(FACTS)
    assert (
        lost(results, "correct-then-forget", "restart-after-forget")["full-history"]
        == "history cleared by forget module at turn 6" + FORGET_RULE
    )
    assert causes(results, "correct-then-forget", "restart-after-forget")["full-history"] == "forget"


def test_walkthrough_after_forget_all_nothing_comes_back_anywhere(results: Results) -> None:
    p = results.probes
    rows = p[(p.chronology == "correct-then-forget") & (p.probe == "after-forget-all")]
    assert set(rows.check) == {"forgotten", "stale"}  # the withdrawn prohibition is no longer expected
    forgotten = rows[rows.check == "forgotten"]
    assert set(forgotten.subject) == {
        "module=Billing",
        "database=SQL Server 2022",
        "constraint=never restart production during business hours",
    }
    assert forgotten.passed.all() and not forgotten.in_retained.any()


@pytest.mark.parametrize("policy", FACTS)
def test_walkthrough_fact_store_timeline_in_both_injection_modes(results: Results, policy: str) -> None:
    f = results.facts
    rows = f[(f.chronology == "correct-then-forget") & (f.policy == policy)].set_index("turn")
    store = {turn: {x["key"]: (x["value"], x["evidence"]) for x in facts} for turn, facts in rows.facts.items()}
    assert store[1] == {"module": ("Reporting", "module=Reporting"), "database": ("PostgreSQL", "database=PostgreSQL")}
    assert store[3]["module"] == ("Billing", "module=Billing")
    assert store[3]["database"] == ("SQL Server 2022", "database=SQL Server 2022")
    assert {r["key"] for r in rows.admission[3]["replaced"]} == {"module", "database"}
    assert set(store[5]) == {"module", "database", "constraint"}  # the logs session asked, nothing changed
    assert set(store[6]) == {"database", "constraint"} and rows.forget[6]["key"] == "module"
    assert store[9] == {} and rows.forget[9]["key"] == "all"
    assert store[10] == {}  # the later question recreated nothing
