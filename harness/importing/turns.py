"""A recorded conversation (user and assistant messages, and an agent's tool steps) as chronology
turns, and what every imported chronology holds: `Item`, one chronology to write.

Each user message becomes a turn whose `assistant:` is the recorded reply that followed it, so under
every policy the history holds the recorded reply and the model is called only at probes. A
conversation's shape that a turn cannot hold is merged, never dropped: consecutive user messages
become one turn (joined by a blank line), as do consecutive replies. A reply before any user
message cannot be a turn's reply and is refused.

Tool steps (`Steps`: an assistant message's tool calls and the results answering them) after a
user message are that turn's `steps:`, in order; the assistant's text of the turn, before or
between its steps or after them, is its one reply (a step holds no text). A user message after a
turn's steps starts a turn of its own, so the steps stay between the two messages they came
between; the turn before it then has the reply recorded before its steps, or none.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from harness.base import json_bounded
from harness.base.json_bounded import JsonBounded
from harness.base.text import visible
from harness.importing.source import ImportRefused, Located, Source, checked_text, json_records, json_type, message_role

__all__ = ["Item", "Said", "Steps", "converted", "message_list", "recorded_turns", "source_of"]


@dataclass(frozen=True)
class Said:
    """One message of a recorded conversation: who said it, the text, the probe ids it is evidence for."""

    role: str  # "user" or "assistant"
    text: str
    field: str  # where it is in the item, for messages: `messages[3].content`
    evidence: tuple[str, ...] = ()


def message_list(source: Source, where: str, name: str, value: object) -> list[Said]:
    """The item's field `name`: a non-empty list of user and assistant `{role, content}` messages,
    or the JSON text of one (as some benchmarks publish it)."""
    if isinstance(value, str):
        try:
            value = json_bounded.loads(value, what=f"the {name} string")
        except JsonBounded as exc:
            raise source.refuse(where, name, exc.msg) from None
        except json.JSONDecodeError as exc:
            raise source.refuse(where, name, f"a string that is not a JSON list of messages ({exc.msg})") from None
    if not isinstance(value, list) or not value:
        raise source.refuse(where, name, f"a {json_type(value)}, not a non-empty list of {{role, content}} messages")
    said = []
    for index, message in enumerate(value):
        field = f"{name}[{index}]"
        role = message_role(source, where, field, message, ("user", "assistant"))
        said.append(
            Said(role, checked_text(source, where, f"{field}.content", message.get("content")), f"{field}.content")
        )
    return said


@dataclass(frozen=True)
class Steps:
    """An agent's tool steps between a user message and its reply, each `{tool_calls, results}` as
    `steps:` writes it (decision 0001); `field` says where the first is in the item."""

    steps: tuple[dict[str, Any], ...]
    field: str


@dataclass(frozen=True)
class Item:
    """One chronology to write: its file stem and document (fields in the order written)."""

    item_id: str
    stem: str
    document: dict[str, Any] = field(hash=False)
    origin: str = ""  # `FILE:LINE` or `FILE:item N`: where a refusal of the written chronology points


def converted(source: Source, make: Callable[[Located], Item]) -> Iterator[Item]:
    """Each record of the input (JSONL, a JSON array or object: `json_records`) made into its item,
    one at a time. A record `make` refuses is passed over and listed under `--skip-invalid`
    (`Source.skips`); without it, it refuses the import."""
    for record in json_records(source):
        try:
            item = make(record)
        except ImportRefused as refused:
            source.skips.take(refused)
            continue
        yield replace(item, origin=f"{visible(str(source.path))}:{record.where}")


def recorded_turns(
    source: Source, where: str, messages: Sequence[Said | Steps], session: str | None = None
) -> list[dict[str, Any]]:
    """The turns of `messages`: user text with the recorded steps and reply after it (see the module's rules)."""
    turns: list[dict[str, Any]] = []
    for said in messages:
        if isinstance(said, Steps):
            if not turns:
                raise source.refuse(
                    where,
                    said.field,
                    "a tool call before any user message; a chronology's turn starts with the user's message",
                )
            turns[-1].setdefault("steps", []).extend(said.steps)
        elif said.role == "user":
            if turns and "assistant" not in turns[-1] and "steps" not in turns[-1]:
                _merge(turns[-1], "user", said)
                continue
            turn: dict[str, Any] = {"user": said.text}
            if session is not None:
                turn["session"] = session
            if said.evidence:
                turn["evidence"] = list(said.evidence)
            turns.append(turn)
        elif not turns:
            raise source.refuse(
                where, said.field, "a reply before any user message; a chronology's turn starts with the user's message"
            )
        elif "assistant" in turns[-1]:
            _merge(turns[-1], "assistant", said)
        else:
            turns[-1]["assistant"] = said.text
            if said.evidence:
                turns[-1]["evidence"] = sorted({*turns[-1].get("evidence", ()), *said.evidence})
    for turn in turns:  # the steps before the reply and `evidence:` after it, as a reader expects them
        for key in ("steps", "assistant", "evidence"):
            if key in turn:
                turn[key] = turn.pop(key)
    return turns


def _merge(turn: dict[str, Any], role: str, said: Said) -> None:
    turn[role] = f"{turn[role]}\n\n{said.text}"
    if said.evidence:
        turn["evidence"] = sorted({*turn.get("evidence", ()), *said.evidence})


def source_of(dataset: str, item_id: str, source: Source, licence: str) -> dict[str, str]:
    """The `source:` every imported chronology carries (decision 0001)."""
    return {"dataset": dataset, "item_id": item_id, "sha256": source.sha256, "licence": licence}
