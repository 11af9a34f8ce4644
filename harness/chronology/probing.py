"""Rules that need the whole chronology replayed as ground truth: what a probe's `asks:` may
name, and the warnings `harness validate` gives about text the checks would read otherwise
than its author meant.

- **Errors**: `asks:` names a prohibition that is not in force at that probe (never declared,
  not stated yet, or withdrawn by a `forget`).
- **Warnings** (the file stays valid): `key=value` text of a key of the chronology's set that
  the one reader of declarations does not read (and no `sets:` of that key on the turn); a
  `word=value` segment whose word is not in the key set (it declares nothing); a declaration
  stating one prohibition replaced by a later declaration of the same key stating another (the
  first becomes a stale value); a probe without `asks:` whose question is not a permission
  request the reference reader recognises, or with more than one prohibition in force (every
  one of them is then judged against the answer).

Each problem names its file as `harness.base.text.visible` shows it (a file name may hold
escape sequences); what it quotes of the chronology's text, it quotes with `repr`.
"""

from __future__ import annotations

from harness.base.errors import Problem
from harness.base.text import visible
from harness.chronology.declarations import Declaration, near_misses, outside_keys, parse_declarations
from harness.chronology.ledger import Ledger
from harness.chronology.questions import permission_request
from harness.chronology.types import Chronology, Forget, UserTurn


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
    replaced = dict(_replaced_prohibitions(chronology))
    for turn in chronology.user_turns:
        set_keys = {key for key, _ in turn.sets}
        for miss in near_misses(turn.user, chronology.keys):
            if miss.key not in set_keys:
                found.append(_at(chronology, turn, "user", f"warning: {miss.advice()}"))
        for outside in outside_keys(turn.user, chronology.keys):
            found.append(_at(chronology, turn, "user", f"warning: {outside.advice(chronology.keys)}"))
        found.extend(_at(chronology, turn, "user", f"warning: {why}") for why in replaced.get(turn.number, ()))
        if turn.probe is not None and turn.asks is None:
            found.extend(_unasked_probe(chronology, turn, list(ledger.prohibitions_in_force(turn.number))))
    return found


def _replaced_prohibitions(chronology: Chronology) -> dict[int, list[str]]:
    """By turn: declarations of this turn that replace a declaration of the same key stating
    another prohibition, which thereby becomes a stale value (a forget in between ends it)."""
    found: dict[int, list[str]] = {}
    current: dict[str, tuple[int, Declaration]] = {}  # key -> the turn and segment of its value
    for turn in chronology.turns:
        if isinstance(turn, Forget):
            current = {} if turn.key is None else {k: v for k, v in current.items() if k != turn.key}
            continue
        for key, declaration in parse_declarations(turn.user, chronology.keys).items():
            earlier = current.get(key)
            current[key] = (turn.number, declaration)
            if earlier is not None and earlier[1].value != declaration.value:
                why = _replaced(chronology, earlier, declaration, turn.number)
                found.setdefault(turn.number, []).extend([why] if why else [])
    return found


def _replaced(chronology: Chronology, earlier: tuple[int, Declaration], later: Declaration, number: int) -> str | None:
    """Why replacing `earlier` by `later` at turn `number` misleads the checks, or None."""
    since, first = earlier
    before = [p.id for p in chronology.prohibitions if p.present.search(first.evidence)]
    after = [p.id for p in chronology.prohibitions if p.present.search(later.evidence)]
    left = [pid for pid in before if pid not in after]
    if not left or all(pid in before for pid in after):
        return None  # no prohibition stated before, or none newly stated: an ordinary correction
    return (
        f"{later.evidence!r} (prohibition {', '.join(map(repr, after))}) replaces {first.evidence!r} of turn "
        f"{since} (prohibition {', '.join(map(repr, left))}): from turn {number} on, {first.key}={first.value} is "
        f"a stale value and checked as one (a view or an answer holding it fails the stale check) although "
        f"prohibition {', '.join(map(repr, left))} stays in force; give each prohibition its own key (name "
        f"them with keys:), or state one of them in prose that its present pattern matches"
    )


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
    return Problem(visible(chronology.path), turn.line, f"turns[{turn.number - 1}].{name}", message)
