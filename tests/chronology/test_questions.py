"""The reference reader's question rules (harness.chronology.questions), as a specification."""

from __future__ import annotations

import re
import subprocess
import sys

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


# The sentence rule as first written: a lazy prefix, so quadratic in a long run of closing marks
# not followed by white space; on short texts, the definition the reader must still follow.
LAZY_SENTENCE = re.compile(r"[^\n]*?(?:[.!?…]+(?=\s|$)|(?=\n)|$)")


def lazy_sentences(text: str) -> list[tuple[int, str]]:
    found = []
    for match in LAZY_SENTENCE.finditer(text):
        piece = match.group()
        if piece.strip():
            found.append((match.start() + len(piece) - len(piece.lstrip()), piece.strip()))
    return found


@given(st.text(alphabet="ab .!?…\n\r\t\x85\u2028;", max_size=40))
def test_sentences_end_where_the_rule_says(text: str) -> None:
    assert [(s.start, s.text) for s in sentences(text)] == lazy_sentences(text)


# Megabyte-long single words of closing marks, each run followed by a letter, not a space.
LONG_WORDS = '["." * 10**6 + "x", "?" * 10**6 + "x", "…" * (3 * 10**5) + "x", ".!?" * (3 * 10**5) + "x"]'


def test_a_megabyte_long_word_of_closing_marks_is_read_in_linear_time() -> None:
    """Read in a process of its own: the quadratic rule took hours on each, this one milliseconds."""
    script = (
        "from harness.chronology.questions import clauses, permission_request, question\n"
        f"for word in {LONG_WORDS}:\n"
        "    text = 'Hello. ' + word + '\\nCan I restart it?'\n"
        "    assert question(text).text == 'Can I restart it?'\n"
        "    assert permission_request(text).verb == 'restart' and len(clauses(text)) == 3\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
