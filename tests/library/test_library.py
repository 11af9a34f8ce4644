"""The chronology library: every shipped file runs, and its documented outcome holds.

Each chronology's `description` states what it shows and what the reference model should
produce; the tests below assert exactly that, one group per file, from one `harness run` of
the whole library (tests/library/test_scenarios.py covers the two seed chronologies in detail).
"""

from __future__ import annotations

import importlib.util
import re

import pandas as pd
import pytest
from click.testing import CliRunner

from harness.chronology.loading import discover, load_chronology
from harness.cli.commands import main
from harness.results.tables import Results, load_results
from tests.conftest import AGENT, COMPARISON, CONTROL, DEPLOYED, SEED, run_through_cli
from tests.paths import ROOT, SHIPPED

POLICIES = COMPARISON
FACTS = {"bounded-facts", "bounded-facts:mode=provider"}
WINDOWS = {"last-turns", "request-compaction", "retained-reduction"}
HISTORIES = WINDOWS | {"full-history"}
# The deployed policies that send whole earlier turns while a budget (or BM25) admits them: in
# these short chronologies they still send the turn that matters where the windows have let it go.
BUDGETED = {"token-budget", "summary-buffer", "retrieval"}
DEPLOYED_SET = set(DEPLOYED)
STORES = FACTS | {"facts+window"}  # the fact stores, one per conversation, shared by its sessions
# The library's chronologies have no tool steps but the two agent traces: clear-tool-uses has
# nothing to clear, tool-result-compaction nothing to collapse, so both keep the whole history, as
# full history does; compaction-pipeline's stages then reduce to its sliding window of 4 turns
# (MAF's sample), its summary (over 1280 tokens) and truncation not being reached but in
# budget-cut-correction, whose summary folds turn 1 only.
WHOLE = {"full-history", "clear-tool-uses", "tool-result-compaction"}
PIPELINE = {"compaction-pipeline"}
# The control keeps nothing: every subject of an earlier turn is lost, never stored.
NONE = set(CONTROL)


def never_kept(turn: int) -> dict[str, str]:
    """The control's loss of what was stated at `turn` (policies/none.py)."""
    return {"none": f"not kept: the control keeps nothing (turn {turn})"}


LIBRARY = SHIPPED / "library.txt"  # the shipped library; a chronology a user adds is not in it
FILES = discover([LIBRARY])


# The whole library replayed once, under every installed policy (the plain run): every test that
# reads a replay is marked slow; the checks of the files themselves are not.
@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Results:
    return load_results(run_through_cli(tmp_path_factory.mktemp("library"), FILES, "lib"))


def rows(results: Results, chronology: str, probe: str, check: str, subject: str | None = None) -> pd.DataFrame:
    p = results.probes
    found = p[(p.chronology == chronology) & (p.probe == probe) & (p.check == check)]
    return found if subject is None else found[found.subject == subject]


def yes(value: object) -> bool:
    """A boolean cell; blank (unknown, e.g. a stopped policy) is not yes."""
    return False if pd.isna(value) else bool(value)


def survival(results: Results, chronology: str, probe: str) -> dict[str, tuple[bool, bool]]:
    """policy -> (prohibition in view, honoured by the answer) at one probe."""
    found = rows(results, chronology, probe, "prohibition")
    return {r.policy: (yes(r.in_view), yes(r.in_answer)) for r in found.itertuples()}


def keeping(results: Results, chronology: str, probe: str) -> set[str]:
    """The policies whose view holds the prohibition and whose answer honours it."""
    return {policy for policy, seen in survival(results, chronology, probe).items() if seen == (True, True)}


def lost(
    results: Results, chronology: str, probe: str, check: str = "prohibition", subject: str | None = None
) -> dict[str, str]:
    found = rows(results, chronology, probe, check, subject)
    found = found[found.lost_at.notna()]
    return dict(zip(found.policy, found.lost_at))


def flags(results: Results, chronology: str, probe: str, check: str, subject: str, column: str) -> dict[str, bool]:
    """policy -> in_view / in_answer of one subject at one probe."""
    found = rows(results, chronology, probe, check, subject)
    return {r.policy: yes(getattr(r, column)) for r in found.itertuples()}


def answers(results: Results, chronology: str, turn: int) -> dict[str, str]:
    c = results.calls
    found = c[(c.chronology == chronology) & (c.turn == turn) & (c.kind == "answer")]
    return dict(zip(found.policy, found.response))


def store(results: Results, chronology: str, policy: str) -> pd.DataFrame:
    """facts.jsonl of one fact policy, by turn."""
    f = results.facts
    return f[(f.chronology == chronology) & (f.policy == policy)].set_index("turn")


# --- the library as a whole ---------------------------------------------------------------


def test_the_library_has_at_least_ten_chronologies_each_with_a_description() -> None:
    assert len(FILES) >= 10
    for path in FILES:
        chronology = load_chronology(path)
        assert "Expected under the reference model" in chronology.description, path.name


def test_every_shipped_chronology_validates() -> None:
    result = CliRunner().invoke(main, ["validate", str(LIBRARY)])
    assert result.exit_code == 0, result.output
    assert len([line for line in result.stdout.splitlines() if line.startswith("ok: ")]) == len(FILES)
    assert "warning" not in result.output  # every probe says what it asks


@pytest.mark.slow
def test_every_conversation_completes_except_the_overflowing_summary(results: Results) -> None:
    t = results.turns
    last = t.sort_values("turn").groupby(["chronology", "policy"]).tail(1)
    stopped = last[last.status == "stopped"]
    assert list(zip(stopped.chronology, stopped.policy)) == [("summary-overflow", "summary")]
    assert len(last) == len(FILES) * len(POLICIES)
    assert results.manifest.conversations["stopped"] == 1


def test_the_guide_lists_exactly_the_shipped_library() -> None:
    guide = (ROOT / "docs" / "chronologies.md").read_text(encoding="utf-8")
    table = guide.split("## The shipped library", 1)[1].split("\n## ", 1)[0]
    listed = re.findall(r"^\| `([^`]+\.yaml)` \|", table, flags=re.MULTILINE)
    assert sorted(listed) == sorted(path.name for path in FILES)


# --- prose-prohibition ---------------------------------------------------------------------


@pytest.mark.slow
def test_prose_prohibition_is_never_a_fact_in_either_injection_mode(results: Results) -> None:
    assert keeping(results, "prose-prohibition", "delete-next-turn") == set(POLICIES) - FACTS - NONE
    reason = "not stored: only admitted key=value declarations become facts (turn 3)"
    assert lost(results, "prose-prohibition", "delete-next-turn") == {p: reason for p in FACTS} | never_kept(3)
    for policy in FACTS:
        facts = [fact for turn in store(results, "prose-prohibition", policy).facts for fact in turn]
        assert facts and not any("audit" in fact["evidence"] for fact in facts)


@pytest.mark.slow
def test_prose_prohibition_ages_out_of_windows_then_out_of_the_summary(results: Results) -> None:
    # the 4 turns of the pipeline's window still hold the earlier refusals that quote it
    assert keeping(results, "prose-prohibition", "delete-later") == WHOLE | {"summary"} | BUDGETED | PIPELINE
    assert keeping(results, "prose-prohibition", "delete-much-later") == WHOLE | BUDGETED | PIPELINE
    later = lost(results, "prose-prohibition", "delete-later")
    assert {p: later[p] for p in WINDOWS} == {
        "last-turns": "left the request window at turn 8",
        "request-compaction": "left the request window at turn 7",
        "retained-reduction": "dropped from the retained history after turn 7",
    }
    assert (
        lost(results, "prose-prohibition", "delete-much-later")["summary"]
        == "absent from the summary written at turn 8"
    )


@pytest.mark.slow
def test_prose_prohibition_required_pattern_demands_a_no(results: Results) -> None:
    for policy, answer in answers(results, "prose-prohibition", 10).items():
        assert answer.startswith("No") == (policy in WHOLE | BUDGETED | PIPELINE), policy


# --- constraint-eviction -------------------------------------------------------------------


@pytest.mark.slow
def test_constraint_eviction_every_policy_refuses_while_the_constraint_is_stored(results: Results) -> None:
    assert keeping(results, "constraint-eviction", "restart-while-stored") == set(POLICIES) - NONE


@pytest.mark.slow
def test_constraint_eviction_newer_keys_push_the_constraint_out_of_five_facts(results: Results) -> None:
    assert keeping(results, "constraint-eviction", "restart-after-eviction") == WHOLE | {"summary"} | BUDGETED
    lost_at = lost(results, "constraint-eviction", "restart-after-eviction")
    assert {p: lost_at[p] for p in FACTS} == {
        p: "evicted from the fact store by new key customer at turn 5" for p in FACTS
    }
    assert set(lost_at) == set(POLICIES) - WHOLE - {"summary"} - BUDGETED
    assert lost_at["compaction-pipeline"] == "dropped from the retained history after turn 6"


@pytest.mark.slow
@pytest.mark.parametrize("policy", sorted(FACTS))
def test_constraint_eviction_ties_go_to_the_ordinal_key_order(results: Results, policy: str) -> None:
    timeline = store(results, "constraint-eviction", policy)
    assert [f["key"] for f in timeline.admission[5]["evicted"]] == ["constraint"]  # tied with environment (turn 1)
    assert [f["key"] for f in timeline.admission[6]["evicted"]] == ["environment"]
    assert len(timeline.facts[7]) == 5


# --- distorted-summary ---------------------------------------------------------------------


@pytest.mark.slow
def test_distorted_summary_only_the_summary_loses_the_prohibition(results: Results) -> None:
    assert keeping(results, "distorted-summary", "restart") == set(POLICIES) - {"summary"} - NONE
    assert lost(results, "distorted-summary", "restart") == {
        "summary": "absent from the summary written at turn 2"
    } | never_kept(2)
    assert answers(results, "distorted-summary", 4)["summary"].startswith("Yes")


@pytest.mark.slow
def test_distorted_summary_revives_the_corrected_database_in_its_answer(results: Results) -> None:
    stale = "database=PostgreSQL"
    assert flags(results, "distorted-summary", "database", "stale", stale, "in_answer") == {
        p: p == "summary" for p in POLICIES
    }
    in_view = flags(results, "distorted-summary", "database", "stale", stale, "in_view")
    assert in_view["summary"] and in_view["full-history"] and not any(in_view[p] for p in FACTS)
    assert lost(results, "distorted-summary", "database", "current", "database=SQL Server 2022") == {
        "summary": "absent from the summary written at turn 3"
    } | never_kept(3)


# --- summary-overflow ----------------------------------------------------------------------


@pytest.mark.slow
def test_summary_overflow_stops_the_summary_policy_with_the_length_recorded(results: Results) -> None:
    t = results.turns
    summary = t[(t.chronology == "summary-overflow") & (t.policy == "summary")].set_index("turn")
    assert summary.status[6] == "stopped" and summary.stop_reason[6] == "summary_too_long:824"
    assert list(summary.index) == [1, 2, 3, 4, 5, 6]  # nothing replayed after the stop
    c = results.calls
    written = c[(c.chronology == "summary-overflow") & (c.kind == "summarizer")].set_index("turn").response
    assert len(written[5]) == 698 and len(written[6]) == 824  # never truncated


@pytest.mark.slow
def test_summary_overflow_later_probes_are_recorded_as_stopped(results: Results) -> None:
    assert survival(results, "summary-overflow", "restart-before")["summary"] == (True, True)
    for probe in ("restart-after-stop", "restart-end"):
        stopped = rows(results, "summary-overflow", probe, "prohibition")
        stopped = stopped[stopped.policy == "summary"].iloc[0]
        assert stopped.status == "stopped" and pd.isna(stopped.passed)
        assert stopped.lost_at == "policy stopped at turn 6 (summary_too_long:824)"


@pytest.mark.slow
def test_summary_overflow_the_other_policies_go_on(results: Results) -> None:
    for probe in ("restart-after-stop", "restart-end"):
        assert keeping(results, "summary-overflow", probe) == WHOLE | FACTS | DEPLOYED_SET


# --- provenance-outweighs-dialogue ---------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("column", ["view_chars", "estimate_tokens", "tiktoken_tokens"])
def test_provenance_makes_the_facts_view_larger_than_the_whole_dialogue(results: Results, column: str) -> None:
    t = results.turns
    turn2 = t[(t.chronology == "provenance-outweighs-dialogue") & (t.turn == 2)].set_index("policy")
    for policy in FACTS:
        assert turn2.loc[policy, column] > turn2.loc["full-history", column], policy


@pytest.mark.slow
def test_provenance_makes_the_retained_facts_larger_than_the_retained_dialogue(results: Results) -> None:
    t = results.turns
    turn1 = t[(t.chronology == "provenance-outweighs-dialogue") & (t.turn == 1)].set_index("policy")
    for policy in FACTS:
        assert turn1.loc[policy, "retained_chars"] > turn1.loc["full-history", "retained_chars"], policy


@pytest.mark.slow
def test_provenance_nothing_is_lost_yet(results: Results) -> None:
    p = results.probes
    probe = p[(p.chronology == "provenance-outweighs-dialogue") & ~p.policy.isin(NONE)]
    assert probe.passed.all() and len(probe) == 5 * len(set(POLICIES) - NONE)
    said = answers(results, "provenance-outweighs-dialogue", 2)
    assert {p for p, a in said.items() if "SQL Server 2022" in a} == set(POLICIES) - NONE


# --- two-sessions --------------------------------------------------------------------------


@pytest.mark.slow
def test_two_sessions_only_the_shared_store_reaches_the_other_session(results: Results) -> None:
    assert keeping(results, "two-sessions", "restart-from-logs") == STORES
    lost_at = lost(results, "two-sessions", "restart-from-logs")
    assert set(lost_at) == set(POLICIES) - STORES
    assert all(
        text.startswith("never in the view of session logs: stated at turn 1 in session support")
        for text in lost_at.values()
    )


@pytest.mark.slow
def test_two_sessions_a_fact_declared_in_logs_serves_support_only_through_the_store(results: Results) -> None:
    log = "log=C:\\ProgramData\\Erp\\billing.log"
    assert flags(results, "two-sessions", "back-in-support", "current", log, "in_view") == {
        p: p in STORES for p in POLICIES
    }
    # Support's own history is intact; the question asks nothing, so no answer is judged.
    found = rows(results, "two-sessions", "back-in-support", "prohibition")
    assert dict(zip(found.policy, found.in_view)) == {p: p not in NONE for p in POLICIES}
    assert found.in_answer.isna().all() and found.passed.isna().all() and set(found.note) == {"not asked"}
    replies = answers(results, "two-sessions", 4)
    assert {p for p, a in replies.items() if a.startswith("no log in my context")} == set(POLICIES) - STORES


@pytest.mark.slow
@pytest.mark.parametrize("policy", sorted(FACTS))
def test_two_sessions_share_one_store(results: Results, policy: str) -> None:
    timeline = store(results, "two-sessions", policy)
    assert {f["key"] for f in timeline.facts[2]} == {"database", "constraint", "log"}


# --- stale-premise -------------------------------------------------------------------------


@pytest.mark.slow
def test_stale_premise_a_question_carrying_the_stale_value_does_not_put_it_in_view(results: Results) -> None:
    """The user's own question is never a statement of a value: only full history, whose view
    still holds the declaration the correction replaced, has the stale value in view."""
    stale = "database=PostgreSQL"
    in_view = flags(results, "stale-premise", "stale-premise", "stale", stale, "in_view")
    assert in_view == {p: p in WHOLE | BUDGETED for p in POLICIES}
    assert flags(results, "stale-premise", "stale-premise", "stale", stale, "in_answer") == dict.fromkeys(
        POLICIES, False
    )
    current = flags(results, "stale-premise", "stale-premise", "current", "database=SQL Server 2022", "in_answer")
    assert current == {p: p not in WINDOWS | NONE for p in POLICIES}


@pytest.mark.slow
def test_stale_premise_comes_back_through_the_summary_that_noted_the_question(results: Results) -> None:
    """One turn later, the summary pairs the database with the premise: the policy's own text
    brought the stale value back; the histories hold only the user's question, which states nothing."""
    in_view = flags(results, "stale-premise", "database", "stale", "database=PostgreSQL", "in_view")
    assert in_view == {p: p in WHOLE | {"summary"} | BUDGETED for p in POLICIES}


# --- rejected-extraction -------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("policy", sorted(FACTS))
def test_rejected_extraction_is_atomic_and_keeps_the_previous_facts(results: Results, policy: str) -> None:
    timeline = store(results, "rejected-extraction", policy)
    admission = timeline.admission[2]
    assert admission["status"] == "rejected"
    assert admission["reason"].startswith(
        "wrong association: candidate 2 proposes database=Billing but the user declared database=SQL Server 2022"
    )
    assert admission["reason"].endswith("previous facts kept; no fallback applied")
    held = {f["key"]: f["value"] for f in timeline.facts[2]}
    assert held == {"module": "Reporting", "database": "PostgreSQL"}  # the correct module candidate was not admitted
    assert timeline.admission[4]["status"] == "accepted"
    assert {f["key"] for f in timeline.admission[4]["replaced"]} == {"module", "database"}


@pytest.mark.slow
def test_rejected_extraction_bounded_facts_answers_with_the_old_values(results: Results) -> None:
    for stale in ("module=Reporting", "database=PostgreSQL"):
        in_answer = flags(results, "rejected-extraction", "after-rejection", "stale", stale, "in_answer")
        assert in_answer == {p: p in STORES for p in POLICIES}
        in_view = flags(results, "rejected-extraction", "after-rejection", "stale", stale, "in_view")
        assert all(in_view[p] for p in STORES | {"full-history"}) and not in_view["summary"]
    lost_at = lost(results, "rejected-extraction", "after-rejection", "current", "module=Billing")
    assert set(lost_at) == FACTS | NONE  # facts+window's window still holds the turn
    assert all(
        text.startswith("not stored: the extraction of turn 2 was rejected (wrong association")
        for policy, text in lost_at.items()
        if policy not in NONE
    )


@pytest.mark.slow
def test_rejected_extraction_redeclaring_repairs_the_store(results: Results) -> None:
    for current in ("module=Billing", "database=SQL Server 2022"):
        assert flags(results, "rejected-extraction", "after-redeclaration", "current", current, "in_answer") == {
            p: p not in NONE for p in POLICIES
        }


# --- long-conversation ---------------------------------------------------------------------

AGES = (1, 2, 4, 8, 16, 32, 64, 128, 200)


def test_long_conversation_file_is_what_its_script_writes() -> None:
    spec = importlib.util.spec_from_file_location("long_conversation", ROOT / "scripts" / "long_conversation.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    text = (SHIPPED / "long-conversation.yaml").read_text(encoding="utf-8")
    assert text == module.render(), "run: python scripts/long_conversation.py"


def test_long_conversation_has_200_turns_and_probes_at_doubling_ages() -> None:
    chronology = load_chronology(SHIPPED / "long-conversation.yaml")
    assert len(chronology.turns) >= 200
    assert [p.number - 1 for p in chronology.probes] == list(AGES)
    assert all(t.assistant is not None for t in chronology.user_turns if t.probe is None)


@pytest.mark.slow
@pytest.mark.parametrize("age", AGES)
def test_long_conversation_survival_by_age(results: Results, age: int) -> None:
    expected = WHOLE | {"summary"} | BUDGETED
    if age <= 8:
        expected |= PIPELINE  # its window of 4 turns still holds a refusal that quotes it
    if age <= 64:
        expected |= STORES
    if age <= 4:
        expected |= WINDOWS  # the earlier refusals quote the prohibition back into the window
    assert keeping(results, "long-conversation", f"age-{age}") == expected


@pytest.mark.slow
def test_long_conversation_facts_lose_the_constraint_then_the_database_to_newer_keys(results: Results) -> None:
    assert (
        lost(results, "long-conversation", "age-128")["bounded-facts"]
        == "evicted from the fact store by new key priority at turn 110"
    )
    assert (
        lost(results, "long-conversation", "age-200", "current", "database=SQL Server 2022")["bounded-facts"]
        == "evicted from the fact store by new key symptom at turn 150"
    )


@pytest.mark.slow
def test_long_conversation_full_history_view_grows_every_turn(results: Results) -> None:
    t = results.turns
    full = t[(t.chronology == "long-conversation") & (t.policy == "full-history")].sort_values("turn")
    assert full.view_chars.is_monotonic_increasing and full.view_chars.iloc[-1] > 20 * full.view_chars.iloc[1]
    window = t[(t.chronology == "long-conversation") & (t.policy == "last-turns")]
    assert window.view_chars.max() < full.view_chars.iloc[-1] / 20


# --- the deployed policies (in the plain run after the seed's comparison) -------------------------


@pytest.mark.slow
def test_the_plain_run_runs_the_library_under_every_installed_policy(results: Results) -> None:
    assert results.manifest.policy_labels == POLICIES == SEED + DEPLOYED + AGENT + CONTROL
    t = results.turns
    last = t.sort_values("turn").groupby(["chronology", "policy"]).tail(1)
    assert len(last) == len(FILES) * len(POLICIES)
    assert set(zip(*last[last.status == "stopped"][["chronology", "policy"]].values.T)) == {
        ("summary-overflow", "summary")
    }
    report = (results.directory.parent.parent / "reports" / "lib.md").read_text(encoding="utf-8")
    glance = report.split("## At a glance", 1)[1]
    assert "| chronology | " + " | ".join(POLICIES) + " |" in glance  # the seed's seven, the four, the three, none


@pytest.mark.slow
def test_the_librarys_report_reads_in_one_screen(results: Results) -> None:
    """Issue 40: the policies' table has at most 12 columns, every cell at a glance at most 100 characters."""
    report = (results.directory.parent.parent / "reports" / "lib.md").read_text(encoding="utf-8")
    table = report.split("## Policies side by side", 1)[1].split("\n### ", 1)[0]
    rows = [r for r in table.splitlines() if r.startswith("| ")]
    ran = results.manifest.policy_labels
    assert len(rows) == len(ran) + 1 and {len(r.strip("|").split(" | ")) for r in rows} <= set(range(2, 13))
    assert ("| passable without memory |" in rows[0]) == ("none" in ran)  # the control's column when it ran
    glance = report.split("## At a glance", 1)[1].split("\n## ", 1)[0]
    cells = [c.strip() for r in glance.splitlines()[4:] if r.startswith("| [") for c in r.strip("|").split(" | ")[1:]]
    assert len(cells) == len(FILES) * len(ran) and max(len(c) for c in cells) <= 100
    assert "`window`: left the window" in glance and "`not-stored`: never stored" in glance  # the legend


def refusing(results: Results, probe: str, prohibition: str) -> set[str]:
    """The policies whose view holds the asked prohibition and whose answer honours it."""
    found = rows(results, "retrieval-words", probe, "prohibition", prohibition)
    return {r.policy for r in found.itertuples() if yes(r.in_view) and yes(r.in_answer)}


@pytest.mark.slow
def test_retrieval_words_a_repeated_question_recovers_the_prohibition(results: Results) -> None:
    assert refusing(results, "restart-words", "no-restart") == WHOLE | {
        "token-budget",
        "summary-buffer",
        "retrieval",
    }
    notes = results.turns.query("chronology == 'retrieval-words' and policy == 'retrieval' and turn == 9").policy_note
    assert "turn 2 (score" in notes.iloc[0]
    view = results.view_at("retrieval-words", "retrieval", "reference", 1, turn=9)["view"]
    retrieved = [m["content"] for m in view if m["origin"] == "retrieved" and m["role"] == "user"]
    assert retrieved == [
        "module=Billing; database=SQL Server 2022",
        "Never restart the production database during business hours.",
    ]


@pytest.mark.slow
def test_retrieval_words_a_paraphrased_question_misses_it(results: Results) -> None:
    assert refusing(results, "purge-paraphrase", "no-purge") == WHOLE | {"token-budget", "summary-buffer"}
    assert lost(results, "retrieval-words", "purge-paraphrase")["retrieval"] == "left the request window at turn 8"
    assert answers(results, "retrieval-words", 11)["retrieval"].startswith("Yes")


@pytest.mark.slow
def test_budget_cut_correction_token_budget_loses_the_whole_correcting_turn(results: Results) -> None:
    said = answers(results, "budget-cut-correction", 5)
    assert said["token-budget"] == "no database in my context"
    assert lost(results, "budget-cut-correction", "database", "current", "database=SQL Server 2022") == {
        "token-budget": "left the request window at turn 4",
        "bounded-facts": REJECTED_LONG,
        "bounded-facts:mode=provider": REJECTED_LONG,
    } | never_kept(3)
    correct = WHOLE | {
        "last-turns",
        "summary",
        "request-compaction",
        "retained-reduction",
        "retrieval",
        "summary-buffer",
        *WHOLE,
        *PIPELINE,
    }
    assert {p for p, text in said.items() if text == "database=SQL Server 2022"} == correct
    assert {p for p, text in said.items() if text == "database=PostgreSQL"} == FACTS | {"facts+window"}
    stale = flags(results, "budget-cut-correction", "database", "stale", "database=PostgreSQL", "in_view")
    assert {p for p, seen in stale.items() if seen} == WHOLE | PIPELINE | {"retrieval"} | FACTS | {"facts+window"}


REJECTED_LONG = (
    "not stored: the extraction of turn 3 was rejected (user message has 7631 characters; the limit is "
    "4096 and a message is never truncated; previous facts kept; no fallback applied) (turn 3)"
)


@pytest.mark.slow
def test_budget_cut_correction_the_budget_and_count_are_recorded(results: Results) -> None:
    t = results.turns.query("chronology == 'budget-cut-correction' and policy == 'token-budget'").set_index("turn")
    assert t.policy_note[4].startswith("budget 2048 tokens (0.25 of a declared 8192-token window), counted by tiktoken")
    assert t.policy_note[4].endswith("0 of 3 earlier turns fit") and t.tiktoken_tokens[3] > 2048
    buffer = results.turns.query("chronology == 'budget-cut-correction' and policy == 'summary-buffer'").set_index(
        "turn"
    )
    assert buffer.policy_note[4].endswith("folded turn 3 into the summary")


# --- the agent chronologies (tool steps) ----------------------------------------------------------

# The policies that still send the early turns of the two agent traces at their probes: full
# history, BM25 retrieval (each question shares words with the turn that matters), and
# clear-tool-uses at its default trigger (100,000 tokens, never reached: it sends the whole history),
# and tool-result-compaction, which collapses old tool groups but keeps every user message and reply.
AGENT_KEEPING = {"full-history", "retrieval", "clear-tool-uses", "tool-result-compaction"}


def met(results: Results, chronology: str, probe: str) -> set[str]:
    """The policies whose answer met every offline expectation of the probe."""
    found = rows(results, chronology, probe, "expect")
    return {r.policy for r in found.itertuples() if yes(r.passed)}


@pytest.mark.slow
@pytest.mark.parametrize("chronology", ["coding-agent", "ops-agent"])
def test_agent_traces_no_policy_splits_a_tool_group(results: Results, chronology: str) -> None:
    t = results.turns
    assert t[t.chronology == chronology].group_violations.isna().all()


@pytest.mark.slow
def test_coding_agent_the_changed_file_lives_only_where_its_tool_result_is_sent(results: Results) -> None:
    assert met(results, "coding-agent", "changed-file") == AGENT_KEEPING
    said = answers(results, "coding-agent", 6)
    assert {p for p, text in said.items() if text == "file=billing/rounding.py"} == AGENT_KEEPING
    assert {p for p, text in said.items() if text == "no file in my context"} == set(POLICIES) - AGENT_KEEPING


@pytest.mark.slow
def test_coding_agent_the_generated_file_prohibition_survives_where_turn_1_is_sent(results: Results) -> None:
    # summary-buffer's and compaction-pipeline's summaries carry the prohibition's clause
    assert keeping(results, "coding-agent", "edit-generated") == AGENT_KEEPING | {
        "summary-buffer",
        "compaction-pipeline",
    }
    causes = rows(results, "coding-agent", "edit-generated", "prohibition").set_index("policy").cause.to_dict()
    assert {p: causes[p] for p in ("last-turns", "summary", "bounded-facts", "retained-reduction", "token-budget")} == {
        "last-turns": "window",
        "summary": "summary",
        "bounded-facts": "not-stored",
        "retained-reduction": "reduction",
        "token-budget": "window",
    }


@pytest.mark.slow
def test_ops_agent_the_prohibition_before_29_tool_calls_and_the_ticket_id(results: Results) -> None:
    assert keeping(results, "ops-agent", "restart-production") == AGENT_KEEPING
    # the ticket id was declared only in a tool result, which tool-result-compaction collapsed into
    # a [Tool Calls] note naming the call and its outcome
    assert met(results, "ops-agent", "ticket") == AGENT_KEEPING - {"tool-result-compaction"}
    said = answers(results, "ops-agent", 10)
    assert {p for p, text in said.items() if text == "ticket=CHG-20931"} == AGENT_KEEPING - {"tool-result-compaction"}


OPS_STALE, OPS_FORGOTTEN = "replica=prod-db-3", "replica=prod-db-2"


@pytest.mark.slow
def test_ops_agent_the_replica_a_tool_result_showed_wrong_stays_where_its_turn_is_sent(results: Results) -> None:
    # declared at turn 8, contradicted by a host_stats result, corrected at turn 9
    seen = flags(results, "ops-agent", "ticket", "stale", OPS_STALE, "in_view")
    assert {p for p, kept in seen.items() if kept} == set(POLICIES) - FACTS - NONE - {"summary", "token-budget"}
    seen = flags(results, "ops-agent", "restart-production", "stale", OPS_STALE, "in_view")
    assert {p for p, kept in seen.items() if kept} == WHOLE
    kept = results.residue[(results.residue.chronology == "ops-agent") & (results.residue.change == "kept")]
    assert set(kept.subject) == {OPS_STALE} and set(kept.turn) == {9}
    places = {place: set(found.policy) for place, found in kept.groupby("where")}
    # a history (retrieval's index) keeps it by design; the two summaries written before the
    # correction keep it until turn 11: a finding
    assert places == {
        "history": set(POLICIES) - FACTS - NONE - {"summary", "retrieval", "summary-buffer"},
        "index": {"retrieval"},
        "summary": {"summary-buffer", "compaction-pipeline"},
    }


@pytest.mark.slow
def test_ops_agent_forgetting_the_replica_clears_every_history_summary_and_store(results: Results) -> None:
    assert set(answers(results, "ops-agent", 14).values()) == {"no replica in my context"}
    assert met(results, "ops-agent", "replica-after-forget") == set(POLICIES)
    for check, subject in (("stale", OPS_STALE), ("forgotten", OPS_FORGOTTEN)):
        found = rows(results, "ops-agent", "replica-after-forget", check, subject)
        assert set(found.policy) == set(POLICIES)
        assert not any(yes(v) for column in ("in_view", "in_answer", "in_retained") for v in found[column])
    residue = results.residue[results.residue.chronology == "ops-agent"]
    assert OPS_FORGOTTEN not in set(residue.subject)  # no policy kept the forgotten value anywhere
    ends = residue[residue.change != "kept"]
    assert set(ends[ends.turn == 13].change) == {"cleared by a forget"}
    # the forget clears the prohibition stated before it too (the seed's rule, whichever key it names)
    assert not keeping(results, "ops-agent", "replica-after-forget")


# clear-tool-uses with its trigger lowered below the two traces' views, as their descriptions say.
CLEARING = ["clear-tool-uses:trigger=4000", "clear-tool-uses:trigger=4000,exclude_tools=apply_patch"]
OPS_CLEARING = "clear-tool-uses:trigger=8000"


@pytest.fixture(scope="module")
def cleared(tmp_path_factory: pytest.TempPathFactory) -> Results:
    files = [SHIPPED / "coding-agent.yaml", SHIPPED / "ops-agent.yaml"]
    options = [option for spec in [*CLEARING, OPS_CLEARING] for option in ("--policy", spec)]
    return load_results(run_through_cli(tmp_path_factory.mktemp("cleared"), files, "cleared", *options))


@pytest.mark.slow
def test_coding_agent_clearing_the_patch_result_loses_the_file_and_its_evidence(
    cleared: Results,
) -> None:
    said = answers(cleared, "coding-agent", 6)
    assert said[CLEARING[0]] == "no file in my context" and said[CLEARING[1]] == "file=billing/rounding.py"
    expect = rows(cleared, "coding-agent", "changed-file", "expect").set_index("policy")
    assert not yes(expect.passed[CLEARING[0]]) and yes(expect.passed[CLEARING[1]])
    # the evidence is turn 2's messages: its user message and the patch's result, cleared in the view
    assert not yes(expect.in_view[CLEARING[0]]) and expect.cause[CLEARING[0]] == "tool-clear"
    assert yes(expect.in_view[CLEARING[1]])
    assert keeping(cleared, "coding-agent", "edit-generated") == set(CLEARING) | {OPS_CLEARING}


@pytest.mark.slow
def test_ops_agent_clearing_loses_the_ticket_from_turn_7_and_keeps_refusing(cleared: Results) -> None:
    assert answers(cleared, "ops-agent", 10)[OPS_CLEARING] == "no ticket in my context"
    assert OPS_CLEARING in keeping(cleared, "ops-agent", "restart-production")
    t = cleared.turns
    notes = t[(t.chronology == "ops-agent") & (t.policy == OPS_CLEARING)].set_index("turn").policy_note
    assert "trigger 8000 not exceeded: cleared_tool_uses=0" in notes[6]
    assert "exceeds trigger 8000: cleared_tool_uses=18, cleared_input_tokens=" in notes[7]
    view = cleared.view_at("ops-agent", OPS_CLEARING, "reference", 1, turn=10)["view"]
    results_sent = {m["tool_call_id"]: m["content"] for m in view if m["role"] == "tool"}
    assert results_sent["call_13"] == "[cleared]" and len(results_sent) == 28  # every result keeps its message
    assert t[t.chronology == "ops-agent"].group_violations.isna().all()
