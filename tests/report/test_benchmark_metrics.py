"""The benchmarks' own scores (harness.report.benchmark_metrics), checked against what the published
evaluation code gives on the same examples: LoCoMo's figures were computed by running
task_eval/evaluation.py (snap-research/LoCoMo at 3eb6f2c) on these predictions."""

from __future__ import annotations

import pytest

from harness.report.benchmark_metrics import (
    Fraction,
    locomo_normalize,
    locomo_score,
    longmemeval_scores,
    mrcr_grade,
    multichallenge_scores,
)


@pytest.mark.parametrize(
    ("category", "answer", "prediction", "score"),
    [
        (4, "Sweden", "She moved from Sweden.", 0.4),
        (2, "7 May 2023", "On May 7, 2023", 0.8571428571428571),
        (1, "pottery, camping, painting", "painting and pottery", 0.4444444444444444),  # sub-answers at commas
        (3, "Likely yes; she enjoys it", "yes, likely", 1.0),  # the answer cut at its first `;`
        (5, "x", "Not mentioned in the conversation", 1.0),
        (5, "x", "She went hiking", 0.0),
        (4, "2022", "", 0.0),
        (2, "The week before 9 June 2023", "the week before June 9th, 2023", 0.8000000000000002),
    ],
)
def test_locomo_scores_as_its_evaluation_does(category: int, answer: str, prediction: str, score: float) -> None:
    assert locomo_score(category, prediction, answer) == pytest.approx(score, abs=1e-12)


def test_locomo_normalises_as_its_evaluation_does() -> None:
    assert locomo_normalize("The Cat, and a Dog's toys!") == "cat dogs toys"


def test_locomo_refuses_a_category_it_does_not_define() -> None:
    with pytest.raises(ValueError, match="category 6"):
        locomo_score(6, "a", "b")


@pytest.mark.parametrize(
    ("response", "score"),
    [
        ("aB3xYz9Q1pHere is the poem about tapirs", 1.0),
        ("Here is the poem about tapirs", 0.0),  # no prefix: 0, however close
        ("aB3xYz9Q1pHere is a poem about tapirs", 0.9285714285714286),
    ],
)
def test_mrcr_grades_as_its_dataset_card_does(response: str, score: float) -> None:
    assert mrcr_grade(response, "aB3xYz9Q1pHere is the poem about tapirs", "aB3xYz9Q1p") == pytest.approx(score)


def test_longmemeval_counts_an_abstention_item_in_its_type_and_apart() -> None:
    scores = longmemeval_scores(
        [
            ("multi-session", False, True),
            ("multi-session", True, False),
            ("knowledge-update", False, True),
            ("temporal-reasoning", False, False),
        ]
    )
    assert list(scores.by_type) == ["multi-session", "temporal-reasoning", "knowledge-update"]  # upstream's order
    assert scores.by_type["multi-session"] == Fraction(1, 2)
    assert scores.task_averaged == pytest.approx((0.5 + 0 + 1) / 3)
    assert (scores.overall, scores.abstention) == (Fraction(2, 4), Fraction(0, 1))


def test_multichallenge_passes_a_question_when_any_attempt_did_and_averages_the_axes() -> None:
    scores = multichallenge_scores(
        [
            ("INSTRUCTION_RETENTION", "q1", False),
            ("INSTRUCTION_RETENTION", "q1", True),
            ("INSTRUCTION_RETENTION", "q2", False),
            ("SELF_COHERENCE", "q3", True),
        ]
    )
    assert scores.by_axis == {"INSTRUCTION_RETENTION": Fraction(1, 2), "SELF_COHERENCE": Fraction(1, 1)}
    assert scores.overall == pytest.approx((50 + 100) / 2)
    assert multichallenge_scores([]).overall is None
