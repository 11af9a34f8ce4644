"""The policies people deploy (summary-buffer, token-budget, retrieval, facts+window): each one's
request view and retained state turn by turn, what it drops, and what it notes."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.base.errors import InputError
from harness.base.messages import Message
from harness.chronology import Forget
from harness.policy import Drop, Outcome, PolicyRegistry, plugin_problem
from harness.policy.tokens import TokenCounter
from policies.bounded_facts import BoundedFacts
from policies.facts_window import FactsWindow
from policies.full_history import FullHistory
from policies.retrieval import Retrieval, ranked, words
from policies.summary import SUMMARY_HEADER, summarizer_messages
from policies.summary_buffer import SummaryBuffer
from policies.token_budget import TokenBudget
from tests.conftest import (
    AGENT,
    BUILTIN_POLICIES,
    COMPARISON,
    CONTROL,
    DEPLOYED,
    SEED,
    builtin_registry,
    contents,
    user,
)
from tests.policy.test_bm25 import bm25_scores
from tests.policy.test_policies import FIVE, SYS, FakeAux, replay

# With cl100k_base: "SYS" is 1 token, "u1" and "a1" are 2; each message adds 4 of framing and a
# request 3. So system + current message = 3 + 5 + 6 = 14 tokens, and each earlier turn 12.
ALONE, PER_TURN = 14, 12


def outcome_of(policy, number: int, text: str, aux: FakeAux | None = None) -> Outcome:
    """View then answer one more turn (the answer is `a<number>`); the policy's outcome."""
    turn = user(number, text)
    policy.view(turn)
    return policy.after_answer(turn, f"a{number}", aux or FakeAux())


# --- token-budget ------------------------------------------------------------------------------


def test_the_counts_the_budget_tests_rely_on() -> None:
    counter = TokenCounter()
    assert counter.budget_count([SYS, Message("user", "u5")]).tokens == ALONE
    assert (
        counter.budget_count([Message("user", "u1"), Message("assistant", "a1")], whole_request=False).tokens
        == PER_TURN
    )


@pytest.mark.parametrize(
    "budget, views",
    [
        (
            ALONE + 2 * PER_TURN,
            {
                1: ["SYS", "u1"],
                2: ["SYS", "u1", "a1", "u2"],
                3: ["SYS", "u1", "a1", "u2", "a2", "u3"],
                4: ["SYS", "u2", "a2", "u3", "a3", "u4"],
                5: ["SYS", "u3", "a3", "u4", "a4", "u5"],
            },
        ),
        (ALONE + 2 * PER_TURN - 1, {3: ["SYS", "u2", "a2", "u3"], 5: ["SYS", "u4", "a4", "u5"]}),
        (ALONE, {5: ["SYS", "u5"]}),
    ],
)
def test_token_budget_sends_the_most_recent_whole_turns_that_fit(budget: int, views: dict[int, list[str]]) -> None:
    seen = replay(TokenBudget(SYS, budget=budget), FIVE)
    for turn, expected in views.items():
        assert seen[turn - 1][0] == expected, f"turn {turn}"


def test_token_budget_keeps_the_history_whole() -> None:
    assert replay(TokenBudget(SYS, budget=ALONE), FIVE)[-1][1] == [f"{r}{n}" for n in range(1, 6) for r in "ua"]


def test_token_budget_stops_at_the_first_turn_that_does_not_fit() -> None:
    policy = TokenBudget(SYS, budget=ALONE + 2 * PER_TURN)
    replay(policy, ["u1", "x" * 400, "u3"])  # the long turn 2 does not fit; turn 1 would, but is older
    assert contents(policy.view(user(4, "u4"))) == ["SYS", "u3", "a3", "u4"]


def test_token_budget_always_sends_system_and_current_message_and_says_when_they_exceed_it() -> None:
    policy = TokenBudget(SYS, budget=5)
    replay(policy, ["u1"])
    assert contents(policy.view(user(2, "u2"))) == ["SYS", "u2"]
    assert "view 14 tokens (over budget" in outcome_of(policy, 3, "u3").note


def test_token_budget_notes_the_budget_and_the_count_it_used() -> None:
    policy = TokenBudget(SYS, budget=ALONE + PER_TURN)
    replay(policy, ["u1", "u2"])
    note = outcome_of(policy, 3, "u3").note
    assert note == (
        f"budget {ALONE + PER_TURN} tokens, counted by tiktoken cl100k_base; "
        f"view {ALONE + PER_TURN} tokens; 1 of 2 earlier turns fit"
    )


def test_token_budget_as_a_fraction_of_a_declared_window() -> None:
    policy = TokenBudget(SYS, window=100, fraction=0.5)
    assert policy.budget == 50 and "0.5 of a declared 100-token window" in outcome_of(policy, 1, "u1").note
    assert TokenBudget(SYS, budget=30, window=100, fraction=0.5).budget == 30  # an explicit budget wins
    assert TokenBudget(SYS).budget == 2048  # the default: a quarter of 8192


def test_token_budget_falls_back_to_the_estimate_when_the_encoding_is_unavailable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("harness.policy.counters.TokenCounter", lambda: TokenCounter("no_such_encoding"))
    policy = TokenBudget(SYS, budget=3)  # characters/4: "SYS" + "u1" = 5 chars -> 2; each earlier turn adds 1
    replay(policy, ["u1", "u2"])
    assert contents(policy.view(user(3, "u3"))) == ["SYS", "u2", "a2", "u3"]
    assert "counted by characters/4 estimate (no_such_encoding unavailable offline)" in outcome_of(policy, 3, "u3").note


@settings(max_examples=60, deadline=None)
@given(
    texts=st.lists(st.text(min_size=1, max_size=60), min_size=1, max_size=8), budget=st.integers(1, 200)
)  # 0: the window share
def test_token_budget_views_fit_or_hold_only_what_is_always_sent(texts: list[str], budget: int) -> None:
    policy, counter = TokenBudget(SYS, budget=budget), TokenCounter()
    for number, text in enumerate(texts, start=1):
        turn = user(number, text)
        view = policy.view(turn)
        assert counter.budget_count(view).tokens <= budget or len(view) == 2  # system + current
        history = contents(policy.retained())
        sent = contents(view)[1:-1]
        assert sent == (history[len(history) - len(sent) :] if sent else [])  # a contiguous tail of whole turns
        policy.after_answer(turn, f"a{number}", FakeAux())


@pytest.mark.parametrize(
    "text, message",
    [
        ("token-budget:fraction=1.5", "fraction: must be at most 1.0"),
        ("token-budget:fraction=half", "'half' is not a number"),
        ("token-budget:budget=-1", "budget: must be at least 0"),
        ("token-budget:fraction=nan", "fraction: must be a finite number"),
    ],
)
def test_token_budget_parameters_are_checked_when_parsed(text: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        builtin_registry().parse(text)


def test_a_float_parameter_is_recorded_as_given() -> None:
    spec = builtin_registry().parse("token-budget:window=4096,fraction=0.5")
    assert spec.label == "token-budget:window=4096,fraction=0.5" and spec.params["fraction"] == 0.5


# --- retrieval ---------------------------------------------------------------------------------

PROHIBITION = "Never restart production during business hours."
CHATTER = [PROHIBITION, "module=Billing", "The invoice run is slow.", "Backups failed twice.", "Disk is full."]


def test_retrieval_adds_the_earlier_turn_that_shares_the_questions_words() -> None:
    policy = Retrieval(SYS)
    replay(policy, CHATTER)
    view = policy.view(user(6, "Can I restart production now?"))
    assert contents(view) == [
        "SYS",
        PROHIBITION,
        "a1",
        "The invoice run is slow.",
        "a3",
        "Backups failed twice.",
        "a4",
        "Disk is full.",
        "a5",
        "Can I restart production now?",
    ]
    assert [m.origin for m in view[1:3]] == ["retrieved", "retrieved"]
    assert {m.origin for m in view[3:-1]} == {"history"}


def test_retrieval_misses_a_paraphrase_bm25_shares_no_word_with() -> None:
    policy = Retrieval(SYS)
    replay(policy, CHATTER)
    view = policy.view(user(6, "Can I reboot the live system?"))  # nor does "restarts" match "restart"
    assert contents(view)[1:3] == ["The invoice run is slow.", "a3"]
    outcome = policy.after_answer(user(6, "Can I reboot the live system?"), "a6", FakeAux())
    assert outcome.note == "BM25 (bm25s) retrieved none of 2 earlier turns outside the window"


def test_retrieval_keeps_retrieved_turns_in_their_original_order_and_at_most_k() -> None:
    texts = ["disk alpha", "disk alpha beta", "u3", "disk alpha beta gamma", "u5", "u6", "u7"]
    policy = Retrieval(SYS, turns=2, k=2)
    replay(policy, texts)
    view = policy.view(user(8, "disk alpha beta gamma?"))
    retrieved = [m.content for m in view if m.origin == "retrieved" and m.role == "user"]
    assert retrieved == ["disk alpha beta", "disk alpha beta gamma"]


def test_retrieval_view_and_retained_state_turn_by_turn() -> None:
    seen = replay(Retrieval(SYS, turns=1, k=1), ["never restart", "u2", "u3", "restart now?"])
    assert [view for view, _ in seen] == [
        ["SYS", "never restart"],
        ["SYS", "never restart", "a1", "u2"],
        ["SYS", "u2", "a2", "u3"],  # turn 1 is outside the window and shares no word with "u3"
        ["SYS", "never restart", "a1", "u3", "a3", "restart now?"],  # retrieved, before the window
    ]
    assert [retained for _, retained in seen][-1] == [
        "never restart",
        "a1",
        "u2",
        "a2",
        "u3",
        "a3",
        "restart now?",
        "a4",
    ]


def test_retrieval_notes_the_turns_and_their_scores() -> None:
    policy = Retrieval(SYS)
    replay(policy, CHATTER)
    note = outcome_of(policy, 6, "Can I restart production now?").note
    assert note.startswith("BM25 (bm25s) retrieved turn 1 (score ") and note.endswith(
        "of 2 earlier turns outside the window"
    )


def test_retrieval_keeps_the_history_whole_and_drops_nothing() -> None:
    policy = Retrieval(SYS, turns=1, k=0)
    seen = replay(policy, FIVE)
    assert seen[-1] == (["SYS", "u4", "a4", "u5"], [f"{r}{n}" for n in range(1, 6) for r in "ua"])
    assert outcome_of(policy, 6, "u6").dropped == []


def test_bm25_ranks_by_the_package_scores_with_ties_to_the_later_turn() -> None:
    scores = bm25_scores(
        words(["restart production", "invoice", "restart production"]), words(["restart production?"])[0]
    )
    assert scores[0] == scores[2] > 0 == scores[1]
    assert ranked(scores, 1) == [2] and ranked(scores, 5) == [0, 2]
    assert words(["the a", "of"]) == [[], []]  # stop words and one-letter words are no words
    assert bm25_scores([[], []], ["restart"]) == [0.0, 0.0]  # no word in any document: no index at all
    assert bm25_scores([["restart"]], []) == [0.0]


# --- summary-buffer ----------------------------------------------------------------------------


def test_summary_buffer_folds_the_oldest_turns_when_the_verbatim_part_exceeds_the_budget() -> None:
    aux = FakeAux(["s1", "s2", "s3"])
    seen = replay(SummaryBuffer(SYS, budget=2 * PER_TURN, turns=1), FIVE, aux)
    assert seen[0] == (["SYS", "u1"], ["u1", "a1"])
    assert seen[1] == (["SYS", "u1", "a1", "u2"], ["u1", "a1", "u2", "a2"])
    assert seen[2] == (["SYS", "u1", "a1", "u2", "a2", "u3"], ["s1", "u2", "a2", "u3", "a3"])  # 3 turns > 24 tokens
    assert seen[3] == (["SYS", f"{SUMMARY_HEADER}\ns1", "u2", "a2", "u3", "a3", "u4"], ["s2", "u3", "a3", "u4", "a4"])
    assert seen[4][0] == ["SYS", f"{SUMMARY_HEADER}\ns2", "u3", "a3", "u4", "a4", "u5"]
    assert aux.calls == [("summarizer", None)] * 3 and aux.summaries == []


@settings(max_examples=60, deadline=None)
@given(
    texts=st.lists(st.text(min_size=1, max_size=60), min_size=1, max_size=8),
    budget=st.integers(1, 120),
    floor=st.integers(0, 3),
)
def test_summary_buffer_verbatim_part_fits_its_budget_or_is_at_its_floor(
    texts: list[str], budget: int, floor: int
) -> None:
    policy, counter = SummaryBuffer(SYS, budget=budget, turns=floor), TokenCounter()
    for number, text in enumerate(texts, start=1):
        outcome = outcome_of(policy, number, text, FakeAux(["s"] * len(texts)))
        verbatim = [m for m in policy.retained() if m.origin == "history"]
        turns = sum(m.role == "user" for m in verbatim)
        assert counter.budget_count(verbatim, whole_request=False).tokens <= budget or turns == min(floor, number)
        assert outcome.stop is None and turns >= min(floor, number)


def test_summary_buffer_asks_the_summary_policys_summarizer_for_each_folded_exchange() -> None:
    class Recording(FakeAux):
        def call(self, role, messages, schema=None, reference=None):  # type: ignore[no-untyped-def]
            self.requests.append(tuple(messages))
            return super().call(role, messages, schema, reference)

    aux = Recording(["s1"])
    aux.requests = []
    policy = SummaryBuffer(SYS, budget=PER_TURN, turns=1)
    replay(policy, ["u1", "u2"], aux)
    assert aux.requests == [summarizer_messages(None, "u1", "a1", 700)]


def test_summary_buffer_never_keeps_fewer_than_its_verbatim_turns() -> None:
    seen = replay(SummaryBuffer(SYS, budget=1, turns=2), FIVE, FakeAux(["s1", "s2", "s3"]))
    assert seen[-1][1] == ["s3", "u4", "a4", "u5", "a5"]


def test_summary_buffer_reports_what_folding_dropped_and_notes_it() -> None:
    policy = SummaryBuffer(SYS, budget=PER_TURN, turns=1)
    replay(policy, ["u1"], FakeAux())
    outcome = outcome_of(policy, 2, "u2", FakeAux(["s1"]))
    why = "absent from the summary written at turn 2"
    assert outcome.dropped == [Drop("u1", why, "summary"), Drop("a1", why, "summary")]
    assert (
        outcome.note
        == f"verbatim part {PER_TURN} of {PER_TURN} tokens (tiktoken cl100k_base); folded turn 1 into the summary"
    )


@pytest.mark.parametrize(
    "summary, stop", [("", "summary_empty"), (" \n", "summary_empty"), ("x" * 701, "summary_too_long:701")]
)
def test_summary_buffer_stops_like_summary_and_keeps_its_state(summary: str, stop: str) -> None:
    policy = SummaryBuffer(SYS, budget=PER_TURN, turns=1)
    replay(policy, ["u1"])
    assert outcome_of(policy, 2, "u2", FakeAux([summary])) == Outcome(stop=stop)
    assert contents(policy.retained()) == ["u1", "a1"]  # no truncation, no replacement


def test_summary_buffer_forget_discards_summary_and_verbatim_turns() -> None:
    policy = SummaryBuffer(SYS, budget=PER_TURN, turns=1)
    replay(policy, ["u1", "u2"], FakeAux(["s1"]))
    outcome = policy.forget(Forget(number=3, line=3, key=None))
    assert policy.retained() == [] and {d.cause for d in outcome.dropped} == {"forget"}
    assert contents(policy.view(user(4, "u4"))) == ["SYS", "u4"]


def test_summary_buffer_sessions_have_their_own_summary_and_buffer() -> None:
    policy, aux = SummaryBuffer(SYS, budget=PER_TURN, turns=1), FakeAux(["s-support"])
    for turn in (user(1, "s1", "support"), user(2, "l1", "logs"), user(3, "s2", "support")):
        policy.view(turn)
        policy.after_answer(turn, "a", aux)
    assert contents(policy.view(user(4, "l2", "logs"))) == ["SYS", "l1", "a", "l2"]
    assert contents(policy.view(user(5, "s3", "support")))[1:] == [f"{SUMMARY_HEADER}\ns-support", "s2", "a", "s3"]


# --- facts+window ------------------------------------------------------------------------------


def test_facts_window_sends_the_window_then_the_facts_block_then_the_current_message() -> None:
    policy = FactsWindow(SYS, turns=1)
    seen = replay(policy, ["module=Billing", "u2", "u3"])
    view = policy.view(user(4, "Which module?"))
    assert [m.origin for m in view] == ["system", "history", "history", "facts", "current"]
    assert contents(view)[1:3] == ["u3", "a3"] and "module=Billing" in view[3].content
    assert seen[0][0] == ["SYS", "module=Billing"]  # no block before any fact


def test_facts_window_view_turn_by_turn() -> None:
    policy, views = FactsWindow(SYS, turns=1), []
    for number, text in enumerate(["module=Billing", "u2", "database=SQL Server"], start=1):
        turn = user(number, text)
        views.append(["BLOCK" if m.origin == "facts" else m.content for m in policy.view(turn)])
        policy.after_answer(turn, f"a{number}", FakeAux())
    assert views == [
        ["SYS", "module=Billing"],
        ["SYS", "module=Billing", "a1", "BLOCK", "u2"],
        ["SYS", "u2", "a2", "BLOCK", "database=SQL Server"],
    ]
    assert [f.key for f in policy.facts.store.facts] == ["module", "database"]


def test_facts_window_retains_the_facts_and_the_whole_history() -> None:
    seen = replay(FactsWindow(SYS, turns=1), ["module=Billing", "u2"])
    assert seen[-1][1] == ['module=Billing (user wrote "module=Billing" at turn 1)', "module=Billing", "a1", "u2", "a2"]


def test_facts_window_records_and_drops_as_its_store_bounded_facts_does() -> None:
    # One store, one reason: what the shared store evicted, replaced or never took reads alike in
    # both policies (the window's history explains only its own session's departures).
    texts = ["constraint=never restart", "module=A; database=B", "version=1; customer=C", "constraint=restart at night"]
    window, store = FactsWindow(SYS), BoundedFacts(SYS, mode="provider")
    replay(window, texts)
    replay(store, texts)
    outcome, alone = outcome_of(window, 5, "priority=high"), outcome_of(store, 5, "priority=high")
    assert outcome.facts["admission"]["status"] == "accepted" and len(outcome.facts["facts"]) == 5
    assert outcome.dropped == alone.dropped
    assert [d.cause for d in outcome.dropped] == ["eviction", "not-stored"]


def test_bounded_facts_names_the_value_that_replaced_a_corrected_fact() -> None:
    policy = BoundedFacts(SYS)
    replay(policy, ["constraint=never restart"])
    (replaced, _) = outcome_of(policy, 2, "constraint=restart at night").dropped
    assert replaced == Drop(
        'constraint=never restart (user wrote "constraint=never restart" at turn 1)',
        "replaced in the fact store by the correction constraint=restart at night at turn 2",
        "replaced",
    )


def test_facts_window_notes_the_size_of_each_part() -> None:
    policy = FactsWindow(SYS, turns=1)
    replay(policy, ["module=Billing", "u2"])
    note = outcome_of(policy, 3, "u3").note
    block = policy.view(user(4, "u4"))[3].content
    assert note.startswith(f"facts block: {len(block)} chars, ") and note.endswith(
        "window of 1 turns: 4 chars, 12 tokens (tiktoken cl100k_base)"
    )


def test_facts_window_writer_reads_only_the_users_text() -> None:
    aux = FakeAux()
    replay(FactsWindow(SYS), ["module=Billing", "database=SQL Server 2022"], aux)
    assert aux.writer_inputs == ["module=Billing", "database=SQL Server 2022"]


def test_facts_window_forget_one_key_keeps_the_other_facts_and_clears_the_history() -> None:
    policy = FactsWindow(SYS)
    replay(policy, ["module=Billing; database=SQL Server 2022", "u2"])
    outcome = policy.forget(Forget(number=3, line=3, key="module"))
    assert [f["key"] for f in outcome.facts["facts"]] == ["database"]
    assert {d.cause for d in outcome.dropped} == {"forget"}
    assert contents(policy.retained()) == ['database=SQL Server 2022 (user wrote "database=SQL Server 2022" at turn 1)']


# --- the named set -----------------------------------------------------------------------------


def test_a_plain_run_runs_the_seeds_comparison_then_the_deployed_four_then_the_agents_then_the_control() -> None:
    assert [s.label for s in builtin_registry().default_specs()] == SEED + DEPLOYED + AGENT + CONTROL == COMPARISON


def test_the_agent_set_runs_the_seeds_comparison_and_then_its_members() -> None:
    assert [s.label for s in builtin_registry().parse_all(["agent"])] == SEED + AGENT


def test_the_seed_set_selects_exactly_the_seeds_comparison() -> None:
    assert [s.label for s in builtin_registry().parse_all(["seed"])] == SEED


def test_the_deployed_set_runs_the_seeds_comparison_and_then_the_four() -> None:
    labels = [s.label for s in builtin_registry().parse_all(["deployed"])]
    assert labels == SEED + DEPLOYED


def test_the_agent_set_runs_the_seeds_comparison_and_then_the_tool_result_policies() -> None:
    assert [s.label for s in builtin_registry().parse_all(["agent"])] == SEED + AGENT


def _plugin(name: str, sets: tuple[str, ...]) -> type:
    return type("Plugin", (FullHistory,), {"name": name, "sets": sets})


def test_a_plugin_runs_by_default_after_the_deployed_four_whatever_its_sets() -> None:
    registry = PolicyRegistry.from_mapping(
        {**BUILTIN_POLICIES, "zeta": _plugin("zeta", ()), "alpha": _plugin("alpha", ("mine",))}
    )
    others = sorted([*AGENT, "alpha", "zeta"])  # every policy outside seed, deployed and the control, by name
    assert [s.label for s in registry.default_specs()] == SEED + DEPLOYED + others + CONTROL
    assert [s.label for s in registry.parse_all(["mine"])] == SEED + ["alpha"]
    assert [s.label for s in registry.parse_all(["seed"])] == SEED


def test_a_plugin_in_the_set_opt_in_runs_only_when_it_or_its_set_is_named() -> None:
    registry = PolicyRegistry.from_mapping({**BUILTIN_POLICIES, "costly": _plugin("costly", ("opt_in", "mine"))})
    assert [s.label for s in registry.default_specs()] == COMPARISON
    assert not registry.runs_by_default("costly") and registry.runs_by_default("retrieval")
    assert [s.label for s in registry.parse_all(["mine"])] == SEED + ["costly"]
    assert [s.label for s in registry.parse_all(["costly"])] == ["costly"]


def test_a_plugin_cannot_join_the_seeds_comparison() -> None:
    registry = PolicyRegistry.from_mapping({**BUILTIN_POLICIES, "extra": _plugin("extra", ("seed",))})
    assert "`sets` names 'seed', the seed's comparison" in registry.broken["extra"]
    assert [s.label for s in registry.parse_all(["seed"])] == SEED  # a broken plug-in outside it does not block it
    with pytest.raises(InputError, match="broken policy plug-in: entry point 'extra'"):
        registry.default_specs()


def test_a_policy_named_beside_its_set_is_refused_as_given_twice() -> None:
    with pytest.raises(InputError, match="same policy \\(retrieval\\)"):
        builtin_registry().parse_all(["deployed", "retrieval"])


@pytest.mark.parametrize("name", DEPLOYED)
def test_each_deployed_policy_passes_the_load_checks_and_names_its_set(name: str) -> None:
    cls = builtin_registry().factories[name]
    assert plugin_problem(name, cls) is None and cls.sets == ("deployed",)


def test_sets_that_are_not_a_tuple_of_names_are_refused_at_load() -> None:
    broken = type("Variant", (FullHistory,), {"sets": "deployed"})
    assert "`sets` must be a tuple of set names" in plugin_problem("full-history", broken)


def test_harness_policies_says_which_sets_each_policy_belongs_to_and_that_it_runs_by_default() -> None:
    from click.testing import CliRunner

    from harness.cli.commands import main

    listed = CliRunner().invoke(main, ["policies"]).output
    entry = listed.split("token-budget  (budget=0, window=8192, fraction=0.25, counter=local, pin=false)\n", 1)[
        1
    ].split("\n")[:2]
    assert entry[1] == "    sets: deployed; runs in a plain run"
    assert (
        listed.split("last-turns  (turns=3, pin=false)\n", 1)[1].split("\n")[1] == "    sets: seed; runs in a plain run"
    )
