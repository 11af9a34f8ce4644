"""The incremental BM25 index gives bm25s's own scores, bit for bit, and its top k."""

from __future__ import annotations

import random

import numpy as np
import pytest

from harness.policy.bm25 import Bm25Index, best
from policies.retrieval import bm25_scores, ranked

WORDS = ["restart", "production", "invoice", "batch", "status", "note", "disk", "queue", "export", "ticket"]


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
