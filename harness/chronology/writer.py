"""The fact writer's reply, both ways: the candidates `{key, value, evidence}` a writer proposes
(`Candidate`), a reply read into candidates (`parse_writer_output`), and the deterministic
reference writer's reply (`reference_writer_output`), which a chronology's `writer:` scripts.
Admission (`harness.policy.facts`) decides what becomes a fact.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from harness.base import json_bounded
from harness.base.json_bounded import json_type
from harness.base.text import valid_unicode
from harness.chronology.declarations import ALLOWED_KEYS, parse_declarations


@dataclass(frozen=True)
class Candidate:
    """What a writer proposes; a missing field (None) is a rejection reason, not an error."""

    key: str | None
    value: str | None
    evidence: str | None


FIELDS = ("key", "value", "evidence")


def parse_writer_output(text: str) -> list[Candidate]:
    """Parse a writer's JSON reply {"facts": [{"key":..,"value":..,"evidence":..}, ...]}.

    Raise ValueError with a clear reason when it is not that shape (not JSON, no "facts" list,
    an item not an object, a field not a string or null, a field that is not valid Unicode: JSON's
    `"\\ud800"` is half of a UTF-16 pair, alone, which no user message holds, so no fact can quote
    it). Missing fields become None; other members are ignored, since admission only ever looks
    at the three fields.
    """
    try:
        reply = json_bounded.loads(text, what="the writer's output")
    except json.JSONDecodeError as error:
        raise ValueError(f"writer output is not JSON: {error}") from None
    if not isinstance(reply, dict) or not isinstance(reply.get("facts"), list):
        raise ValueError(f'writer output is not an object with a "facts" list: {text[:80]!r}')
    return [_candidate(index, item) for index, item in enumerate(reply["facts"])]


def _candidate(index: int, item: object) -> Candidate:
    """One item of the "facts" list as a Candidate."""
    if not isinstance(item, dict):
        raise ValueError(f"writer output facts[{index}] is not an object (got {json_type(item)})")
    for name in FIELDS:
        field = item.get(name)
        if field is not None and not isinstance(field, str):
            raise ValueError(f"writer output facts[{index}].{name} is not a string or null (got {json_type(field)})")
        if field is not None and (halves := valid_unicode(field)[1]):
            lone = f"{halves} lone surrogate{'s' if halves != 1 else ''}"
            raise ValueError(f"writer output facts[{index}].{name} is not valid Unicode ({lone}: {field[:80]!r})")
    return Candidate(item.get("key"), item.get("value"), item.get("evidence"))


def reference_writer_output(
    user_text: str, scripted: Sequence[Candidate] | None, keys: Collection[str] = ALLOWED_KEYS
) -> str:
    """The deterministic writer's JSON reply {"facts": [...]}.

    The scripted candidates when given (a missing field is written as null), else one candidate
    per `parse_declarations(user_text, keys)` with evidence = Declaration.evidence.
    """
    if scripted is not None:
        # getattr: chronology.WriterCandidate items have the same three fields.
        items = [{name: getattr(c, name, None) for name in FIELDS} for c in scripted]
    else:
        items = [
            {"key": d.key, "value": d.value, "evidence": d.evidence}
            for d in parse_declarations(user_text, keys).values()
        ]
    return json.dumps({"facts": items}, ensure_ascii=False)
