"""A recorded conversation (user and assistant messages) as chronology turns, and what every
imported chronology holds: `Item`, one chronology to write.

Each user message becomes a turn whose `assistant:` is the recorded reply that followed it, so under
every policy the history holds the recorded reply and the model is called only at probes. A
conversation's shape that a turn cannot hold is merged, never dropped: consecutive user messages
become one turn (joined by a blank line), as do consecutive replies. A reply before any user
message cannot be a turn's reply and is refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.importing.source import Source

__all__ = ["Item", "Said", "recorded_turns", "source_of"]


@dataclass(frozen=True)
class Said:
    """One message of a recorded conversation: who said it, the text, the probe ids it is evidence for."""

    role: str  # "user" or "assistant"
    text: str
    field: str  # where it is in the item, for messages: `messages[3].content`
    evidence: tuple[str, ...] = ()


@dataclass(frozen=True)
class Item:
    """One chronology to write: its file stem and document (fields in the order written)."""

    item_id: str
    stem: str
    document: dict[str, Any] = field(hash=False)


def recorded_turns(
    source: Source, where: str, messages: Sequence[Said], session: str | None = None
) -> list[dict[str, Any]]:
    """The turns of `messages`: user text with the recorded reply after it (see the module's rules)."""
    turns: list[dict[str, Any]] = []
    for said in messages:
        if said.role == "user":
            if turns and "assistant" not in turns[-1]:
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
    for turn in turns:  # `evidence:` after the reply, as a reader expects it
        if "evidence" in turn:
            turn["evidence"] = turn.pop("evidence")
    return turns


def _merge(turn: dict[str, Any], role: str, said: Said) -> None:
    turn[role] = f"{turn[role]}\n\n{said.text}"
    if said.evidence:
        turn["evidence"] = sorted({*turn.get("evidence", ()), *said.evidence})


def source_of(dataset: str, item_id: str, source: Source, licence: str) -> dict[str, str]:
    """The `source:` every imported chronology carries (decision 0001)."""
    return {"dataset": dataset, "item_id": item_id, "sha256": source.sha256, "licence": licence}
