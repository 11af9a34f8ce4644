"""`factconsolidation`: MemoryAgentBench's Conflict_Resolution rows (FactConsolidation, Hu et al.
2025, arXiv:2507.05257), as JSON Lines or a JSON list of `{context, questions, answers, metadata}`
(the Hugging Face split saved as JSON; no parquet reader is among the harness's dependencies); one
chronology per row.

The context's numbered facts (`12. The capital of X is Y.`) are split into user turns of
`facts_per_turn` facts each, in order, each with the scripted reply `Noted.` (upstream records no
reply to a memorised chunk; a fixed one keeps the model uncalled until the questions). A fact with
a larger number is newer and replaces an older one about the same thing; the system message says
so, as upstream's prompt does. Each question is a probe (`q1`, `q2`, ...) expecting the newest
value: its gold answer as a `value` (several accepted answers: a `pattern` matching any). Judge-free,
as upstream scores by matching.

Stale values: the newest fact that ends with a gold answer is the question's `evidence`; an older
fact that reads the same up to its last value (`The capital of X is Z.`) was superseded, and its
value answered is a failed `not` expectation (one pattern for all of them, whole words, case
folded). Only that fact's own earlier versions are found: a superseded fact earlier in a multi-hop
chain is not, and a question whose answer ends no fact gets no `not`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from harness.base.names import file_stem
from harness.importing.literal import alternatives
from harness.importing.source import Source, checked_text, json_type, text_field
from harness.importing.turns import Item, converted, source_of

__all__ = ["FACTS_PER_TURN", "REPLY", "SYSTEM", "convert"]

FACTS_PER_TURN = 50  # facts in one user turn; `--facts-per-turn` sets it
REPLY = "Noted."
SYSTEM = (
    "You keep a knowledge pool of numbered facts. A fact with a larger number is newer and replaces "
    "any older fact about the same thing. Answer each question from the pool only, not from what you "
    "know of the world, as briefly as you can."
)
_FACT = re.compile(r"^\s*(\d+)\.\s+(\S.*?)\s*$")


def convert(source: Source, licence: str, facts_per_turn: int = FACTS_PER_TURN) -> Iterator[Item]:
    # a row without metadata.id is named by its place among the file's rows (`ordinal`: a row skipped
    # under --skip-invalid still counts, so the names of the rows after it do not change)
    return converted(
        source, lambda record: _item(source, record.where, record.ordinal, record.value, licence, facts_per_turn)
    )


def _item(source: Source, where: str, index: int, row: dict[str, Any], licence: str, per_turn: int) -> Item:
    metadata = row.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise source.refuse(where, "metadata", f"a {json_type(metadata)}, not an object")
    dataset = metadata.get("source") if isinstance(metadata.get("source"), str) else "factconsolidation"
    dataset = file_stem(dataset, "")
    item_id = str(metadata.get("id", index))
    _, context = text_field(source, where, row, "context")
    facts = _facts(context)
    if not facts:
        raise source.refuse(where, "context", "no numbered facts (lines `0. ...`); give a FactConsolidation row")
    questions = _list(source, where, row, "questions")
    answers = _list(source, where, row, "answers")
    if len(questions) != len(answers):
        raise source.refuse(
            where,
            "answers",
            f"{len(answers)} answers for {len(questions)} questions; give one answer list per question",
        )
    chunks = [facts[i : i + per_turn] for i in range(0, len(facts), per_turn)]
    turns: list[dict[str, Any]] = [
        {"user": "\n".join(f"{n}. {text}" for n, text in chunk), "assistant": REPLY} for chunk in chunks
    ]
    for number, (question, gold) in enumerate(zip(questions, answers), start=1):
        probe = f"q{number}"
        field = f"questions[{number - 1}]"
        text = checked_text(source, where, field, question)
        golds = _golds(source, where, f"answers[{number - 1}]", gold)
        expect: list[dict[str, Any]] = []
        if len(golds) == 1:
            expect.append({"value": golds[0]})
        else:
            pattern = alternatives(golds)
            if pattern is None:
                raise source.refuse(where, f"answers[{number - 1}]", "too many or too long answers for one pattern")
            expect.append({"pattern": pattern})
        newest, stale = _superseded(facts, golds)
        if stale and (pattern := alternatives(stale)) is not None:
            expect.append({"not": pattern})
        if newest is not None:
            turn = turns[newest // per_turn]
            turn["evidence"] = [*turn.get("evidence", []), probe]
        turns.append({"user": text, "probe": probe, "asks": [], "expect": expect})
    document: dict[str, Any] = {
        "title": f"FactConsolidation {dataset} {item_id}",
        "description": (
            f"MemoryAgentBench FactConsolidation: {len(facts)} numbered facts in {len(chunks)} turns, then "
            f"{len(questions)} questions, each expecting the newest value; an older value it supersedes, "
            "answered, fails the question's `not` expectation."
        ),
        "source": source_of(dataset, item_id, source, licence),
        "system": SYSTEM,
        "turns": turns,
    }
    return Item(item_id, file_stem(dataset, item_id), document)


def _facts(context: str) -> list[tuple[int, str]]:
    """(serial number, text) of each numbered line, in file order; other lines (a heading) are left out."""
    return [(int(m.group(1)), m.group(2)) for line in context.splitlines() if (m := _FACT.match(line))]


def _list(source: Source, where: str, row: dict[str, Any], name: str) -> list[Any]:
    value = row.get(name)
    if not isinstance(value, list) or not value:
        got = "missing" if value is None else f"a {json_type(value)}, not a non-empty list"
        raise source.refuse(where, name, f"{got}; a FactConsolidation row has its {name} as a list")
    return value


def _golds(source: Source, where: str, field: str, gold: object) -> list[str]:
    items = gold if isinstance(gold, list) else [gold]
    if not items:
        raise source.refuse(where, field, "empty; each question needs an answer")
    return [checked_text(source, where, f"{field}[{i}]", g) for i, g in enumerate(items)]


def _superseded(facts: list[tuple[int, str]], golds: list[str]) -> tuple[int | None, list[str]]:
    """(position of the newest fact ending in a gold answer, the values of its older versions)."""
    folded = [g.strip().casefold() for g in golds]
    best: tuple[int, int, str] | None = None  # (serial, position, stem)
    for position, (serial, text) in enumerate(facts):
        body = text.rstrip(" .")
        for gold in folded:
            stem = body[: len(body) - len(gold)]
            whole = not stem or not stem[-1].isalnum()  # `is XY` does not end with the answer `Y`
            if (
                gold
                and stem.strip()
                and whole
                and body.casefold().endswith(gold)
                and (best is None or serial > best[0])
            ):
                best = (serial, position, stem)
    if best is None:
        return None, []
    serial, position, stem = best
    stale = []
    for other_serial, text in facts:
        body = text.rstrip(" .")
        if other_serial < serial and body.startswith(stem) and len(body) > len(stem):
            value = body[len(stem) :].strip()
            if value.casefold() not in folded:
                stale.append(value)
    return position, stale
