"""`compactbench`: CompactBench's generated cases (github.com/compactbench/compactbench, Apache-2.0),
what `compactbench generate --template KEY --seed N --output case.json` writes: one
`GeneratedCase` (`src/compactbench/contracts/case.py`) a file, or several as JSONL or a JSON
array. Its templates (YAML with `{{variables}}`) are not read: only CompactBench's generator
fills them in. One chronology per case.

- `transcript.turns` (`{role, content}`) are the turns, with the recorded replies; a leading
  system turn is `system:`. The last user message (no reply recorded) is answered by the model.
- Each of `evaluation_items` is a probe after the transcript, named by its `key`, its `prompt`
  the question; its `expected` check becomes an expectation, as CompactBench scores it
  (`scoring/checks.py`: lower-cased, whitespace collapsed, a substring): `contains_normalized`
  a `pattern`, `forbidden_absent` a `not`, `exact` an anchored case-sensitive `pattern`,
  `set_match` one `pattern` per value. Upstream asks each item alone against the compacted
  artifact; here they are asked one after another, each answer joining the history.
- `ground_truth.forbidden_behaviors` (a buried constraint, a rejected plan) are prohibitions
  `forbidden-N`, stated where a user message first names them; an answer naming one breaks it,
  asked at the probes whose check is `forbidden_absent` of that text.
- `ground_truth.entity_map` (`{entity: role}`), `immutable_facts` and `locked_decisions`
  (`"key: value"`; a decision without a key is `decision`) are declarations (`sets:`) at the
  first user message naming the value; one stated by no user message is left out. With one locked
  decision, each forbidden behaviour a user message names before it is an earlier value of the
  decision's key (a decision override): declared there, so the checks hold it as stale.
- `unresolved_items` and `deferred_items` have no counterpart and are not imported.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from harness.base.names import UNSAFE, file_stem
from harness.base.text import shown
from harness.chronology.declarations import KEY_PATTERN, MAX_VALUE_CHARS
from harness.chronology.schema import ID_PATTERN
from harness.importing.literal import literal
from harness.importing.source import Source, checked_text, json_type, message_role, text_field
from harness.importing.turns import Item, Said, converted, recorded_turns, source_of

__all__ = ["CHECKS", "DATASET", "convert"]

DATASET = "compactbench"
CHECKS = ("contains_normalized", "forbidden_absent", "exact", "set_match")  # scoring/checks.py run_check
_DECISION = "decision"  # the key of a locked decision stated without one
_FACT = re.compile(r"^\s*([^:]+?)\s*:\s*(.+?)\s*$", re.DOTALL)  # "key: value", as the templates write facts


def convert(source: Source, licence: str) -> Iterator[Item]:
    return converted(source, lambda record: _item(source, record.where, record.value, licence))


def _item(source: Source, where: str, case: dict[str, Any], licence: str) -> Item:
    _, case_id = text_field(source, where, case, "case_id")
    _, template = text_field(source, where, case, "template_key")
    system, said = _transcript(source, where, case.get("transcript"))
    turns = recorded_turns(source, where, said)
    truth = case.get("ground_truth", {})
    if not isinstance(truth, dict):
        raise source.refuse(where, "ground_truth", f"a {json_type(truth)}, not an object")
    prohibitions = _prohibitions(source, where, truth, turns)
    keys = _declare(source, where, truth, turns)
    turns.extend(_probes(source, where, case.get("evaluation_items"), prohibitions))
    document: dict[str, Any] = {
        "title": f"CompactBench {case_id}",
        "description": (
            f"CompactBench case of template {template}: the transcript replayed with its recorded replies, "
            "then each evaluation item asked as a probe, its expected check an expectation."
        ),
        "source": {**source_of(DATASET, case_id, source, licence), "category": template},
    }
    if system is not None:
        document["system"] = system
    if keys:
        document["keys"] = keys
    if prohibitions:
        document["prohibitions"] = {pid: spec for pid, (spec, _) in prohibitions.items()}
    document["turns"] = turns
    return Item(case_id, file_stem(DATASET, case_id), document)


def _transcript(source: Source, where: str, transcript: object) -> tuple[str | None, list[Said]]:
    """The system text, and the user and assistant turns in order."""
    entries = transcript.get("turns") if isinstance(transcript, dict) else None
    if not isinstance(entries, list) or not entries:
        raise source.refuse(where, "transcript.turns", "missing or empty; a case's transcript is a list of turns")
    system: str | None = None
    said: list[Said] = []
    for index, turn in enumerate(entries):
        field = f"transcript.turns[{index}]"
        role = message_role(source, where, field, turn, ("user", "assistant", "system"))
        text = checked_text(source, where, f"{field}.content", turn.get("content"))
        if role == "system":
            if said or system is not None:
                raise source.refuse(
                    where, field, "a system turn after the conversation began; a chronology has one, first"
                )
            system = text
        else:
            said.append(Said(role, text, f"{field}.content"))
    if not any(s.role == "user" for s in said):
        raise source.refuse(where, "transcript.turns", "no user turn; a chronology needs at least one")
    return system, said


def _prohibitions(
    source: Source, where: str, truth: dict[str, Any], turns: list[dict[str, Any]]
) -> dict[str, tuple[dict[str, str], str]]:
    """`forbidden-N` -> (its prohibition, the behaviour's text), for each one a user message names."""
    found: dict[str, tuple[dict[str, str], str]] = {}
    for index, text in enumerate(_texts(source, where, truth, "forbidden_behaviors"), start=1):
        if _first_user_turn(turns, text) is None:
            continue  # stated by no user message: a prohibition must be
        pattern = _normalized(text)
        spec = {
            "description": f"Never: {text} (ground_truth.forbidden_behaviors)",
            "present": pattern,
            "violated_by": pattern,
        }
        found[f"forbidden-{index}"] = (spec, text)
    return found


def _declare(source: Source, where: str, truth: dict[str, Any], turns: list[dict[str, Any]]) -> list[str]:
    """Put each ground-truth value on the `sets:` of the first turn whose user message names it;
    the keys so declared, in order."""
    keys: list[str] = []
    for raw_key, value in _ground_values(source, where, truth, turns):
        key = UNSAFE.sub("-", raw_key).strip("-")
        at = _first_user_turn(turns, value)
        if not re.fullmatch(KEY_PATTERN, key) or key == "all" or at is None or len(value) > MAX_VALUE_CHARS:
            continue  # no key the chronology can name, or a value no user message states
        sets = turns[at].setdefault("sets", {})
        if key not in sets:  # one value of a key a turn: the first the ground truth gives
            sets[key] = value
            keys.append(key)
    return list(dict.fromkeys(keys))


def _ground_values(
    source: Source, where: str, truth: dict[str, Any], turns: list[dict[str, Any]]
) -> list[tuple[str, str]]:
    """(key, value) of the entity map, the immutable facts, the values a single locked decision
    replaced (the forbidden plans named before it), then the locked decisions: declaration order."""
    entity_map = truth.get("entity_map", {})
    if not isinstance(entity_map, dict):
        raise source.refuse(where, "ground_truth.entity_map", f"a {json_type(entity_map)}, not an object")
    values = [(str(role), str(entity)) for entity, role in entity_map.items()]
    values.extend(kv for text in _texts(source, where, truth, "immutable_facts") if (kv := _key_value(text)))
    decisions = [_key_value(text) or (_DECISION, text) for text in _texts(source, where, truth, "locked_decisions")]
    if len(decisions) == 1 and (decided := _first_user_turn(turns, decisions[0][1])) is not None:
        for old in _texts(source, where, truth, "forbidden_behaviors"):
            named = _first_user_turn(turns, old)
            if named is not None and named < decided:
                values.append((decisions[0][0], old))
    return values + decisions


def _key_value(text: str) -> tuple[str, str] | None:
    """`key: value` as the templates write a fact; None for text without a key."""
    match = _FACT.match(text)
    return (match[1], match[2]) if match else None


def _probes(
    source: Source, where: str, items: object, prohibitions: dict[str, tuple[dict[str, str], str]]
) -> list[dict[str, Any]]:
    """A probe turn per evaluation item, after the transcript."""
    if not isinstance(items, list) or not items:
        raise source.refuse(where, "evaluation_items", "missing or empty; a case's questions are its evaluation items")
    probes: list[dict[str, Any]] = []
    for index, item in enumerate(items):
        field = f"evaluation_items[{index}]"
        if not isinstance(item, dict):
            raise source.refuse(where, field, f"a {json_type(item)}, not an object")
        key = checked_text(source, where, f"{field}.key", item.get("key"))
        if not re.fullmatch(ID_PATTERN, key) or any(p["probe"] == key for p in probes):
            raise source.refuse(
                where, f"{field}.key", f"{shown(key)}: a probe id is unique, letters, digits, '_', '.', '-'"
            )
        prompt = checked_text(source, where, f"{field}.prompt", item.get("prompt"))
        expected = item.get("expected")
        if not isinstance(expected, dict):
            raise source.refuse(where, f"{field}.expected", f"a {json_type(expected)}, not an object with check")
        expect, forbidden = _expectations(source, where, f"{field}.expected", expected)
        asks = [pid for pid, (_, text) in prohibitions.items() if forbidden is not None and _same(text, forbidden)]
        probe: dict[str, Any] = {"user": prompt, "probe": key, "asks": asks}
        if expect:
            probe["expect"] = expect
        probes.append(probe)
    return probes


def _expectations(
    source: Source, where: str, field: str, expected: dict[str, Any]
) -> tuple[list[dict[str, str]], str | None]:
    """The item's check as expectations, and the text a `forbidden_absent` check forbids. An empty
    value, which upstream scores as met whatever the answer, checks nothing and is left out."""
    check = expected.get("check")
    if check not in CHECKS:
        raise source.refuse(
            where, f"{field}.check", f"{shown(check)} is not one of CompactBench's checks: {', '.join(CHECKS)}"
        )
    if check == "set_match":
        values = expected.get("values")
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise source.refuse(where, f"{field}.values", "not a list of text; set_match checks each value")
        return [{"pattern": _normalized(v)} for v in dict.fromkeys(values) if v.strip()], None
    value = expected.get("value", "")
    if not isinstance(value, str):
        raise source.refuse(where, f"{field}.value", f"a {json_type(value)}, not text")
    if not value.strip():
        return [], None
    if check == "contains_normalized":
        return [{"pattern": _normalized(value)}], None
    if check == "forbidden_absent":
        return [{"not": _normalized(value)}], value
    return [{"pattern": rf"^\s*{literal(value)}\s*$"}], None  # exact: stripped, case kept


def _texts(source: Source, where: str, truth: dict[str, Any], name: str) -> list[str]:
    values = truth.get(name, [])
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise source.refuse(where, f"ground_truth.{name}", "not a list of text")
    return [v for v in values if v.strip()]


def _normalized(text: str) -> str:
    """CompactBench's normalised substring (`scoring/checks.py`): case folded, any whitespace run for any."""
    return "(?i)" + literal(text)


def _same(a: str, b: str) -> bool:
    return " ".join(a.lower().split()) == " ".join(b.lower().split())


def _first_user_turn(turns: list[dict[str, Any]], value: str) -> int | None:
    """The index of the first turn whose user message names `value` (case folded, as a whole
    phrase: not inside a longer word), or None."""
    pattern = re.compile(rf"(?<!\w){re.escape(' '.join(value.split()))}(?!\w)", re.IGNORECASE)
    for index, turn in enumerate(turns):
        if pattern.search(" ".join(turn["user"].split())):
            return index
    return None
