"""`multichallenge`: MultiChallenge's `benchmark_questions.jsonl` (Sirdeshmukh et al. 2025,
arXiv:2501.17399), or the same rows with the Hugging Face copy's lower-case names; one chronology
per question. JSON Lines or a JSON array is read, not parquet: no parquet reader is among the harness's
dependencies.

`CONVERSATION` (a list of `{role, content}`, or that list as a JSON string) becomes turns with the
recorded replies; its final user message is the probe `target`, asking about no prohibition
(`asks: []`). `TARGET_QUESTION` and `PASS_CRITERIA` become a judged expectation
(`{rubric, pass}`), as upstream grades: by a judge model, per item.

For the `INSTRUCTION_RETENTION` axis the first user message holds an instruction the final answer
must still follow. It becomes the prohibition `first-instruction`, whose `present` pattern is the
longest sentence of that message (at most 80 characters, escaped literally): it shows whether the
instruction is still in view at the probe. Whether the answer follows it cannot be read off the
instruction's words (it may ask for a format, a language, a length), so no `violated_by` is
derived: the pattern given matches nothing (`[^\\s\\S]`) and the probe does not ask about the
prohibition (`asks: []`); the judged rubric is what says whether the answer kept it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from harness.importing.emit import file_stem
from harness.importing.literal import distinctive_span, literal
from harness.importing.source import Source, checked_text, json_type, message_role, text_field
from harness.importing.turns import Item, Said, converted, recorded_turns, source_of

__all__ = ["DATASET", "NEVER", "PROBE", "PROHIBITION", "convert"]

DATASET = "multichallenge"
PROBE = "target"
PROHIBITION = "first-instruction"
NEVER = r"[^\s\S]"  # matches no text: an answer is never judged against the instruction's words
_RETENTION = "INSTRUCTION_RETENTION"


def convert(source: Source, licence: str) -> Iterator[Item]:
    return converted(source, lambda record: _item(source, record.where, record.value, licence))


def _item(source: Source, where: str, row: dict[str, Any], licence: str) -> Item:
    _, item_id = text_field(source, where, row, "QUESTION_ID", "question_id")
    _, axis = text_field(source, where, row, "AXIS", "axis")
    _, rubric = text_field(source, where, row, "TARGET_QUESTION", "target_question")
    criteria, verdict = text_field(source, where, row, "PASS_CRITERIA", "pass_criteria")
    if verdict.strip().upper() not in ("YES", "NO"):
        raise source.refuse(where, criteria, f"{verdict!r} is not YES or NO, the judge's verdict that passes")
    said = _conversation(source, where, row)
    if said[-1].role != "user":
        raise source.refuse(
            where, said[-1].field, "the conversation ends with a reply; its final user message is the question"
        )
    turns = recorded_turns(source, where, said)
    probe = turns[-1]
    probe.update(probe=PROBE, asks=[], expect=[{"rubric": rubric, "pass": verdict.strip().upper()}])
    document: dict[str, Any] = {
        "title": f"MultiChallenge {item_id} ({axis})",
        "description": _description(axis),
        "source": {**source_of(DATASET, item_id, source, licence), "category": axis},
    }
    if axis.strip().upper() == _RETENTION:
        first = turns[0]["user"]
        document["prohibitions"] = {
            PROHIBITION: {
                "description": "The instruction of the first user message (MultiChallenge instruction retention).",
                "present": literal(distinctive_span(first)),
                "violated_by": NEVER,
            }
        }
    document["turns"] = turns
    return Item(item_id, file_stem(DATASET, item_id), document)


def _conversation(source: Source, where: str, row: dict[str, Any]) -> list[Said]:
    name, value = (
        ("CONVERSATION", row["CONVERSATION"]) if "CONVERSATION" in row else ("conversation", row.get("conversation"))
    )
    if value is None:
        raise source.refuse(where, "CONVERSATION", "missing; every item needs it (CONVERSATION or conversation)")
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise source.refuse(where, name, f"a string that is not a JSON list of messages ({exc.msg})") from None
    if not isinstance(value, list) or not value:
        raise source.refuse(where, name, f"a {json_type(value)}, not a non-empty list of {{role, content}} messages")
    said = []
    for index, message in enumerate(value):
        field = f"{name}[{index}]"
        role = message_role(source, where, field, message, ("user", "assistant"))
        text = checked_text(source, where, f"{field}.content", message.get("content"))
        said.append(Said(role, text, f"{field}.content"))
    return said


def _description(axis: str) -> str:
    text = (
        f"MultiChallenge, axis {axis}. Each user message is replayed with its recorded reply; the final "
        "user message is the probe, and its answer is judged (--judge) against the item's rubric."
    )
    if axis.strip().upper() == _RETENTION:
        text += (
            " The first user message's instruction is followed as the prohibition first-instruction: "
            "the report says whether it was in view at the probe; the rubric says whether the answer kept it."
        )
    return text
