"""`longmemeval`: LongMemEval's `longmemeval_oracle.json` and `longmemeval_s.json` (Wu et al. 2025,
arXiv:2410.10813, github.com/xiaowu0162/LongMemEval); one chronology per question.

Each haystack session becomes a chronology session named after its id, its turns the recorded
conversation, and its date written as the first line of its first user message (`Session date:
...`): the model reads dates there, as LongMemEval's own prompts give them (a chronology has no
date field). Sessions are put in date order (the oracle file lists them unsorted); a session the assistant opens gets the date line
as a user turn of its own, answered by that recorded reply. Turns marked
`has_answer` are `evidence:` for the probe. The question is the probe `question`, in a session of
its own (`--sessions separate`: each session its own history, as a new chat is) or after every
session in one history (`--sessions joined`, the default: LongMemEval's setting, where the
assistant is expected to remember across sessions), its first line the question's date
(`Current date: ...`).

Expectations: `answer` as a `value` (the answer contains it; not for `single-session-preference`,
whose answer is a rubric), `abstain: true` for the abstention questions (ids holding `_abs`, as
upstream tests them), and LongMemEval's own judge prompt for the question's type as a `rubric`
(pass `YES`).

The rubric is the head of LongMemEval's `get_anscheck_prompt` (src/evaluation/evaluate_qa.py): the
type's instructions, the question and the correct answer, to the character; the judge's template
(harness.run.judge_prompts, chosen by the item's dataset) adds the model's response and the closing
question, so the judge is sent upstream's prompt exactly. The instructions are upstream's words,
Copyright (c) 2024 Di Wu, MIT License (the repository's LICENSE), which allows this with the notice
kept; docs/importing.md records it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from harness.base.names import UNSAFE, file_stem
from harness.base.text import shown
from harness.chronology.schema import MAX_SESSIONS, NAME_PATTERN
from harness.importing.source import Source, checked_text, json_type, message_role, text_field
from harness.importing.turns import Item, Said, converted, recorded_turns, source_of

__all__ = ["JUDGE_INSTRUCTIONS", "PROBE", "SESSION_MODES", "convert", "judge_rubric"]

PROBE = "question"
SESSION_MODES = ("separate", "joined")
_ABSTENTION = "_abs"
_PREFERENCE = "single-session-preference"

_CONTAINS = (
    "I will give you a question, a correct answer, and a response from a model. Please answer yes if the "
    "response contains the correct answer. Otherwise, answer no. If the response is equivalent to the correct "
    "answer or contains all the intermediate steps to get the correct answer, you should also answer yes. If "
    "the response only contains a subset of the information required by the answer, answer no. "
)
# LongMemEval's judge instructions per question type (evaluate_qa.py, get_anscheck_prompt), MIT
# License, to the character: upstream's first two templates end their instructions with a space.
JUDGE_INSTRUCTIONS: dict[str, str] = {
    "single-session-user": _CONTAINS,
    "single-session-assistant": _CONTAINS,
    "multi-session": _CONTAINS,
    "temporal-reasoning": _CONTAINS
    + "In addition, do not penalize off-by-one errors for the number of days. If the question asks for the "
    "number of days/weeks/months, etc., and the model makes off-by-one errors (e.g., predicting 19 days when "
    "the answer is 18), the model's response is still correct. ",
    "knowledge-update": "I will give you a question, a correct answer, and a response from a model. Please "
    "answer yes if the response contains the correct answer. Otherwise, answer no. If the response contains "
    "some previous information along with an updated answer, the response should be considered as correct as "
    "long as the updated answer is the required answer.",
    _PREFERENCE: "I will give you a question, a rubric for desired personalized response, and a response from a "
    "model. Please answer yes if the response satisfies the desired response. Otherwise, answer no. The model "
    "does not need to reflect all the points in the rubric. The response is correct as long as it recalls and "
    "utilizes the user's personal information correctly.",
    _ABSTENTION: "I will give you an unanswerable question, an explanation, and a response from a model. Please "
    "answer yes if the model correctly identifies the question as unanswerable. The model could say that the "
    "information is incomplete, or some other information is given but the asked information is not.",
}
_ANSWER_LABEL = {_PREFERENCE: "Rubric", _ABSTENTION: "Explanation"}
_DATE = re.compile(r"^\s*(\d{4})/(\d{2})/(\d{2})\s*(?:\([A-Za-z]+\))?\s*(\d{2}):(\d{2})\s*$")


def judge_rubric(question_type: str, question: str, answer: str) -> str:
    """The head of LongMemEval's judge prompt for `question_type` (or `_abs`): its instructions, the
    question and the correct answer. The judge's template adds the model's response and the closing
    question (harness.run.judge_prompts `LONGMEMEVAL`), giving `get_anscheck_prompt`'s text exactly."""
    label = _ANSWER_LABEL.get(question_type, "Correct Answer")
    return f"{JUDGE_INSTRUCTIONS[question_type]}\n\nQuestion: {question}\n\n{label}: {answer}"


def convert(source: Source, licence: str, sessions: str = "joined") -> Iterator[Item]:
    dataset = file_stem(source.path.stem, "") if source.path.stem.startswith("longmemeval") else "longmemeval"
    return converted(source, lambda record: _item(source, record.where, record.value, dataset, licence, sessions))


def _item(source: Source, where: str, row: dict[str, Any], dataset: str, licence: str, mode: str) -> Item:
    _, item_id = text_field(source, where, row, "question_id")
    where = f"{where} ({item_id})"
    _, question_type = text_field(source, where, row, "question_type")
    _, question = text_field(source, where, row, "question")
    _, question_date = text_field(source, where, row, "question_date")
    answer = _answer(source, where, row)
    abstention = _ABSTENTION in item_id  # upstream: `'_abs' in question_id`
    judged_as = _ABSTENTION if abstention else question_type
    if judged_as not in JUDGE_INSTRUCTIONS:
        known = ", ".join(k for k in JUDGE_INSTRUCTIONS if k != _ABSTENTION)
        raise source.refuse(where, "question_type", f"{shown(question_type)} is not a LongMemEval type ({known})")
    _date_key(source, where, "question_date", question_date)
    haystack = _haystack(source, where, row)
    names = _session_names([h[0] for h in haystack])
    separate = mode == "separate"
    turns: list[dict[str, Any]] = []
    for (_, date, said), name in zip(haystack, names):
        dated = f"Session date: {date}"
        if said[0].role == "user":
            said[0] = replace(said[0], text=f"{dated}\n\n{said[0].text}")
        else:  # a session the assistant opens: the date line is the user's turn its reply answers
            said.insert(0, Said("user", dated, said[0].field))
        turns += recorded_turns(source, where, said, session=name if separate else None)
    question_session = _free("question", names)
    probe: dict[str, Any] = {"user": f"Current date: {question_date}\n\n{question}"}
    if separate:
        probe["session"] = question_session
    expect: list[dict[str, Any]] = []
    if abstention:
        expect.append({"abstain": True})
    elif question_type != _PREFERENCE:
        expect.append({"value": answer})
    expect.append({"rubric": judge_rubric(judged_as, question, answer), "pass": "YES"})
    probe.update(probe=PROBE, asks=[], expect=expect)
    turns.append(probe)
    document: dict[str, Any] = {
        "title": f"LongMemEval {item_id} ({question_type}{', abstention' if abstention else ''})",
        "description": _description(mode),
        # upstream counts an abstention item in its question_type's accuracy (print_qa_metrics.py),
        # and all of them again, apart, as abstention accuracy: its category is the type
        "source": {**source_of(dataset, item_id, source, licence), "category": question_type},
    }
    if separate:
        if len(names) + 1 > MAX_SESSIONS:
            raise source.refuse(
                where,
                "haystack_sessions",
                f"{len(names)} sessions, over the {MAX_SESSIONS - 1} a chronology may hold beside the question's; "
                "import with --sessions joined",
            )
        document["sessions"] = [*names, question_session]
    document["turns"] = turns
    return Item(item_id, file_stem(dataset, item_id), document)


def _answer(source: Source, where: str, row: dict[str, Any]) -> str:
    if "answer" not in row:
        raise source.refuse(where, "answer", "missing; every item needs it")
    value = row["answer"]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)  # a few answers are bare numbers
    return checked_text(source, where, "answer", value)


def _haystack(source: Source, where: str, row: dict[str, Any]) -> list[tuple[str, str, list[Said]]]:
    """(session id, date, messages) of each haystack session, in date order."""
    lists = {}
    for name in ("haystack_session_ids", "haystack_dates", "haystack_sessions"):
        value = row.get(name)
        if not isinstance(value, list):
            got = "missing" if value is None else f"a {json_type(value)}, not a list"
            raise source.refuse(where, name, f"{got}; every item has one entry per history session")
        lists[name] = value
    ids, dates, sessions = lists.values()
    if not (len(ids) == len(dates) == len(sessions)) or not ids:
        raise source.refuse(
            where,
            "haystack_sessions",
            f"{len(ids)} ids, {len(dates)} dates and {len(sessions)} sessions; each list needs one entry per session",
        )
    found = []
    for index, (sid, date, session) in enumerate(zip(ids, dates, sessions)):
        sid = checked_text(source, where, f"haystack_session_ids[{index}]", sid)
        date = checked_text(source, where, f"haystack_dates[{index}]", date)
        key = _date_key(source, where, f"haystack_dates[{index}]", date)
        found.append((key, index, sid, date, _said(source, where, index, session)))
    found.sort(key=lambda f: (f[0], f[1]))
    return [(sid, date, said) for _, _, sid, date, said in found]


def _said(source: Source, where: str, index: int, session: object) -> list[Said]:
    name = f"haystack_sessions[{index}]"
    if not isinstance(session, list) or not session:
        raise source.refuse(where, name, f"a {json_type(session)}, not a non-empty list of turns")
    said = []
    for number, turn in enumerate(session):
        field = f"{name}[{number}]"
        role = message_role(source, where, field, turn, ("user", "assistant"))
        text = checked_text(source, where, f"{field}.content", turn.get("content"))
        marked = turn.get("has_answer", False)
        if not isinstance(marked, bool):
            raise source.refuse(where, f"{field}.has_answer", f"a {json_type(marked)}, not true or false")
        said.append(Said(role, text, f"{field}.content", (PROBE,) if marked else ()))
    return said


def _date_key(source: Source, where: str, field: str, date: str) -> tuple[int, ...]:
    match = _DATE.match(date)
    if match is None:
        raise source.refuse(where, field, f"{shown(date)} is not a LongMemEval date (2023/05/20 (Sat) 02:21)")
    return tuple(int(g) for g in match.groups())


def _session_names(ids: list[str]) -> list[str]:
    """Session ids as chronology session names (letters, digits, `-`, `_`), each once: a repeated id
    gets the first free `-2`, `-3`, ... suffix. Linear in the ids: the names taken are a set and each
    base name remembers the last suffix it gave (every smaller one was taken then and still is), so
    thousands of repeats of one id do not retry every suffix against every name (issue 37)."""
    names: list[str] = []
    taken: set[str] = set()
    last: dict[str, int] = {}
    for sid in ids:
        base = UNSAFE.sub("-", sid).strip("-") or "session"
        name, n = base, last.get(base, 1)
        if n > 1:
            name = f"{base}-{n}"
        while name in taken:
            n += 1
            name = f"{base}-{n}"
        last[base] = n
        taken.add(name)
        names.append(name)
    assert all(re.match(NAME_PATTERN, n) for n in names)
    return names


def _free(name: str, taken: list[str]) -> str:
    taken_set = set(taken)
    candidate, n = name, 1
    while candidate in taken_set:
        n += 1
        candidate = f"{name}-{n}"
    return candidate


def _description(mode: str) -> str:
    where = (
        "in a session of its own, as a new chat (each session keeps its own history)"
        if mode == "separate"
        else "after every session, in one history (LongMemEval's long-context setting)"
    )
    return (
        "LongMemEval question. Each history session is replayed with its recorded replies, its date on the "
        f"first line of its first message; the question is asked {where}. Turns marked has_answer are its "
        "evidence. The answer is checked offline (value or abstention) and by LongMemEval's judge prompt (--judge)."
    )
