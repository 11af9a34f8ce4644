"""What counts as an answer saying it does not know (`expect: {abstain: true}`)."""

from __future__ import annotations

import pytest

from harness.models.reference import NOTHING, YES
from harness.run.abstention import ABSTENTION, PHRASINGS, abstains

ABSTAINING = [
    "I don't know.",
    "I do not know where you live.",
    "I don’t recall you saying.",
    "I'm not sure.",
    "I am not certain about that.",
    "I don't have that information.",
    "I do not have enough details to answer.",
    "I have no record of your address.",
    "I cannot tell from our conversation.",
    "I'm unable to determine that.",
    "There is not enough information to answer.",
    "There is no information about your address.",
    "That cannot be determined.",
    "You haven't mentioned where you live.",
    "You never told me.",
    "It is not mentioned in our conversation.",
    NOTHING,  # the reference model's
    "no database in my context",  # the reference model's, for a key it cannot see
    "This question is unanswerable.",
]
ANSWERING = [
    "You live in Lisbon.",
    "I know: you live in Lisbon.",
    "I'm sure it is Lisbon.",
    "You mentioned Lisbon last spring.",
    "database=PostgreSQL",
    "Noted.",
    YES,  # "nothing in my context forbids it" is an answer, not an abstention
    'No — "never restart production"',
    "There is no information missing: Lisbon.",
]


@pytest.mark.parametrize("answer", ABSTAINING)
def test_an_answer_saying_it_does_not_know_abstains(answer: str) -> None:
    assert abstains(answer)


@pytest.mark.parametrize("answer", ANSWERING)
def test_an_answer_that_answers_does_not_abstain(answer: str) -> None:
    assert not abstains(answer)


def test_every_phrasing_recognises_one_of_the_examples() -> None:
    """No phrasing is dead weight: each is what makes some example abstain."""
    for phrasing, pattern in zip(PHRASINGS, ABSTENTION, strict=True):
        assert any(pattern.search(answer) for answer in ABSTAINING), phrasing
