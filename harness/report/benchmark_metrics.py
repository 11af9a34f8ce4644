"""The scores four benchmarks' own evaluation code computes (LongMemEval's print_qa_metrics.py,
MultiChallenge's result_parser.py, openai/mrcr's `grade`, LoCoMo's task_eval/evaluation.py), as
pure functions of plain values.

Each follows the published code named in its docstring, line for line where it can; where the
harness must differ (a verdict it does not have) the docstring says how. The report
(harness.report.benchmarks) feeds them the run's verdicts and answers.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from functools import cache
from statistics import mean

__all__ = [
    "AxisScores",
    "Fraction",
    "LongMemEvalScores",
    "locomo_f1",
    "locomo_multi_f1",
    "locomo_normalize",
    "locomo_score",
    "longmemeval_scores",
    "mrcr_grade",
    "multichallenge_scores",
]


@dataclass(frozen=True)
class Fraction:
    """k of n; `value` None when n is 0 (never 0 for nothing counted)."""

    k: int
    n: int

    @property
    def value(self) -> float | None:
        return self.k / self.n if self.n else None


# --- LongMemEval ----------------------------------------------------------------------------------

# print_qa_metrics.py's question types, in its order.
LONGMEMEVAL_TYPES = (
    "single-session-user",
    "single-session-preference",
    "single-session-assistant",
    "multi-session",
    "temporal-reasoning",
    "knowledge-update",
)


@dataclass(frozen=True)
class LongMemEvalScores:
    """print_qa_metrics.py's figures; `task_averaged` over the types that have items (upstream
    averages its six, and prints nan when one has none)."""

    by_type: dict[str, Fraction]  # the types with items, in upstream's order (others after, by name)
    task_averaged: float | None
    overall: Fraction
    abstention: Fraction


def longmemeval_scores(labels: Iterable[tuple[str, bool, bool]]) -> LongMemEvalScores:
    """From (question_type, is_abstention, judged correct) per hypothesis: an abstention item counts
    in its type's accuracy and, apart, in abstention accuracy, as upstream counts it."""
    by_type: dict[str, list[int]] = {}
    abstention: list[int] = []
    for question_type, abstains, correct in labels:
        by_type.setdefault(question_type, []).append(int(correct))
        if abstains:
            abstention.append(int(correct))
    order = [t for t in LONGMEMEVAL_TYPES if t in by_type] + sorted(set(by_type) - set(LONGMEMEVAL_TYPES))
    fractions = {t: Fraction(sum(by_type[t]), len(by_type[t])) for t in order}
    every = [x for t in order for x in by_type[t]]
    averaged = mean(f.k / f.n for f in fractions.values()) if fractions else None
    return LongMemEvalScores(
        fractions, averaged, Fraction(sum(every), len(every)), Fraction(sum(abstention), len(abstention))
    )


# --- MultiChallenge -------------------------------------------------------------------------------


@dataclass(frozen=True)
class AxisScores:
    """result_parser.py's `axis_scores` (percent) and `overall_score` (their mean)."""

    by_axis: dict[str, Fraction]  # questions passed (any attempt) of those counted, per axis, by name
    overall: float | None  # percent; None when no axis has a question


def multichallenge_scores(attempts: Iterable[tuple[str, str, bool]]) -> AxisScores:
    """From (axis, question id, passed) per judged attempt: a question passes when any of its
    attempts did (upstream's `any(r['passed'] ...)`), each question counted once per axis."""
    passed: dict[str, dict[str, bool]] = {}
    for axis, question, ok in attempts:
        questions = passed.setdefault(axis, {})
        questions[question] = questions.get(question, False) or ok
    by_axis = {a: Fraction(sum(q.values()), len(q)) for a, q in sorted(passed.items())}
    overall = mean(100 * f.k / f.n for f in by_axis.values()) if by_axis else None
    return AxisScores(by_axis, overall)


# --- MRCR -----------------------------------------------------------------------------------------


def mrcr_grade(response: str, answer: str, prefix: str) -> float:
    """openai/mrcr's `grade`: 0 unless `response` starts with `prefix`; else the SequenceMatcher
    ratio of response and answer, `prefix` removed from the start of each."""
    if not response.startswith(prefix):
        return 0.0
    return float(SequenceMatcher(None, response.removeprefix(prefix), answer.removeprefix(prefix)).ratio())


# --- LoCoMo ---------------------------------------------------------------------------------------

_ARTICLES = re.compile(r"\b(a|an|the|and)\b")
_PUNCTUATION = frozenset(string.punctuation)


def locomo_normalize(text: str) -> str:
    """evaluation.py's `normalize_answer`: commas removed, lower case, punctuation removed, the
    words a, an, the and `and` removed, whitespace collapsed."""
    text = "".join(ch for ch in text.replace(",", "").lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


@cache
def _stemmer():  # nltk is imported only when a LoCoMo answer is scored
    from nltk.stem import PorterStemmer

    return PorterStemmer()


def _stems(text: str) -> list[str]:
    stem = _stemmer().stem
    return [stem(w) for w in locomo_normalize(text).split()]


def locomo_f1(prediction: str, ground_truth: str) -> float:
    """evaluation.py's `f1_score`: token F1 of the stemmed, normalised words."""
    predicted, truth = _stems(prediction), _stems(ground_truth)
    same = sum((Counter(predicted) & Counter(truth)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(predicted), same / len(truth)
    return 2 * precision * recall / (precision + recall)


def locomo_multi_f1(prediction: str, ground_truth: str) -> float:
    """evaluation.py's `f1`: both split at commas; each sub-answer's best F1 against the
    predicted parts, averaged."""
    predictions = [p.strip() for p in prediction.split(",")]
    truths = [g.strip() for g in ground_truth.split(",")]
    return mean(max(locomo_f1(p, g) for p in predictions) for g in truths)


ADVERSARIAL = 5
_ABSTAINS = ("no information available", "not mentioned")


def locomo_score(category: int, prediction: str, answer: str) -> float:
    """`eval_question_answering`'s score of one question of `category` (1 multi-hop, 2 temporal,
    3 open-domain, 4 single-hop, 5 adversarial); ValueError for another category, as upstream."""
    if category == 3:
        answer = answer.split(";")[0].strip()
    if category in (2, 3, 4):
        return locomo_f1(prediction, answer)
    if category == 1:
        return locomo_multi_f1(prediction, answer)
    if category == ADVERSARIAL:
        said = prediction.lower()
        return 1.0 if any(words in said for words in _ABSTAINS) else 0.0
    raise ValueError(f"LoCoMo category {category!r}: expected 1 to 5")


def mean_or_none(values: Sequence[float]) -> float | None:
    """The mean of `values`; None for none (never 0)."""
    return mean(values) if values else None
