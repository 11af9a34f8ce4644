"""Patterns made of text: the text itself, whitespace loosened, nothing else widened."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from harness.chronology.patterns import compile_pattern
from harness.importing.literal import MAX_SPAN, alternatives, distinctive_span, literal


@given(st.text(min_size=1, max_size=60).filter(lambda t: t.strip()))
def test_a_literal_matches_its_own_text(text: str) -> None:
    assert compile_pattern(literal(text)).search(text)


def test_metacharacters_are_literal_and_whitespace_any_run() -> None:
    pattern = compile_pattern(literal("Cost (USD)? $5.00 [net]"))
    assert pattern.search("Cost  (USD)?\n$5.00 [net]")
    assert not pattern.search("Cost USD $5000 net")


def test_alternatives_match_whole_words_ignoring_case() -> None:
    pattern = compile_pattern(alternatives(["Tan", "C++"]) or "")
    assert pattern.search("mr tan") and pattern.search("in C++ today")
    assert not pattern.search("tangent")


def test_alternatives_too_long_for_a_pattern_are_none() -> None:
    assert alternatives(["x" * 600, "y" * 600]) is None


def test_the_distinctive_span_is_the_longest_sentence_cut_at_a_word() -> None:
    assert (
        distinctive_span("Hi. Always answer in three bullet points. Thanks!") == "Always answer in three bullet points."
    )
    long = "word " * 40
    span = distinctive_span(long)
    assert len(span) <= MAX_SPAN and long.startswith(span) and span.endswith("word")
