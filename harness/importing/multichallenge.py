"""`multichallenge`: MultiChallenge's `benchmark_questions.jsonl` (Sirdeshmukh et al. 2025,
arXiv:2501.17399), or the same rows with the Hugging Face copy's lower-case names; one chronology
per question. JSON Lines or a JSON array is read, not parquet: no parquet reader is among the harness's
dependencies.

`CONVERSATION` (a list of `{role, content}`, or that list as a JSON string) becomes turns with the
recorded replies; its final user message is the probe `target`, asking about no prohibition
(`asks: []`). `TARGET_QUESTION` and `PASS_CRITERIA` become a judged expectation
(`{rubric, pass}`), as upstream grades: by a judge model, per item.

For the `INSTRUCTION_RETENTION` axis an earlier user message holds an instruction the final answer
must still follow; the item's TARGET_QUESTION says which. Where the target question quotes a word
or phrase (`the word "antioxidant"`, `the phrase 'It's important to note that'`) and exactly one
sentence of the earlier user messages quotes it too, that sentence is the instruction: it becomes
the prohibition `first-instruction`, whose `present` pattern quotes it (at most 80 characters,
escaped literally), and the report says whether it was in view at the probe. Otherwise (the target
question quotes nothing, or several sentences quote it) no sentence is taken: the item is judged
only, by its rubric (51 of the 69 such items of the published file; 18 get a sentence: one is
never guessed).
Whether the answer follows the instruction cannot be read off its words (it may ask for a format,
a language, a length), so no `violated_by` is derived: the pattern given matches nothing
(`[^\\s\\S]`) and the probe does not ask about the prohibition (`asks: []`); the judged rubric is
what says whether the answer kept it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from harness.base.names import file_stem
from harness.base.text import shown
from harness.importing.literal import distinctive_span, literal
from harness.importing.source import Source, text_field
from harness.importing.turns import Item, Said, converted, message_list, recorded_turns, source_of

__all__ = ["DATASET", "NEVER", "PROBE", "PROHIBITION", "convert", "instruction_sentence", "quoted_terms"]

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
        raise source.refuse(where, criteria, f"{shown(verdict)} is not YES or NO, the judge's verdict that passes")
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
    instruction = instruction_sentence(rubric, [s.text for s in said[:-1] if s.role == "user"])
    if axis.strip().upper() == _RETENTION and instruction is not None:
        document["prohibitions"] = {
            PROHIBITION: {
                "description": f"The instruction the item's target question checks: {instruction}",
                "present": literal(distinctive_span(instruction)),
                "violated_by": NEVER,
            }
        }
    document["turns"] = turns
    return Item(item_id, file_stem(DATASET, item_id), document)


# A quoted word or phrase: in double quotes, or in single quotes that are not an apostrophe.
_QUOTED = re.compile(r'"([^"\n]{1,200})"|(?<![\w])\'([^\'\n]{1,200})\'(?!\w)')
_CURLY = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})
_TRIM = " .,;:!?\u2026"  # what ends a quotation inside a sentence (`"relax,"`, `'... note that...'`)
_SENTENCE_END = re.compile(r"[.!?](?=\s)|\n")
MIN_TERM = 3  # characters: a quoted letter (`"T"`) names no sentence


def quoted_terms(text: str) -> list[str]:
    """The words and phrases `text` quotes, curly quotes read as straight, trimmed, in lower case."""
    found = (m.group(1) or m.group(2) for m in _QUOTED.finditer(text.translate(_CURLY)))
    return [t for t in dict.fromkeys(f.strip(_TRIM).lower() for f in found) if len(t) >= MIN_TERM]


def instruction_sentence(target_question: str, messages: list[str]) -> str | None:
    """The one sentence of `messages` that quotes a term the target question quotes; None when
    there is none, or more than one (the item is then judged only)."""
    terms = quoted_terms(target_question)
    found: dict[str, None] = {}
    for message in messages:
        plain = message.translate(_CURLY)  # same length: positions hold in the original text
        for term in terms:
            for match in re.finditer(re.escape(term), plain, re.IGNORECASE):
                at = match.start()
                if at and plain[at - 1] in "\"'":  # the message quotes it too
                    found[_sentence_at(message, at, match.end())] = None
    return next(iter(found)) if len(found) == 1 else None


def _sentence_at(text: str, start: int, end: int) -> str:
    """The sentence of `text` that holds text[start:end] (a quotation may hold sentence ends)."""
    before = [m.end() for m in _SENTENCE_END.finditer(text, 0, start)]
    after = _SENTENCE_END.search(text, end)
    return text[before[-1] if before else 0 : after.end() if after else len(text)].strip()


def _conversation(source: Source, where: str, row: dict[str, Any]) -> list[Said]:
    name, value = (
        ("CONVERSATION", row["CONVERSATION"]) if "CONVERSATION" in row else ("conversation", row.get("conversation"))
    )
    if value is None:
        raise source.refuse(where, "CONVERSATION", "missing; every item needs it (CONVERSATION or conversation)")
    return message_list(source, where, name, value)


def _description(axis: str) -> str:
    text = (
        f"MultiChallenge, axis {axis}. Each user message is replayed with its recorded reply; the final "
        "user message is the probe, and its answer is judged (--judge) against the item's rubric."
    )
    if axis.strip().upper() == _RETENTION:
        text += (
            " The instruction its target question quotes, when one sentence of the earlier messages quotes it "
            "too, is followed as the prohibition first-instruction: the report says whether it was in view at "
            "the probe; the rubric says whether the answer kept it. Otherwise the item is judged only."
        )
    return text
