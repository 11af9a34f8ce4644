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
- **Look-alikes** (warnings): a segment whose key is a key of the set but for characters that
  look like its letters (Cyrillic `і` in `module`, a zero-width joiner inside it, fullwidth
  letters): it declares nothing; a declared value (or a `sets:` value) holding an invisible
  character, or a word mixing scripts (`Reрorting`, with a Cyrillic `р`): the checks look for
  those exact characters, which an answer writing the word plainly does not hold.
- **Normalization** (warnings): a prohibition's `present` or `violated_by` pattern not in NFC
  (the form models and most editors write), and a user message that states a prohibition only
  once both are put in one form (`é` as one character in one, as `e` and a combining accent in
  the other): the patterns compare code points, so that statement is not recognised.

Each problem names its file as `harness.base.text.visible` shows it (a file name may hold
escape sequences); what it quotes of the chronology's text, it quotes with `repr`.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Collection, Iterable

from harness.base.errors import Problem
from harness.base.text import shown, visible
from harness.chronology.declarations import Declaration, near_misses, outside_keys, parse_declarations
from harness.chronology.ledger import Ledger
from harness.chronology.patterns import PatternError, compile_pattern
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
                why = f"no prohibition {shown(pid)} is declared (declared: {', '.join(sorted(declared)) or 'none'})"
            else:
                why = f"prohibition {shown(pid)} is not in force at turn {turn.number} (not stated yet, or withdrawn by a forget)"
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
        found.extend(_at(chronology, turn, name, f"warning: {why}") for name, why in _lookalikes(chronology, turn))
    return _unnormalized_patterns(chronology) + found


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
        f"{shown(later.evidence)} (prohibition {', '.join(map(shown, after))}) replaces {shown(first.evidence)} of turn "
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
            f"warning: probe {shown(turn.probe)} is not a permission request the reference reader recognises, "
            f"yet every prohibition in force ({', '.join(in_force)}) is judged against its answer; {hint}"
        )
        return [_at(chronology, turn, "probe", message)]
    if len(in_force) > 1:
        message = (
            f"warning: probe {shown(turn.probe)} has {len(in_force)} prohibitions in force "
            f"({', '.join(in_force)}) and every one is judged against its answer; {hint}"
        )
        return [_at(chronology, turn, "probe", message)]
    return []


def _at(chronology: Chronology, turn: UserTurn, name: str, message: str) -> Problem:
    return Problem(visible(chronology.path), turn.line, f"turns[{turn.number - 1}].{name}", message)


# --- look-alike characters and normalization -------------------------------------------------------


def _lookalikes(chronology: Chronology, turn: UserTurn) -> list[tuple[str, str]]:
    """(field, why) for a turn's keys that only look like keys of the set, and for declared values
    holding invisible characters or words of mixed scripts."""
    found = []
    for segment in turn.user.replace("\r", "\n").replace(";", "\n").split("\n"):  # the reader's separators
        stripped = segment.strip()
        key, equals, value = (part.strip() for part in stripped.partition("="))
        if not equals or not value or stripped.endswith("?") or key in chronology.keys:
            continue
        meant = _key_it_looks_like(key, chronology.keys)
        if meant is not None:
            odd = _describe(ch for ch in key if ch not in meant or not ch.isascii())
            found.append(
                (
                    "user",
                    f"{shown(stripped)} declares nothing: its key {shown(key)} looks like {shown(meant)} but holds {odd}; "
                    f"write {meant}= in plain letters so that the fact store, the checks and the reference model read it",
                )
            )
    declared = [(k, d.value) for k, d in parse_declarations(turn.user, chronology.keys).items()]
    for field, pairs in (("user", declared), ("sets", list(turn.sets))):
        for key, value in pairs:
            odd = _odd_characters(value)
            if odd:
                found.append(
                    (
                        field,
                        f"the value of {key}, {shown(value)}, holds {_describe(odd)}: the checks look for these exact "
                        "characters, so an answer or a summary that writes the word plainly does not count as "
                        "stating it; write it in one script, without invisible characters",
                    )
                )
    return found


def _key_it_looks_like(key: str, keys: Collection[str]) -> str | None:
    """The key of the set that `key` would be but for invisible, compatibility or look-alike
    characters (letters of another script where the key has its own); None if none."""
    visible = "".join(ch for ch in key if unicodedata.category(ch) != "Cf")
    folded = unicodedata.normalize("NFKC", visible)
    if folded in keys and folded != key:
        return folded
    for candidate in keys:
        if len(candidate) == len(folded) and folded != candidate:
            differing = [a for a, b in zip(folded, candidate) if a != b]
            if all(not ch.isascii() and ch.isalpha() for ch in differing):
                return candidate
    return None


def _odd_characters(value: str) -> list[str]:
    """Invisible characters of `value`, and the letters of a word that are of another script than
    most of its letters."""
    odd = [ch for ch in value if unicodedata.category(ch) == "Cf"]
    word: list[str] = []
    for ch in [*value, " "]:
        if ch.isalpha():
            word.append(ch)
            continue
        # A letter's script: the first word of its Unicode name (LATIN, CYRILLIC, GREEK, ...).
        scripts = [unicodedata.name(letter, "UNKNOWN").split(" ")[0] for letter in word]
        main = max(set(scripts), key=scripts.count) if scripts else None
        odd += [letter for letter, script in zip(word, scripts) if script != main]
        word = []
    return odd


def _describe(characters: Iterable[str]) -> str:
    """`U+0456 CYRILLIC SMALL LETTER BYELORUSSIAN-UKRAINIAN I` for each distinct character."""
    shown = []
    for ch in dict.fromkeys(characters):
        invisible = " (invisible)" if unicodedata.category(ch) == "Cf" else ""
        shown.append(f"U+{ord(ch):04X} {unicodedata.name(ch, 'UNNAMED')}{invisible}")
    return ", ".join(shown) or "characters that are not the key's own"


def _unnormalized_patterns(chronology: Chronology) -> list[Problem]:
    """Patterns not in NFC, and user messages that state a prohibition only in another form."""
    found = []
    for prohibition in chronology.prohibitions:
        for name in ("present", "violated_by"):
            pattern = getattr(prohibition, name).pattern
            if not unicodedata.is_normalized("NFC", pattern):
                found.append(
                    Problem(
                        visible(chronology.path),
                        None,
                        f"prohibitions.{prohibition.id}.{name}",
                        "warning: the pattern is not in NFC (it writes an accented letter as a letter and a "
                        "combining mark); models and most editors write NFC, which it then does not match: "
                        "save it in NFC",
                    )
                )
        found += _stated_in_another_form(chronology, prohibition.id, prohibition.present.pattern)
    return found


def _stated_in_another_form(chronology: Chronology, pid: str, pattern: str) -> list[Problem]:
    try:
        normal = compile_pattern(unicodedata.normalize("NFC", pattern))
        present = compile_pattern(pattern)
    except PatternError:
        return []
    found = []
    for turn in chronology.user_turns:
        both_nfc = unicodedata.is_normalized("NFC", turn.user) and unicodedata.is_normalized("NFC", pattern)
        if both_nfc or present.search(turn.user) or not normal.search(unicodedata.normalize("NFC", turn.user)):
            continue
        why = (
            f"warning: the message states prohibition {shown(pid)} only if Unicode normalization is ignored: it and "
            "the present pattern write an accented letter in different forms (one character, or a letter and "
            "a combining mark), so the checks do not recognise it here; save both in NFC"
        )
        found.append(_at(chronology, turn, "user", why))
    return found
