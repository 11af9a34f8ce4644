"""`summary`: a running summary written by a model after each exchange, sent as unverified.

An empty summary, or one longer than `max_chars`, stops this policy's replay at that turn with
the reason recorded; the harness never truncates it nor puts other text in its place.
"""

from __future__ import annotations

from harness.chronology import Forget, UserTurn
from harness.history import current_message, system_messages
from harness.messages import Message
from harness.policy import AuxCalls, Drop, Outcome, Param

SUMMARY_HEADER = (
    "Summary of the earlier conversation (generated and unverified: it may be wrong or incomplete):"
)


class Summary:
    """System, the session's running summary (marked unverified), and the current message."""

    name = "summary"
    description = "Sends a generated running summary instead of history; stops if it is empty or over the cap."
    params = (Param("max_chars", 700, "longest summary accepted, in characters", minimum=1),)

    def __init__(self, system: Message | None, max_chars: int = 700) -> None:
        self.system = system
        self.max_chars = max_chars
        self.summaries: dict[str, str] = {}

    def view(self, turn: UserTurn) -> list[Message]:
        summary = self.summaries.get(turn.session)
        block = [] if summary is None else [
            Message("system", f"{SUMMARY_HEADER}\n{summary}", origin="summary", session=turn.session)
        ]
        return system_messages(self.system) + block + [current_message(turn)]

    def after_answer(self, turn: UserTurn, answer: str, aux: AuxCalls) -> Outcome:
        previous = self.summaries.get(turn.session)
        summary = aux.summarize(turn, previous, answer, self.max_chars)
        if not summary.strip():
            return Outcome(stop="summary_empty")
        if len(summary) > self.max_chars:
            return Outcome(stop=f"summary_too_long:{len(summary)}")
        self.summaries[turn.session] = summary
        # The exchange itself is not kept, only what the summary says of it.
        why = f"absent from the summary written at turn {turn.number}"
        dropped = [text for text in (previous, turn.user, answer) if text]
        return Outcome(dropped=[Drop(text, why, "summary") for text in dropped])

    def forget(self, event: Forget) -> Outcome:
        why = f"summary discarded by forget {event.key or 'all'} at turn {event.number}"
        dropped = [Drop(text, why, "forget") for text in self.summaries.values()]
        self.summaries.clear()
        return Outcome(dropped=dropped)

    def retained(self) -> list[Message]:
        return [Message("system", text, origin="summary", session=s) for s, text in self.summaries.items()]
