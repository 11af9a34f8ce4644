"""The reference reader's question rules (harness.chronology.questions), as a specification."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.base.messages import Message
from harness.chronology.questions import clauses, permission_request, question, sentences
from harness.models.reference import YES, answer

OPENERS = [
    "Can I",
    "Can we",
    "May I",
    "May we",
    "Could I",
    "Could we",
    "Should I",
    "Should we",
    "Is it ok to",
    "Is it okay to",
    "Am I allowed to",
]
FILLERS = ["", "please ", "just ", "also ", "now ", "safely ", "please just "]
VERBS = ["restart", "deploy", "delete", "drop", "purge", "reboot"]
# Sentences that hold no permission opener, no negation and none of the verbs.
STATEMENTS = [
    "It is Friday afternoon.",
    "The release went out at 4.2.1 yesterday.",
    "Thanks!",
    "Our team is on call.",
    "module=Billing; database=SQL Server 2022.",
    "Load is high today…",
]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("It is Friday afternoon. Can I deploy…?", "deploy"),  # issue 9, case 3: not at a line start
        ("Thanks. Should we please restart it?", "restart"),
        ("(Can I purge the cache?)", "purge"),
        ("Can I restart? May I just reboot?", "reboot"),  # the last one asks
        ("We can restart it.", None),  # not a question opener
        ("I know we said never restart, but can I restart?", None),  # not at a sentence start
    ],
)
def test_permission_request_anywhere_at_a_sentence_start(text: str, expected: str | None) -> None:
    found = permission_request(text)
    assert (found.verb if found else None) == expected


def test_the_sentence_ends_at_a_mark_followed_by_space_so_versions_stay_whole() -> None:
    assert [s.text for s in sentences("We run 4.2.1 now. Can I deploy?\nOk")] == [
        "We run 4.2.1 now.",
        "Can I deploy?",
        "Ok",
    ]


def test_clauses_cut_sentences_at_semicolons() -> None:
    assert [c.text for c in clauses("module=X; constraint=never restart. Done")] == [
        "module=X",
        "constraint=never restart.",
        "Done",
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("We are on 4.2. Which database?", "Which database?"),
        ("where are the logs", "where are the logs"),
        ("Noted, thanks.", None),
    ],
)
def test_question_is_the_last_questioning_sentence(text: str, expected: str | None) -> None:
    found = question(text)
    assert (found.text if found else None) == expected


@given(
    st.lists(st.sampled_from(STATEMENTS), max_size=3),
    st.sampled_from(OPENERS),
    st.sampled_from(FILLERS),
    st.sampled_from(VERBS),
    st.sampled_from(["?", " the service?", " it now?"]),
)
def test_any_opener_after_any_statements_is_a_permission_request(before, opener, filler, verb, rest) -> None:
    text = " ".join([*before, f"{opener} {filler}{verb}{rest}"])
    found = permission_request(text)
    assert found is not None and found.verb == verb
    assert text[found.sentence.start : found.sentence.end] == found.sentence.text


@given(
    st.lists(st.sampled_from(STATEMENTS), max_size=3),
    st.sampled_from(VERBS),
    st.sampled_from(["never", "do not", "must not", "can't"]),
    st.booleans(),
)
def test_the_answer_is_no_exactly_when_a_clause_in_view_negates_the_verb(before, verb, negation, forbidden) -> None:
    rule = f"We {negation} {verb} production during the day."
    view = [Message("system", "You are a support assistant.", origin="system")]
    view += [Message("user", s) for s in before]
    if forbidden:
        view.append(Message("user", f"module=Billing; {rule}"))
    view.append(Message("user", " ".join([*before, f"Can I {verb} it?"]), origin="current"))
    reply = answer(view)
    if forbidden:
        assert reply == f'No — "{rule.rstrip(".")}"'  # the clause, quoted without its full stop
    else:
        assert reply == YES


@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=200))
def test_sentences_are_stripped_pieces_of_the_text_in_order(text: str) -> None:
    found = sentences(text)
    assert all(s.text == text[s.start : s.end] == s.text.strip() and s.text for s in found)
    assert all(a.end <= b.start for a, b in zip(found, found[1:]))
