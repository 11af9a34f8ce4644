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

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from harness.base.messages import Message
from harness.base.sequences import Joined, Log
from harness.chronology import UserTurn
from harness.policy import AuxCalls, Outcome, Param
from harness.policy.bm25 import Bm25Index, best
from harness.policy.compaction import first_turn
from harness.policy.contract import MAX_TURNS
from harness.policy.history import HistoryPolicy, current_messages, system_messages


def words(texts: list[str]) -> list[list[str]]:
    """The BM25 tokens of each text (bm25s's tokenizer: lowercase, English stop words out)."""
    import bm25s  # imported where used: it brings scipy, which `harness --help` need not load

    return bm25s.tokenize(texts, stopwords="en", return_ids=False, show_progress=False)


def ranked(scores: list[float], k: int) -> list[int]:
    """Indexes of the `k` best positive scores, ties to the later index, in original order."""
    best = sorted((i for i, s in enumerate(scores) if s > 0), key=lambda i: (-scores[i], -i))[:k]
    return sorted(best)


@dataclass
class _Turns:
    """One session's history as BM25 documents, one per turn, indexed as the history grows."""

    log: Sequence[Message] | None = None  # the history log indexed (a new one after a forget)
    upto: int = 0  # messages of it read so far
    starts: list[int] = field(default_factory=list)  # where each turn starts
    index: Bm25Index = field(default_factory=Bm25Index)


class Retrieval(HistoryPolicy):
    """System, the k earlier turns BM25 finds most relevant, the last N turns, the current message."""

    name = "retrieval"
    description = "Sends the last N turns plus the k earlier turns BM25 ranks most relevant to the current message."
    params = (
        Param("turns", 3, "most recent completed turns always sent", minimum=0, maximum=MAX_TURNS),
        Param(
            "k",
            2,
            "earlier turns retrieved by BM25 (only those sharing a word with the message)",
            minimum=0,
            maximum=MAX_TURNS,
        ),
    )
    sets = ("deployed",)
    history_place = "index"  # residue.csv: its history is what it retrieves from
    roles = ()

    def __init__(self, system: Message | None, turns: int = 3, k: int = 2) -> None:
        super().__init__(system)
        self.turns, self.k = turns, k
        self.note: str | None = None
        self._sessions: dict[str, _Turns] = {}

    def view(self, turn: UserTurn) -> list[Message]:
        history = self.histories.of(turn.session)
        indexed = self._indexed(turn.session, history)
        starts = indexed.starts
        cut = max(len(starts) - self.turns, 0)  # turns before `cut` are outside the window
        first = first_turn(history)
        retrieved = self._retrieve(history, indexed, cut, turn.user)
        marked = [replace(m, origin="retrieved") for i in retrieved for m in self._turn(history, starts, i)]
        recent = list(history[starts[cut] :]) if cut < len(starts) else []
        return system_messages(self.system) + list(history[:first]) + marked + recent + current_messages(turn)

    def _retrieve(self, history: Joined, indexed: _Turns, older: int, query: str) -> list[int]:
        """The retrieved turns among the first `older`, scored over the whole retained history."""
        if not older or self.k == 0:
            self.note = f"nothing to retrieve: {older} earlier turns outside the window"
            return []
        scores = indexed.index.scores(words([query])[0])[:older]
        chosen = best(scores, self.k)
        found = (
            ", ".join(
                f"turn {self._turn(history, indexed.starts, i)[0].turn} (score {float(scores[i]):.3f})" for i in chosen
            )
            or "none"
        )
        self.note = f"BM25 (bm25s) retrieved {found} of {older} earlier turns outside the window"
        return chosen

    @staticmethod
    def _turn(history: Joined, starts: list[int], i: int) -> list[Message]:
        return history[starts[i] : starts[i + 1] if i + 1 < len(starts) else len(history)]

    def _indexed(self, session: str, history: Joined) -> _Turns:
        """The session's turns indexed up to now: only the turns added since the last view are
        read, unless the history changed otherwise (a forget, a turn that grew), then all."""
        log = history.parts[0][0] if len(history.parts) == 1 and isinstance(history.parts[0][0], Log) else None
        indexed = self._sessions.get(session)
        if indexed is None or log is None or indexed.log is not log or len(history) < indexed.upto:
            indexed = _Turns(log)
        elif indexed.starts and len(history) > indexed.upto and history[indexed.upto].role != "user":
            indexed = _Turns(log)  # the last turn grew: its document changed
        new = history.positions("user", indexed.upto, len(history))
        bounds = [*new, len(history)]
        for start, end in zip(bounds, bounds[1:], strict=False):
            text = "\n".join(m.text for m in history[start:end])
            indexed.index.add(words([text])[0])
        indexed.starts.extend(new)
        indexed.upto = len(history)
        self._sessions[session] = indexed
        return indexed

    def after_answer(self, turn: UserTurn, answer: str, aux: AuxCalls) -> Outcome:
        outcome = super().after_answer(turn, answer, aux)
        outcome.note = self.note
        return outcome
