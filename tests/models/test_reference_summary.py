"""The reference summarizer's merge (`harness.models.reference_summary`): what it takes from the
user's text and from a system message the exchange added, and what it never reads."""

from __future__ import annotations

from harness.models.reference_summary import reference_summary

RULE = "Never run TRUNCATE on db-prod-shared."


def test_a_system_message_of_the_exchange_is_summarised_after_the_users_words() -> None:
    assert reference_summary(None, "database=db-staging", system_text=RULE) == f"database=db-staging\n{RULE}"


def test_a_summarised_system_rule_ages_out_like_any_statement() -> None:
    summary = reference_summary(None, "We clean up this week.", system_text=RULE)
    for text in ("s1.", "s2.", "s3."):
        summary = reference_summary(summary, text)
        assert RULE in summary
    assert RULE not in reference_summary(summary, "s4.")  # the last four statements are kept


def test_without_a_system_message_only_the_users_words_are_read() -> None:
    assert reference_summary("old", "new.") == "old\nnew."
