"""BM25 scores of a corpus that only grows, kept up to date one document at a time.

`bm25s` builds its index from the whole corpus: rebuilt at every turn of a conversation, the
`retrieval` policy's work grows with the history, so a replay is quadratic. This index keeps,
per word, the documents that hold it and how often (its postings), and the document lengths,
as each document arrives. A query then reads only the postings of its words, with NumPy.

The scores are bm25s's own, bit for bit (`bm25s.BM25()` defaults: method `lucene`, k1=1.5,
b=0.75, float32 scores): the same idf (`log(1 + (N - df + 0.5) / (df + 0.5))`, stored as
float32), the same term-frequency component computed in float64 against the same mean
document length, each (document, word) score rounded to float32, and the words of the query
added in its order in float32. `tests/policy/test_bm25.py` compares the two on random corpora.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import numpy as np

K1, B = 1.5, 0.75  # bm25s.BM25 defaults


class _Postings:
    """The documents that hold one word, ascending, with the word's count in each."""

    __slots__ = ("docs", "counts", "size")

    def __init__(self) -> None:
        self.docs = np.empty(4, dtype=np.int64)
        self.counts = np.empty(4, dtype=np.float64)
        self.size = 0

    def add(self, doc: int, count: int) -> None:
        if self.size == len(self.docs):
            self.docs = np.resize(self.docs, 2 * self.size)
            self.counts = np.resize(self.counts, 2 * self.size)
        self.docs[self.size], self.counts[self.size] = doc, count
        self.size += 1


class Bm25Index:
    """BM25 over documents added one at a time (tokenized: lists of words)."""

    def __init__(self) -> None:
        self._postings: dict[str, _Postings] = {}
        self._lengths = np.empty(16, dtype=np.int64)
        self.size = 0  # documents added
        self._words = 0  # documents with at least one word

    def add(self, words: Sequence[str]) -> None:
        if self.size == len(self._lengths):
            self._lengths = np.resize(self._lengths, 2 * self.size)
        self._lengths[self.size] = len(words)
        for word, count in Counter(words).items():
            self._postings.setdefault(word, _Postings()).add(self.size, count)
        self._words += bool(words)
        self.size += 1

    def scores(self, query: Sequence[str]) -> np.ndarray:
        """The float32 BM25 score of every document for `query`, as `bm25s` computes them
        (all zero when the query or every document has no word)."""
        scores = np.zeros(self.size, dtype=np.float32)
        if not query or not self._words:
            return scores
        lengths = self._lengths[: self.size]
        mean_length = lengths.mean()  # what bm25s computes: np.array(lengths).mean()
        for word in query:
            postings = self._postings.get(word)
            if postings is None:
                continue  # bm25s leaves out the query words its vocabulary lacks
            docs, counts = postings.docs[: postings.size], postings.counts[: postings.size]
            idf = np.float32(math.log(1 + (self.size - postings.size + 0.5) / (postings.size + 0.5)))
            relative = B * lengths[docs].astype(np.float64) / mean_length
            component = counts / (K1 * ((1 - B) + relative) + counts)
            scores[docs] += (np.float64(idf) * component).astype(np.float32)
        return scores


def best(scores: np.ndarray, k: int) -> list[int]:
    """Indexes of the `k` best positive scores, ties to the later index, in original order
    (what `policies.retrieval.ranked` returns), without sorting every score."""
    positive = np.flatnonzero(scores > 0)
    if k <= 0 or not len(positive):
        return []
    if len(positive) > k:
        values = scores[positive]
        kth = np.partition(values, len(values) - k)[len(values) - k]  # the k-th largest
        above, tied = positive[values > kth], positive[values == kth]
        positive = np.concatenate([above, tied[len(tied) - (k - len(above)) :]])
    return sorted(int(i) for i in positive)
