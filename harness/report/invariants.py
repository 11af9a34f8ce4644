"""Per chronology: the turns where a policy broke the invariant every policy keeps
(turns.csv `group_violations`, `harness.run.groups`): a split tool group, which a real API
refuses, the system message missing, a user message altered or removed without a recorded drop.
The section is left out where no policy broke it, and for results written before the column."""

from __future__ import annotations

from harness.report.comparison import Comparison
from harness.report.markdown import table
from harness.results.rows import TURN

NOTE = (
    "Each policy's request view and retained state are checked after every turn: a tool call must be "
    "followed by its result, a result preceded by its call (a request that splits them is refused by the "
    "chat-completions API with HTTP 400), the system message kept in every view, and no user message "
    "altered or removed without a recorded drop. The view is checked before its call is made; the call is "
    "still made. `view:` or `retained:` says where."
)


def invariants(cmp: Comparison, chronology: str) -> list[str]:
    """The section, or nothing when no policy broke the invariant in this chronology."""
    body = []
    for column in cmp.columns:
        broken = column.recorded(chronology, TURN.group_violations, (TURN.turn, TURN.repetition, TURN.group_violations))
        seen: dict[tuple[int, str], set[int]] = {}
        for row in broken:
            seen.setdefault((row[TURN.turn], str(row[TURN.group_violations])), set()).add(row[TURN.repetition])
        for (turn, what), repetitions in sorted(seen.items()):
            body.append([column.header, turn, what, f"{len(repetitions)} of {column.repetitions(chronology)}"])
    if not body:
        return []
    return ["### Invariants broken", "", NOTE, "", table(["policy", "turn", "what", "repetitions"], body), ""]
