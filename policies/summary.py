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

import re
from collections.abc import Collection, Sequence
from functools import cache

from harness.base.messages import Message
from harness.chronology import Forget, UserTurn
from harness.chronology.declarations import ALLOWED_KEYS, parse_declarations
from harness.chronology.questions import NEGATION_RE, clauses
from harness.policy import AuxCalls, Drop, Outcome, Param
from harness.policy.contract import MAX_CHARS
from harness.policy.history import FORGET_RULE, current_messages, reply_text, step_messages, system_messages

ROLE = "summarizer"

SUMMARY_HEADER = "Summary of the earlier conversation (generated and unverified: it may be wrong or incomplete):"

SUMMARIZER_INSTRUCTIONS = (
    "You maintain the running summary of a conversation between a user and an assistant. "
    "Rewrite the previous summary so that it also covers the latest exchange. Keep every "
    "fact, correction and prohibition the user stated, as the user stated it; drop small talk. "
    "Reply with the summary text only, in at most {max_chars} characters; if everything does not "
    "fit, keep the most recent facts, corrections and prohibitions first."
)
# How the reference summarizer reads the cap back from the instructions above (the prompt the
# policy sent is all it reads, as a real summarizer would).
CAP_RE = re.compile(r"\bin at most (\d+) characters\b")

STATEMENT_LINES_KEPT = 4  # older statement lines fall out of the summary: that is its loss
SHORTEST_CUT = 40  # a statement is shortened to fit only when this much room is left for it
ELLIPSIS = "…"


class Summary:
    """System, the session's running summary (marked unverified), and the current message."""

    name = "summary"
    description = "Sends a generated running summary instead of history; stops if it is empty or over the cap."
    params = (Param("max_chars", 700, "longest summary accepted, in characters", minimum=1, maximum=MAX_CHARS),)
    roles = (ROLE,)

    def __init__(self, system: Message | None, max_chars: int = 700) -> None:
        self.system = system
        self.max_chars = max_chars
        self.summaries: dict[str, str] = {}

    def view(self, turn: UserTurn) -> list[Message]:
        summary = self.summaries.get(turn.session)
        block = [] if summary is None else [summary_message(summary, turn.session)]
        return system_messages(self.system) + block + current_messages(turn)

    def after_answer(self, turn: UserTurn, answer: str, aux: AuxCalls) -> Outcome:
        previous = self.summaries.get(turn.session)
        # The turn's tool calls and results are the assistant's side, outside text like the answer.
        reply = reply_text(turn, answer)
        summary = summarize(aux, previous, turn.user, reply, self.max_chars)
        stop = stop_reason(summary, self.max_chars)
        if stop is not None:
            return Outcome(stop=stop)
        self.summaries[turn.session] = summary
        # The exchange itself is not kept, only what the summary says of it.
        why = f"absent from the summary written at turn {turn.number}"
        # Each tool message is dropped too, as its own text: a subject it alone stated (a fact
        # only a tool result held) is then explained by this drop.
        steps = [m.text for m in step_messages(turn)]
        dropped = [text for text in (previous, turn.user, reply, *steps) if text]
        return Outcome(dropped=[Drop(text, why, "summary") for text in dropped])

    def forget(self, event: Forget) -> Outcome:
        why = f"summary discarded by forget {event.key or 'all'} at turn {event.number}{FORGET_RULE}"
        dropped = [Drop(text, why, "forget") for text in self.summaries.values()]
        self.summaries.clear()
        return Outcome(dropped=dropped)

    def retained(self) -> list[Message]:
        return [Message("system", text, origin="summary", session=s) for s, text in self.summaries.items()]


def summary_message(summary: str, session: str) -> Message:
    """The running summary as it enters a request view: marked generated and unverified."""
    return Message("system", f"{SUMMARY_HEADER}\n{summary}", origin="summary", session=session)


def summarize(aux: AuxCalls, previous: str | None, user: str, answer: str, max_chars: int) -> str:
    """One summarizer call (role `summarizer`): the previous summary and one exchange -> the
    new summary; offline, the reference summarizer's merge."""
    messages = summarizer_messages(previous, user, answer, max_chars)
    return aux.call(
        ROLE,
        messages,
        reference=lambda request: reference_summary(previous, user, request.turn.keys, stated_cap(request.messages)),
    )


def stop_reason(summary: str, max_chars: int) -> str | None:
    """Why a summary stops the replay (`summary_empty`, `summary_too_long:<n>`); None when it is
    usable. It is never truncated nor replaced."""
    if not summary.strip():
        return "summary_empty"
    if len(summary) > max_chars:
        return f"summary_too_long:{len(summary)}"
    return None


def summarizer_messages(previous: str | None, user: str, answer: str, max_chars: int) -> tuple[Message, ...]:
    """The summarizer's request: the previous summary and the latest exchange."""
    body = (
        f"Previous summary:\n{previous if previous is not None else '(none yet)'}\n\n"
        f"Latest exchange:\nUser: {user}\nAssistant: {answer}"
    )
    return (
        Message("system", SUMMARIZER_INSTRUCTIONS.format(max_chars=max_chars), origin="system"),
        Message("user", body, origin="current"),
    )


# --- the reference summarizer (offline, deterministic) -------------------------------------


def stated_cap(messages: Sequence[Message]) -> int | None:
    """The cap a summarizer request's system message states (`in at most N characters`); None
    when it states none (a plug-in's own prompt)."""
    for message in messages:
        if message.role == "system":
            match = CAP_RE.search(message.content)
            if match:
                return int(match.group(1))
    return None


def reference_summary(
    previous: str | None, user_text: str, keys: Collection[str] = ALLOWED_KEYS, max_chars: int | None = None
) -> str:
    """The previous summary merged with what the user's text adds (declarations of the
    chronology's key set `keys`); the answer is generated text and is never summarized. With
    `max_chars` (the cap the prompt states), written within it (`fit_summary`)."""
    lines = [line.strip() for line in (previous or "").splitlines() if line.strip()]
    merged = merge_summary(lines + new_summary_lines(user_text, keys), keys)
    return merged if max_chars is None else fit_summary(merged, keys, max_chars)


def new_summary_lines(user_text: str, keys: Collection[str] = ALLOWED_KEYS) -> list[str]:
    """What the user's text adds: its declarations, else the statement itself; a question is
    noted as asked (so a session that opens with a question still gets a summary)."""
    declarations = parse_declarations(user_text, keys)
    if declarations:
        return [f"{d.key}={d.value}" for d in declarations.values()]
    collapsed = " ".join(user_text.split())
    if collapsed.endswith("?"):
        return [f"The user asked: {collapsed}"]
    return [collapsed] if collapsed else []


@cache
def _declaration_line(keys: frozenset[str]) -> re.Pattern[str]:
    """A summary line that is one declaration, as the reference summarizer itself writes them."""
    return re.compile(rf"^({'|'.join(map(re.escape, sorted(keys)))})=(.+)$")


def merge_summary(lines: Sequence[str], keys: Collection[str] = ALLOWED_KEYS) -> str:
    """Declarations deduplicated by key (value replaced in place), then the last 4 statements."""
    declarations: dict[str, str] = {}
    statements: list[str] = []
    declaration_line = _declaration_line(frozenset(keys))
    for line in lines:
        match = declaration_line.match(line)
        if match:
            declarations[match.group(1)] = line  # re-assigning keeps the first position
        else:
            statements.append(line)
    return "\n".join([*declarations.values(), *statements[-STATEMENT_LINES_KEPT:]])


def fit_summary(summary: str, keys: Collection[str], max_chars: int) -> str:
    """A merged summary within `max_chars`, as a summarizer told its cap writes it: unchanged when
    it fits; else its lines are kept by priority, declarations first, then statements that forbid
    something (a clause with a negation), then the others, the most recent first within each, and
    a statement too long for the room left is shortened (`shorten`). Kept lines stay in the
    summary's order. A declaration is dropped whole, never cut (a cut value would read as another
    value), unless no line fits whole: the first by priority is then cut, rather than no summary."""
    if len(summary) <= max_chars:
        return summary
    lines = summary.split("\n")
    declaration_line = _declaration_line(frozenset(keys))

    def rank(index: int) -> tuple[int, int]:
        line = lines[index]
        kind = 0 if declaration_line.match(line) else 1 if NEGATION_RE.search(line) else 2
        return kind, -index  # later is more recent (a declaration stands where its key was first declared)

    kept: dict[int, str] = {}
    room = max_chars
    for index in sorted(range(len(lines)), key=rank):
        line, room_left = lines[index], room - (1 if kept else 0)  # the line break before it
        if len(line) <= room_left:
            kept[index] = line
        elif not declaration_line.match(line) and room_left >= min(SHORTEST_CUT, max_chars):
            kept[index] = shorten(line, room_left)
        else:
            continue
        room = room_left - len(kept[index])
    if not kept:  # nothing fits whole: the first line by priority, cut, rather than no summary
        first = min(range(len(lines)), key=rank)
        kept[first] = cut_at_word(lines[first], max_chars)
    return "\n".join(kept[i] for i in sorted(kept))


def shorten(line: str, room: int) -> str:
    """A statement within `room` characters: its clauses that forbid something first, then the
    others in order, as many as fit whole, shown in their order; a first clause too long is cut
    at a word and marked `…`."""
    parts = clauses(line)
    ranked = sorted(range(len(parts)), key=lambda i: (not NEGATION_RE.search(parts[i].text), i))
    chosen: list[int] = []
    used = 0
    for i in ranked:
        cost = len(parts[i].text) + (1 if chosen else 0)
        if used + cost <= room:
            chosen.append(i)
            used += cost
    if chosen:
        return " ".join(parts[i].text for i in sorted(chosen))
    return cut_at_word(parts[ranked[0]].text if parts else line, room)


def cut_at_word(text: str, room: int) -> str:
    """`text` within `room` characters: cut at the last word that fits, marked `…`."""
    if len(text) <= room:
        return text
    if room <= len(ELLIPSIS):
        return text[:room]
    cut = text[: room - len(ELLIPSIS)]
    if " " in cut:
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip() + ELLIPSIS
