"""Rules that need the whole chronology replayed as ground truth: what a probe's `asks:` may
name, and the warnings `harness validate` gives about text the checks would read otherwise
than its author meant.

- **Errors**: `asks:` names a prohibition that is not in force at that probe (never declared,
  not stated yet, or withdrawn by a `forget`).
- **Warnings** (the file stays valid): `key=value` text of an allowed key that the one reader
  of declarations does not read (and no `sets:` of that key on the turn); a probe without
  `asks:` whose question is not a permission request the reference reader recognises, or with
  more than one prohibition in force (every one of them is then judged against the answer).
"""

from __future__ import annotations

from harness.base.errors import Problem
from harness.chronology.declarations import near_misses
from harness.chronology.ledger import Ledger
from harness.chronology.questions import permission_request
from harness.chronology.types import Chronology, UserTurn


def asks_problems(chronology: Chronology, ledger: Ledger) -> list[Problem]:
    """`asks:` entries that name a prohibition not in force at their probe."""
    declared = {p.id for p in chronology.prohibitions}
    problems = []
    for turn in chronology.probes:
        in_force = ledger.prohibitions_in_force(turn.number)
        for pid in turn.asks or ():
            if pid in in_force:
                continue
            if pid not in declared:
                why = f"no prohibition {pid!r} is declared (declared: {', '.join(sorted(declared)) or 'none'})"
            else:
                why = f"prohibition {pid!r} is not in force at turn {turn.number} (not stated yet, or withdrawn by a forget)"
            listing = ", ".join(in_force) or "none"
            problems.append(_at(chronology, turn, "asks", f"{why}; in force here: {listing}"))
    return problems


def warnings(chronology: Chronology, ledger: Ledger) -> list[Problem]:
    """Everything `harness validate` warns about, in turn order."""
    found = []
    for turn in chronology.user_turns:
        set_keys = {key for key, _ in turn.sets}
        for miss in near_misses(turn.user):
            if miss.key not in set_keys:
                found.append(_at(chronology, turn, "user", f"warning: {miss.advice()}"))
        if turn.probe is not None and turn.asks is None:
            found.extend(_unasked_probe(chronology, turn, list(ledger.prohibitions_in_force(turn.number))))
    return found


def _unasked_probe(chronology: Chronology, turn: UserTurn, in_force: list[str]) -> list[Problem]:
    if not in_force:
        return []
    hint = "write asks: [ids] with the prohibitions the question asks about (asks: [] for none)"
    if permission_request(turn.user) is None:
        message = (
            f"warning: probe {turn.probe!r} is not a permission request the reference reader recognises, "
            f"yet every prohibition in force ({', '.join(in_force)}) is judged against its answer; {hint}"
        )
        return [_at(chronology, turn, "probe", message)]
    if len(in_force) > 1:
        message = (
            f"warning: probe {turn.probe!r} has {len(in_force)} prohibitions in force "
            f"({', '.join(in_force)}) and every one is judged against its answer; {hint}"
        )
        return [_at(chronology, turn, "probe", message)]
    return []


def _at(chronology: Chronology, turn: UserTurn, name: str, message: str) -> Problem:
    return Problem(chronology.path, turn.line, f"turns[{turn.number - 1}].{name}", message)
