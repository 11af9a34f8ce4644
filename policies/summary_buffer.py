"""`summary-buffer`: a running summary of older turns plus the recent turns verbatim.

LangChain's `ConversationSummaryBufferMemory`: completed turns stay verbatim until the verbatim
part exceeds `budget` tokens; then its oldest turns are folded into the running summary, one
summarizer call per folded exchange (the `summary` policy's prompt and reference summarizer,
role `summarizer`), until it fits again, never leaving fewer than `turns` verbatim turns.
The summary follows the `summary` policy's rules: sent marked as generated and unverified, and
an empty one or one over `max_chars` stops this policy's replay at that turn
(`summary_empty`, `summary_too_long:<n>`), never truncated nor replaced.

Tokens are counted as `counter` says (`harness.policy.counters`): by default (`local`) by the
harness's local tokenizer (without the per-request framing), or by the characters/4 estimate
when its encoding is unavailable; the note says which, and which turns were folded. A count
that is `unknown` (`provider` without reported usage) or `unavailable` (`tiktoken` without its
encoding) folds nothing. A chronology's scripted `summary:` is the
reply of every summarizer call made at its turn.
"""

from __future__ import annotations

from harness.base.messages import Message
from harness.chronology import Forget, UserTurn
from harness.policy import AuxCalls, Drop, Outcome, Param
from harness.policy.compaction import split_turns
from harness.policy.contract import MAX_CHARS, MAX_TOKENS, MAX_TURNS, TriggerCount
from harness.policy.counters import COUNTER_PARAM, DEFAULT_COUNTER, TriggerCounter
from harness.policy.history import FORGET_RULE, current_messages, exchange
from harness.policy.pinning import PIN_PARAM, Pins, opening
from policies.summary import ROLE, stop_reason, summarize, summary_message


class SummaryBuffer:
    """System, the session's running summary (marked unverified), its verbatim turns, the current message."""

    name = "summary-buffer"
    description = (
        "Sends a running summary of older turns plus recent turns verbatim, folding turns in over a token budget."
    )
    params = (
        Param(
            "budget",
            2000,
            "tokens the verbatim turns may take before the oldest are summarized",
            minimum=1,
            maximum=MAX_TOKENS,
        ),
        Param("turns", 1, "completed turns always kept verbatim", minimum=0, maximum=MAX_TURNS),
        Param("max_chars", 700, "longest summary accepted, in characters", minimum=1, maximum=MAX_CHARS),
        COUNTER_PARAM,
        PIN_PARAM,
    )
    sets = ("deployed",)
    roles = (ROLE,)  # the summary policy's summarizer calls

    def __init__(
        self,
        system: Message | None,
        budget: int = 2000,
        turns: int = 1,
        max_chars: int = 700,
        counter: str = DEFAULT_COUNTER,
        pin: str = "false",
    ) -> None:
        self.system = system
        self.pins = Pins(pin)
        self.budget, self.turns, self.max_chars = budget, turns, max_chars
        self.summaries: dict[str, str] = {}
        self.buffers: dict[str, list[Message]] = {}  # the verbatim part, per session
        self.counter = TriggerCounter(counter)

    def view(self, turn: UserTurn) -> list[Message]:
        summary = self.summaries.get(turn.session)
        block = [] if summary is None else [summary_message(summary, turn.session)]
        head = opening(self.system, self.pins, turn.session)
        return head + block + self.buffers.get(turn.session, []) + current_messages(turn)

    def after_answer(self, turn: UserTurn, answer: str, aux: AuxCalls) -> Outcome:
        session = turn.session
        self.counter.learn(turn, aux)
        head, verbatim = split_turns(self.buffers.get(session, []) + exchange(turn, answer))
        summary, dropped, folded = self.summaries.get(session), [], []
        why = f"absent from the summary written at turn {turn.number}"
        seen = self._count(session, head + flat(verbatim))  # what the trigger saw first
        while len(verbatim) > self.turns and self._count(session, head + flat(verbatim)).exceeds(self.budget):
            oldest = verbatim.pop(0)
            user = oldest[0].content
            # A system message the turn added is summarized as the operator's, not as a reply.
            system = "\n".join(m.content for m in oldest[1:] if m.role == "system") or None
            answers = "\n".join(m.text for m in oldest[1:] if m.role != "system")
            new = summarize(aux, summary, user, answers, self.max_chars, system)
            stop = stop_reason(new, self.max_chars)
            if stop is not None:
                return Outcome(stop=stop)  # nothing changes: the replay ends here
            dropped += [Drop(text, why, "summary") for text in (summary, *(m.text for m in oldest)) if text]
            summary = new
            folded.append(oldest[0].turn)
        self.buffers[session] = head + flat(verbatim)
        self.pins.after_answer(turn)
        if summary is not None:
            self.summaries[session] = summary
        note = self._note(self._count(session, self.buffers[session]), folded)
        return Outcome(dropped=dropped, note=note, trigger=seen)

    def _count(self, session: str, messages: list[Message]) -> TriggerCount:
        return self.counter.count(session, messages, whole_request=False)

    def _note(self, count: TriggerCount, folded: list[int | None]) -> str:
        into = (
            f"; folded turn{'s' if len(folded) > 1 else ''} {', '.join(map(str, folded))} into the summary"
            if folded
            else ""
        )
        if count.tokens is None:
            return f"verbatim part {count.describe()}, budget {self.budget} tokens{into}"
        return f"verbatim part {count.tokens} of {self.budget} tokens ({count.how}){into}"

    def forget(self, event: Forget) -> Outcome:
        why = f"summary and verbatim turns discarded by forget {event.key or 'all'} at turn {event.number}{FORGET_RULE}"
        texts = [*self.summaries.values(), *(m.text for b in self.buffers.values() for m in b)]
        self.summaries.clear()
        self.buffers.clear()
        return Outcome(dropped=[Drop(text, why, "forget") for text in texts] + self.pins.forget(event))

    def retained(self) -> list[Message]:
        summaries = [Message("system", text, origin="summary", session=s) for s, text in self.summaries.items()]
        return summaries + [m for b in self.buffers.values() for m in b] + list(self.pins.retained())


def flat(turns: list[list[Message]]) -> list[Message]:
    return [m for t in turns for m in t]
