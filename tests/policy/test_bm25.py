"""The incremental BM25 index gives bm25s's own scores, bit for bit, and its top k."""

from __future__ import annotations

import random

import numpy as np
import pytest

from harness.policy.bm25 import Bm25Index, best
from policies.retrieval import ranked

WORDS = ["restart", "production", "invoice", "batch", "status", "note", "disk", "queue", "export", "ticket"]


def bm25_scores(corpus: list[list[str]], asked: list[str]) -> list[float]:
    """BM25 score of each tokenized document for the tokenized query, by the `bm25s` package
    itself; all zero when either has no word. (The oracle of
    `harness.policy.bm25.Bm25Index`, which gives the same scores without rebuilding the index every turn.)"""
    if not asked or not any(corpus):
        return [0.0] * len(corpus)  # bm25s divides by the mean document length
    import bm25s

    index = bm25s.BM25()
    index.index(corpus, show_progress=False)
    return [float(s) for s in index.get_scores(asked)]


@pytest.mark.parametrize("seed", range(12))
def test_scores_equal_the_package_scores_as_documents_arrive(seed: int) -> None:
    rng = random.Random(seed)
    index, corpus = Bm25Index(), []
    for _ in range(40):
        document = [rng.choice(WORDS) for _ in range(rng.randint(0, 9))]
        index.add(document)
        corpus.append(document)
        query = [rng.choice([*WORDS, "absent"]) for _ in range(rng.randint(0, 5))]
        assert [float(s) for s in index.scores(query)] == bm25_scores(corpus, query)


def test_best_is_the_ranking_of_every_score() -> None:
    rng = random.Random(7)
    for _ in range(200):
        scores = [rng.choice([0.0, 0.5, 1.0, 1.5, 2.0, rng.random()]) for _ in range(rng.randint(0, 12))]
        k = rng.randint(0, 5)
        assert best(np.array(scores, dtype=np.float32), k) == ranked(scores, k)
