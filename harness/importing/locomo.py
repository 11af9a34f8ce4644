"""`locomo`: LoCoMo's `locomo10.json` (Maharana et al. 2024, arXiv:2402.17753,
github.com/snap-research/LoCoMo); one chronology per conversation, its questions probes at its end.

A LoCoMo conversation is two people talking over many sessions, and its questions are asked by a
third party about what they said. A chronology replays a user and an assistant, so the mapping is
(docs/importing.md): `speaker_a`'s lines are the user's messages and `speaker_b`'s the recorded
replies, each line starting with its speaker's name (`Caroline: ...`), a shared image as the
caption LoCoMo gives it (`[shares a photo of ...]`). The `system:` message says who is who. Each
session's date is the first line of its first message (`DATE: 1:56 pm on 8 May, 2023`), as
LoCoMo's own prompts give it; a session `speaker_b` opens gets the date as a user turn of its own,
answered by that line. All sessions are one history: the same two people, one conversation.

Every question is a probe after the last session, in the file's order, so the conversation is
replayed once for all of its questions. The probes therefore share the history: the k-th question
is asked with the k-1 questions before it and their answers in the history, as one chat would
hold them (a window counted in turns fills with them). Each probe carries its `category` (the
question's, per probe: one conversation asks questions of all five), its `reference` answer as
published (for LoCoMo's own metric, per-category F1, computed apart), its evidence lines as
`evidence:` on the turns holding them, and offline expectations where they can be read off the
answer: `value` for a short one, `abstain` for an adversarial (unanswerable) question, and a
`rubric` comparing the answer with the reference (judged with `--judge`) for every answerable one.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from harness.base.names import file_stem
from harness.base.text import excerpt, shown
from harness.importing.source import Source, checked_text, json_type, text_field
from harness.importing.turns import Item, Said, converted, recorded_turns, source_of

__all__ = ["CATEGORIES", "DATASET", "NOT_MENTIONED", "convert"]

DATASET = "locomo"  # every item's source.dataset (the published file is the one set, locomo10.json)

# LoCoMo's question categories, a probe's `category:` the number as the file writes it; named as
# its code treats them (task_eval/evaluation.py and gpt_utils.py): 1 is scored per comma-separated
# sub-answer, 2 is told to answer with a date, 5 is unanswerable.
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
ADVERSARIAL = 5
TEMPORAL = 2
NOT_MENTIONED = "Not mentioned in the conversation"  # the option LoCoMo offers beside an adversarial answer
_SHORT_WORDS = 4  # an answer of at most this many words, without `,` or `;`, is checked as a value
_SESSION = re.compile(r"^session_([1-9][0-9]{0,3})$")
_DIALOGUE = re.compile(r"D([0-9]+):([0-9]+)")


def convert(source: Source, licence: str) -> Iterator[Item]:
    return converted(source, lambda record: _item(source, record.where, record.value, DATASET, licence))


def _item(source: Source, where: str, row: dict[str, Any], dataset: str, licence: str) -> Item:
    _, item_id = text_field(source, where, row, "sample_id")
    where = f"{where} ({item_id})"
    conversation = row.get("conversation")
    if not isinstance(conversation, dict):
        got = "missing" if conversation is None else f"a {json_type(conversation)}, not an object"
        raise source.refuse(where, "conversation", f"{got}; every item has its speakers and sessions")
    _, first = text_field(source, where, conversation, "speaker_a")
    _, second = text_field(source, where, conversation, "speaker_b")
    if first == second:
        raise source.refuse(where, "conversation.speaker_b", "the same name as speaker_a; the two speakers differ")
    questions = _questions(source, where, row)
    lines = _sessions(source, where, conversation, first, second)
    evidence = _evidence_of(questions, {said.field: said for said in lines})
    said = [Said(s.role, s.text, s.field, evidence.get(s.field, ())) for s in lines]
    turns = recorded_turns(source, where, said)
    for number, question in enumerate(questions, start=1):
        turns.append(_probe(f"q{number}", question))
    document: dict[str, Any] = {
        "title": f"LoCoMo {item_id} ({first} and {second})",
        "description": (
            f"LoCoMo conversation {item_id}: {first}'s lines are the user's messages, {second}'s the recorded "
            f"replies, each session dated in its first message; its {len(questions)} questions are probes q1-"
            f"q{len(questions)} after the last session, asked in one history, each with its own category."
        ),
        "system": (
            f"This is a conversation between {first} and {second} over several days, in sessions that each "
            f"begin with their date (DATE: ...). The user's messages are {first}'s and the assistant's replies "
            f"are {second}'s, each starting with the speaker's name. Questions about the conversation follow "
            "it: answer each with a short phrase, in the conversation's own words where you can."
        ),
        "source": source_of(dataset, item_id, source, licence),
        "turns": turns,
    }
    return Item(item_id, file_stem(dataset, item_id), document)


@dataclass(frozen=True)
class _Question:
    """One `qa` entry as read: its text, category, answer (the published one or the adversarial
    option) and the (session, line) of each dialogue id of its evidence."""

    text: str
    category: int
    answer: str
    evidence: tuple[tuple[int, int], ...]


def _questions(source: Source, where: str, row: dict[str, Any]) -> list[_Question]:
    entries = row.get("qa")
    if not isinstance(entries, list) or not entries:
        got = "missing" if entries is None else f"a {json_type(entries)}"
        raise source.refuse(where, "qa", f"{got}, not a non-empty list of questions")
    return [_question(source, where, f"qa[{n}]", entry) for n, entry in enumerate(entries)]


def _question(source: Source, where: str, field: str, entry: object) -> _Question:
    if not isinstance(entry, dict):
        raise source.refuse(where, field, f"a {json_type(entry)}, not an object with question, answer and category")
    text = checked_text(source, where, f"{field}.question", entry.get("question"))
    category = entry.get("category")
    if isinstance(category, bool) or category not in CATEGORIES:
        raise source.refuse(where, f"{field}.category", f"{shown(category)} is not one of LoCoMo's categories 1-5")
    # An adversarial question's published answer is the tempting wrong one (`adversarial_answer`).
    names = ("adversarial_answer", "answer") if category == ADVERSARIAL else ("answer",)
    name = next((n for n in names if n in entry), names[0])
    if name not in entry:
        raise source.refuse(where, f"{field}.{name}", "missing; every question of this category has one")
    value = entry[name]
    answer = str(value) if isinstance(value, int) and not isinstance(value, bool) else value
    answer = checked_text(source, where, f"{field}.{name}", answer)
    named = entry.get("evidence", [])
    if not isinstance(named, list) or not all(isinstance(e, str) for e in named):
        raise source.refuse(where, f"{field}.evidence", f"a {json_type(named)}, not a list of dialogue ids (D1:3)")
    # Some entries hold several ids (`D8:6; D9:17`); each id written as D<session>:<line> is read.
    ids = tuple(dict.fromkeys((int(s), int(n)) for e in named for s, n in _DIALOGUE.findall(e)))
    return _Question(text, category, answer, ids)


def _sessions(source: Source, where: str, conversation: dict[str, Any], first: str, second: str) -> list[Said]:
    """Every line of every session in session order, the user's (`first`) and the replies, each
    session's date on its first user message. `field` is the line's dialogue id, `D<s>:<n>`."""
    numbers = sorted(int(m.group(1)) for key in conversation if (m := _SESSION.match(key)))
    if not numbers:
        raise source.refuse(where, "conversation", "no session_N; every conversation has at least one session")
    said: list[Said] = []
    for number in numbers:
        lines = conversation[f"session_{number}"]
        if not isinstance(lines, list):
            raise source.refuse(where, f"conversation.session_{number}", f"a {json_type(lines)}, not a list of lines")
        if not lines:
            continue  # upstream's own readers skip an empty session
        dated_by = f"session_{number}_date_time"
        if dated_by not in conversation:
            raise source.refuse(where, f"conversation.{dated_by}", "missing; every session has its date")
        date = checked_text(source, where, f"conversation.{dated_by}", conversation[dated_by])
        session = [
            _line(source, where, f"conversation.session_{number}[{n}]", line, first, second)
            for n, line in enumerate(lines)
        ]
        dated = f"DATE: {date}"
        if session[0].role == "user":
            session[0] = Said("user", f"{dated}\n\n{session[0].text}", session[0].field)
        else:  # a session the second speaker opens: the date is the user's turn its line answers
            said.append(Said("user", dated, dated_by))
        said += session
    seen: set[str] = set()
    for line in said:
        if line.field in seen:
            raise source.refuse(
                where, "conversation", f"dialogue id {excerpt(line.field)} is used twice; each line has its own"
            )
        seen.add(line.field)
    return said


def _line(source: Source, where: str, field: str, line: object, first: str, second: str) -> Said:
    if not isinstance(line, dict):
        raise source.refuse(where, field, f"a {json_type(line)}, not an object with speaker, dia_id and text")
    speaker = line.get("speaker")
    if speaker not in (first, second):
        raise source.refuse(
            where, f"{field}.speaker", f"{shown(speaker)} is neither speaker ({shown(first)} or {shown(second)})"
        )
    dia_id = checked_text(source, where, f"{field}.dia_id", line.get("dia_id"))
    found = _DIALOGUE.fullmatch(dia_id)
    if found is None:
        raise source.refuse(where, f"{field}.dia_id", f"{shown(dia_id)} is not a dialogue id (D<session>:<line>)")
    text = checked_text(source, where, f"{field}.text", line.get("text"))
    caption = line.get("blip_caption")
    if caption is not None:
        text = f"{text} [shares {checked_text(source, where, f'{field}.blip_caption', caption)}]"
    # The field is the line's id, normalised (`D3:07` is line 7 of session 3), for evidence to find it.
    return Said("user" if speaker == first else "assistant", f"{speaker}: {text}", _dia(*map(int, found.groups())))


def _dia(session: int, line: int) -> str:
    return f"D{session}:{line}"


def _evidence_of(questions: list[_Question], lines: dict[str, Said]) -> dict[str, tuple[str, ...]]:
    """dialogue id -> the probes it is evidence for; an id naming no line of the conversation is
    left out (the published file has a few), the probe keeping the evidence that resolves."""
    found: dict[str, list[str]] = {}
    for number, question in enumerate(questions, start=1):
        for session, line in question.evidence:
            if _dia(session, line) in lines:
                found.setdefault(_dia(session, line), []).append(f"q{number}")
    return {dia: tuple(probes) for dia, probes in found.items()}


def _probe(probe: str, question: _Question) -> dict[str, Any]:
    """The question as a probe: its text as LoCoMo asks it, its category, its reference answer and
    what can be checked of the answer."""
    text = question.text
    if question.category == TEMPORAL:
        text += " Use the DATE of the sessions to answer with an approximate date."
    expect: list[dict[str, Any]]
    if question.category == ADVERSARIAL:
        # LoCoMo offers the tempting answer beside "not mentioned", in an order it draws at random;
        # here it alternates by probe, so the same file always gives the same text.
        options = [NOT_MENTIONED, question.answer]
        if int(probe[1:]) % 2 == 0:
            options.reverse()
        text += f" Select the correct answer: (a) {options[0]} (b) {options[1]}."
        reference = NOT_MENTIONED
        expect = [{"abstain": True}]
    else:
        reference = question.answer
        # A literal value the offline check can look for: a few words on one line, no list of them.
        short = len(question.answer.split()) <= _SHORT_WORDS and not any(c in question.answer for c in ",;\n")
        expect = [{"value": question.answer}] if short else []
        expect.append({"rubric": f"The answer gives the same information as the reference answer: {question.answer}"})
    return {
        "user": text,
        "probe": probe,
        "asks": [],
        "category": str(question.category),
        "reference": {"answer": reference},
        "expect": expect,
    }
