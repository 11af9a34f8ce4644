"""Per chronology: what counted each policy's token trigger or budget (turns.csv
`trigger_counter`, `trigger_status`, `harness.policy.counters`), and on how many turns it could
not count and so did not fire. Left out where no policy has a token trigger, and for results
written before the columns."""

from __future__ import annotations

from collections import Counter

from harness.report.comparison import Comparison
from harness.report.markdown import table
from harness.results.rows import TURN

# What each counter is, in the report's words (docs/policies.md, "What token triggers count").
COUNTER_WORDS = {
    "tiktoken": "tiktoken (the local tokenizer)",
    "estimate": "the characters/4 estimate",
    "provider": "the provider's reported usage (the session's latest answer call, plus characters/4 of what changed since)",
}
STATUS_WORDS = {
    "counted": "counted",
    "unknown": "unknown (nothing reported to count from): did not fire",
    "unavailable": "unavailable (no tiktoken encoding offline): did not fire",
}
NOTE = (
    "What each policy's token trigger or budget counted with at each turn (its `counter` parameter): the local "
    "tokenizer, the characters/4 estimate, or the provider's reported usage as cline and Pydantic AI trigger on "
    "it. A count that is unknown or unavailable is never filled in: the trigger did not fire on that turn, and "
    "the turn's policy note says why. Turns are counted over every repetition."
)


def triggers(cmp: Comparison, chronology: str) -> list[str]:
    """The section, or nothing when no policy of this chronology recorded a token trigger."""
    body = []
    for column in cmp.columns:
        rows = column.recorded(chronology, TURN.trigger_counter, (TURN.trigger_counter, TURN.trigger_status))
        seen = Counter((str(r[TURN.trigger_counter]), str(r[TURN.trigger_status])) for r in rows)
        for counter in sorted({c for c, _ in seen}):
            statuses = [
                f"{STATUS_WORDS.get(s, s)} on {n} turn{'s' * (n != 1)}" for (c, s), n in seen.items() if c == counter
            ]
            body.append([column.header, COUNTER_WORDS.get(counter, counter), "; ".join(sorted(statuses))])
    if not body:
        return []
    return ["### Token triggers", "", NOTE, "", table(["policy", "trigger counted by", "turns"], body), ""]
