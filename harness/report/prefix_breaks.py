"""Per chronology: where each policy broke its cacheable prefix (harness.run.prefix), for the
sizes section.

An answer request **breaks the prefix** when it does not start with the whole previous answer
request of its conversation and session: its cacheable prefix is shorter than that request
(`prefix_chars` below the previous call's `chars`, both sums of the same messages' characters).
A provider's prompt cache could then serve only the part before the change. A full history
never breaks it (it only appends); a summary, a window once it slides, or clearing old tool
results does.
"""

from __future__ import annotations

from collections import Counter

from harness.report.comparison import Column, Comparison
from harness.results.rows import CALL

MAX_TURNS_SHOWN = 12  # a policy that breaks it at every turn: the first ones, then how many more


def breaks(column: Column, chronology: str) -> Counter[int] | None:
    """turn -> in how many repetitions the answer request there broke the prefix; None when no
    answer call recorded its prefix (a run before it)."""
    previous: dict[tuple[object, object], int] = {}
    found: Counter[int] = Counter()
    recorded = False
    for call in column.rows("calls", chronology):
        if call[CALL.kind] != "answer" or call.get(CALL.prefix_chars) is None:
            continue
        recorded = True
        key = (call[CALL.repetition], call[CALL.session])
        before, previous[key] = previous.get(key), int(call[CALL.chars])
        if before is not None and int(call[CALL.prefix_chars]) < before:
            found[int(call[CALL.turn])] += 1
    return found if recorded else None


def breaks_text(column: Column, chronology: str) -> str:
    """One policy's breaks in words: `never`, or the turns (with how many repetitions, when not all)."""
    found, repetitions = breaks(column, chronology), column.repetitions(chronology)
    if found is None:
        return "not recorded (a run before the prefix was)"
    if not found:
        return "never"
    turns = [
        f"{t}" + (f" ({n} of {repetitions} repetitions)" if n < repetitions else "") for t, n in sorted(found.items())
    ]
    more = len(turns) - MAX_TURNS_SHOWN
    return ", ".join(turns[:MAX_TURNS_SHOWN]) + (f" and {more} more" if more > 0 else "")


def prefix_breaks(cmp: Comparison, chronology: str) -> list[str]:
    """The sizes section's lines on the prefix: a row per policy."""
    return [
        "**Where the cacheable prefix broke** (turns whose answer request did not start with the whole "
        "previous answer request of its session: a prompt cache could serve only the part before the change)",
        "",
        *(f"- {column.header}: {breaks_text(column, chronology)}" for column in cmp.columns),
        "",
    ]
