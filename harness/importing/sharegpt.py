"""`sharegpt`: conversations in the ShareGPT shape FastChat trains on (`fastchat/data/*.py`,
`fastchat/train/train.py`): `{"id": ..., "conversations": [{"from": "human", "value": ...},
{"from": "gpt", "value": ...}, ...]}`, usually a JSON array of them; one chronology each.

`from` names the speaker: `human` (or `user`) is a turn's user message, `gpt` (or `assistant`,
`chatgpt`, `bing`, `bard`: the names scraped ShareGPT sets use for the model) its recorded reply.
A leading `from: system` entry, or the conversation's top-level `system` text (FastChat's
`train_with_template.py` reads one there), is the chronology's `system:`. Everything else is as
`openai-chat` does it (`openai_chat.log_items`): the item id is the conversation's `id` (else
`line-N` / `item-N`), and `--probe-last`, `--expect` and `--category` mean the same. FastChat's
tools read no `messages` / `role` / `content` list: a file of those is `openai-chat`'s shape.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from harness.base.text import shown
from harness.importing.openai_chat import log_items
from harness.importing.source import Source, checked_text, json_type
from harness.importing.turns import Item, Said, Steps

__all__ = ["SPEAKERS", "convert"]

# `from` -> the chronology's role; system is allowed only first
SPEAKERS: dict[str, str] = {
    "human": "user",
    "user": "user",
    "gpt": "assistant",
    "assistant": "assistant",
    "chatgpt": "assistant",
    "bing": "assistant",
    "bard": "assistant",
    "system": "system",
}


def convert(
    source: Source, licence: str, probe_last: bool, expectations: dict[str, Any] | None = None
) -> Iterator[Item]:
    return log_items(source, licence, probe_last, expectations, _conversation)


def _conversation(source: Source, where: str, record: dict[str, Any]) -> tuple[str | None, list[Said | Steps]]:
    """The record's system text and its messages, in order."""
    entries = record.get("conversations")
    if not isinstance(entries, list):
        got = "missing" if entries is None else f"a {json_type(entries)}, not a list"
        hint = "; this is openai-chat's shape: import it as openai-chat" if "messages" in record else ""
        raise source.refuse(
            where,
            "conversations",
            f'{got}; each item is {{"conversations": [{{"from": ..., "value": ...}}, ...]}}{hint}',
        )
    system = checked_text(source, where, "system", record["system"]) if record.get("system") else None
    said: list[Said | Steps] = []
    for index, entry in enumerate(entries):
        name = f"conversations[{index}]"
        if not isinstance(entry, dict):
            raise source.refuse(where, name, f"a {json_type(entry)}, not an object with from and value")
        role = SPEAKERS.get(entry.get("from")) if isinstance(entry.get("from"), str) else None
        if role is None:
            raise source.refuse(
                where,
                f"{name}.from",
                f"{shown(entry.get('from'))} is not one of {', '.join(SPEAKERS)}; fix the speaker",
            )
        text = checked_text(source, where, f"{name}.value", entry.get("value"))
        if role == "system":
            if said or system is not None:
                raise source.refuse(
                    where,
                    name,
                    "a system message after the conversation began (or beside `system`); a chronology has one, first",
                )
            system = text
        else:
            said.append(Said(role, text, f"{name}.value"))
    if not any(isinstance(s, Said) and s.role == "user" for s in said):
        raise source.refuse(where, "conversations", "no message from human; a chronology needs at least one")
    return system, said
