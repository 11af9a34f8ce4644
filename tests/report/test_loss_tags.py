"""The glance's tags: each cause of a loss, from probes.csv's `cause`, with the turns of the probes
that found it (`window@5`), in a cell of at most 100 characters, and a legend naming each tag used."""

from __future__ import annotations

import pytest

from harness.report.glance import CAUSE_WORDS, legend
from harness.report.loss_tags import LIMIT, TAGS, tags_cell

P, V = "prohibition", "current"


@pytest.mark.parametrize(
    ("cause", "tag"),
    [("window", "window@5"), ("eviction", "evicted@5"), ("summary", "summary@5"), ("forget", "forget@5")],
)
def test_each_cause_is_its_tag_at_the_probes_turn(cause: str, tag: str) -> None:
    assert tags_cell({("p", 5): {cause: {(P, "no-restart"): 1}}}, 1) == f"1 prohibition lost: {tag}"


def test_probes_losing_the_same_way_share_a_tag_and_each_subject_counts_once() -> None:
    found = {
        ("a", 5): {"window": {(P, "no-restart"): 1, (V, "db=PostgreSQL"): 1}},
        ("b", 9): {"window": {(P, "no-restart"): 1, (V, "db=MySQL"): 1}, "eviction": {(V, "module=Billing"): 1}},
    }
    assert tags_cell(found, 1) == "1 prohibition, 2 values lost: window@5,9 · evicted@9"


def test_another_sessions_subject_is_tagged_without_a_turn_and_not_counted_as_lost() -> None:
    assert tags_cell({("logs", 2): {"other-session": {(V, "module=Billing"): 1}}}, 1) == "other session"
    found = {("logs", 2): {"other-session": {(V, "module=Billing"): 1}}, ("x", 4): {"forget": {(V, "db=a"): 1}}}
    assert tags_cell(found, 1) == "1 value lost: other session · forget@4"


def test_with_repetitions_a_tag_says_in_how_many_at_most() -> None:
    found = {("a", 5): {"window": {(P, "x"): 2, (V, "db=a"): 1}}}
    assert tags_cell(found, 3) == "1 prohibition, 1 value lost: window@5 2/3"


def test_a_long_cell_is_shortened_to_turn_ranges_then_to_its_first_tags() -> None:
    many = {(f"p{t}", t): {"window": {(V, f"k{t}=v"): 1}} for t in range(100, 140)}
    cell = tags_cell(many, 1)
    assert cell == "40 values lost: window@100–139 (40 probes)"
    causes = {(f"p{n}", n): {cause: {(V, f"k{n}=v"): 1}} for n, cause in enumerate(TAGS, start=100)}
    cell = tags_cell(causes, 1)
    assert len(cell) <= LIMIT and cell.endswith("more causes") and cell.startswith("12 values lost: window@100")


def test_the_legend_names_each_tag_used_and_only_those() -> None:
    lines = legend(["1 value lost: window@5 · evicted@7", "other session", "nothing lost"])
    text = "\n".join(lines)
    for cause in ("window", "eviction", "other-session"):
        assert f"`{TAGS[cause]}`: {CAUSE_WORDS[cause]}" in text
    assert "`summary`" not in text and "`forget`" not in text
    assert legend(["nothing lost", "nothing checked"]) == []


def test_every_cause_the_checks_record_has_a_tag_and_words() -> None:
    assert set(TAGS) == set(CAUSE_WORDS)
