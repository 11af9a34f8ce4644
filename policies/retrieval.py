"""`retrieval`: the last N turns, plus the k earlier turns most relevant to the current message.

Relevance is BM25 over the session's retained history, scored by the `bm25s` package (BM25
as in Lucene, k1=1.5, b=0.75): each completed turn (its user message and replies) is one
document, the current user message is the query. Texts are cut into words by `bm25s.tokenize`
(lowercased words of two or more letters, English stop words removed, **no stemming**, so
`restarts` does not match `restart`). Only turns older than the window are candidates, and
only those scoring above zero (sharing at least one word with the question): a question that
paraphrases what it needs retrieves nothing of it. The best `k` are sent in their original
order, each message marked with origin `retrieved`; ties go to the more recent turn.

The history is kept whole (the selection is a view), so what is not retrieved is lost to the
`window`. Published memory benchmarks find plain BM25 a strong baseline; this makes it
measurable beside the other policies.
"""

from __future__ import annotations

from dataclasses import replace

import bm25s

from harness.chronology import UserTurn
from harness.compaction import split_turns
from harness.history import HistoryPolicy, current_message, system_messages
from harness.messages import Message
from harness.policy import AuxCalls, Outcome, Param


def words(texts: list[str]) -> list[list[str]]:
    """The BM25 tokens of each text (bm25s's tokenizer: lowercase, English stop words out)."""
    return bm25s.tokenize(texts, stopwords="en", return_ids=False, show_progress=False)


def bm25_scores(corpus: list[list[str]], asked: list[str]) -> list[float]:
    """BM25 score of each tokenized document for the tokenized query; all zero when either
    has no word."""
    if not asked or not any(corpus):
        return [0.0] * len(corpus)  # bm25s divides by the mean document length
    index = bm25s.BM25()
    index.index(corpus, show_progress=False)
    return [float(s) for s in index.get_scores(asked)]


def ranked(scores: list[float], k: int) -> list[int]:
    """Indexes of the `k` best positive scores, ties to the later index, in original order."""
    best = sorted((i for i, s in enumerate(scores) if s > 0), key=lambda i: (-scores[i], -i))[:k]
    return sorted(best)


class Retrieval(HistoryPolicy):
    """System, the k earlier turns BM25 finds most relevant, the last N turns, the current message."""

    name = "retrieval"
    description = "Sends the last N turns plus the k earlier turns BM25 ranks most relevant to the current message."
    params = (
        Param("turns", 3, "most recent completed turns always sent", minimum=0),
        Param("k", 2, "earlier turns retrieved by BM25 (only those sharing a word with the message)", minimum=0),
    )
    sets = ("deployed",)

    def __init__(self, system: Message | None, turns: int = 3, k: int = 2) -> None:
        super().__init__(system)
        self.turns, self.k = turns, k
        self.note: str | None = None
        self._words: dict[str, list[str]] = {}  # each turn's text is tokenized once per conversation

    def view(self, turn: UserTurn) -> list[Message]:
        head, history = split_turns(self.histories.of(turn.session))
        cut = max(len(history) - self.turns, 0)
        older, recent = history[:cut], history[cut:]
        retrieved = self._retrieve(history, older, turn.user)
        marked = [replace(m, origin="retrieved") for t in retrieved for m in t]
        return system_messages(self.system) + head + marked + [m for t in recent for m in t] + [current_message(turn)]

    def _retrieve(self, history: list[list[Message]], older: list[list[Message]], query: str) -> list[list[Message]]:
        """The retrieved turns among `older`, scored over the whole retained history."""
        if not older or self.k == 0:
            self.note = f"nothing to retrieve: {len(older)} earlier turns outside the window"
            return []
        corpus = [self._tokens("\n".join(m.content for m in t)) for t in history]
        scores = bm25_scores(corpus, words([query])[0])[: len(older)]
        chosen = ranked(scores, self.k)
        found = ", ".join(f"turn {older[i][0].turn} (score {scores[i]:.3f})" for i in chosen) or "none"
        self.note = f"BM25 (bm25s) retrieved {found} of {len(older)} earlier turns outside the window"
        return [older[i] for i in chosen]

    def _tokens(self, text: str) -> list[str]:
        if text not in self._words:
            self._words[text] = words([text])[0]
        return self._words[text]

    def after_answer(self, turn: UserTurn, answer: str, aux: AuxCalls) -> Outcome:
        outcome = super().after_answer(turn, answer, aux)
        outcome.note = self.note
        return outcome
