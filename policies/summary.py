"""`summary`: a running summary written by a model after each exchange, sent as unverified.

An empty summary, or one longer than `max_chars`, stops this policy's replay at that turn with
the reason recorded; the harness never truncates it nor puts other text in its place.

The summary is one extra call of role `summarizer` (previous summary + latest exchange -> new
summary), whose prompt is below: it states the cap. Under the offline `reference` model its reply
is the chronology's scripted `summary:` for the turn (never shortened: a scripted summary over the
cap stops the policy), else `reference_summary`: a deterministic, lossy merge of the previous
summary and the user's side of the exchange, written within the cap the prompt states
(`stated_cap`), as a summarizer told its cap would.
"""

from __future__ import annotations

from harness.base.messages import Message
from harness.chronology import Forget, UserTurn
from harness.models.reference_summary import reference_summary, stated_cap
from harness.policy import AuxCalls, Drop, Outcome, Param
from harness.policy.contract import MAX_CHARS
from harness.policy.history import FORGET_RULE, current_messages, reply_text, step_messages
from harness.policy.pinning import PIN_PARAM, Pins, opening

ROLE = "summarizer"

SUMMARY_HEADER = "Summary of the earlier conversation (generated and unverified: it may be wrong or incomplete):"

SUMMARIZER_INSTRUCTIONS = (
    "You maintain the running summary of a conversation between a user and an assistant. "
    "Rewrite the previous summary so that it also covers the latest exchange. Keep every "
    "fact, correction and prohibition the user stated, as the user stated it; drop small talk. "
    "Reply with the summary text only, in at most {max_chars} characters; if everything does not "
    "fit, keep the most recent facts, corrections and prohibitions first."
)


class Summary:
    """System, the session's running summary (marked unverified), and the current message."""

    name = "summary"
    description = "Sends a generated running summary instead of history; stops if it is empty or over the cap."
    params = (
        Param("max_chars", 700, "longest summary accepted, in characters", minimum=1, maximum=MAX_CHARS),
        PIN_PARAM,
    )
    roles = (ROLE,)

    def __init__(self, system: Message | None, max_chars: int = 700, pin: str = "false") -> None:
        self.system = system
        self.max_chars = max_chars
        self.summaries: dict[str, str] = {}
        self.pins = Pins(pin)

    def view(self, turn: UserTurn) -> list[Message]:
        summary = self.summaries.get(turn.session)
        block = [] if summary is None else [summary_message(summary, turn.session)]
        return opening(self.system, self.pins, turn.session) + block + current_messages(turn)

    def after_answer(self, turn: UserTurn, answer: str, aux: AuxCalls) -> Outcome:
        previous = self.summaries.get(turn.session)
        # The turn's tool calls and results are the assistant's side, outside text like the answer.
        reply = reply_text(turn, answer)
        summary = summarize(aux, previous, turn.user, reply, self.max_chars, turn.system)
        stop = stop_reason(summary, self.max_chars)
        if stop is not None:
            return Outcome(stop=stop)
        self.summaries[turn.session] = summary
        self.pins.after_answer(turn)
        # The exchange itself is not kept, only what the summary says of it.
        why = f"absent from the summary written at turn {turn.number}"
        # Each tool message is dropped too, as its own text: a subject it alone stated (a fact
        # only a tool result held) is then explained by this drop.
        steps = [m.text for m in step_messages(turn)]
        dropped = [text for text in (previous, turn.user, turn.system, reply, *steps) if text]
        return Outcome(dropped=[Drop(text, why, "summary") for text in dropped])

    def forget(self, event: Forget) -> Outcome:
        why = f"summary discarded by forget {event.key or 'all'} at turn {event.number}{FORGET_RULE}"
        dropped = [Drop(text, why, "forget") for text in self.summaries.values()]
        self.summaries.clear()
        return Outcome(dropped=dropped + self.pins.forget(event))

    def retained(self) -> list[Message]:
        summaries = [Message("system", text, origin="summary", session=s) for s, text in self.summaries.items()]
        return summaries + list(self.pins.retained())


def summary_message(summary: str, session: str) -> Message:
    """The running summary as it enters a request view: marked generated and unverified."""
    return Message("system", f"{SUMMARY_HEADER}\n{summary}", origin="summary", session=session)


def summarize(
    aux: AuxCalls, previous: str | None, user: str, answer: str, max_chars: int, system: str | None = None
) -> str:
    """One summarizer call (role `summarizer`): the previous summary and one exchange (with the
    system message it added, if any) -> the new summary; offline, the reference summarizer's merge."""
    messages = summarizer_messages(previous, user, answer, max_chars, system)
    return aux.call(
        ROLE,
        messages,
        reference=lambda request: reference_summary(
            previous, user, request.turn.keys, stated_cap(request.messages), system
        ),
    )


def stop_reason(summary: str, max_chars: int) -> str | None:
    """Why a summary stops the replay (`summary_empty`, `summary_too_long:<n>`); None when it is
    usable. It is never truncated nor replaced."""
    if not summary.strip():
        return "summary_empty"
    if len(summary) > max_chars:
        return f"summary_too_long:{len(summary)}"
    return None


def summarizer_messages(
    previous: str | None, user: str, answer: str, max_chars: int, system: str | None = None
) -> tuple[Message, ...]:
    """The summarizer's request: the previous summary and the latest exchange, with the system
    message it added (as a `System:` line after the user's) when it added one."""
    added = "" if system is None else f"\nSystem: {system}"
    body = (
        f"Previous summary:\n{previous if previous is not None else '(none yet)'}\n\n"
        f"Latest exchange:\nUser: {user}{added}\nAssistant: {answer}"
    )
    return (
        Message("system", SUMMARIZER_INSTRUCTIONS.format(max_chars=max_chars), origin="system"),
        Message("user", body, origin="current"),
    )
