"""`openai-chat`: JSONL of `{"messages": [...]}`, the shape of providers' chat logs and fine-tuning
files; one chronology per line.

A leading `system` message is the chronology's `system:`; each user message is a turn with the
recorded assistant reply after it (`harness.importing.turns`). With `probe_last`, the final user
message is the probe `last` (a reply recorded after it is left out: the model answers the probe
under each policy). Expectations come from a separate file (`expectations`), by item id: the
line's `"id"` when it has one (text, or a whole number), else `line-N`. Tool calls (an assistant message with `tool_calls` or
`function_call`, a `tool` or `function` message) are refused for now, as is content that is not
text (an image part).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from harness.importing.emit import file_stem
from harness.importing.source import (
    ImportRefused,
    Located,
    Source,
    checked_text,
    json_lines,
    json_type,
    read_source,
)
from harness.importing.turns import Item, Said, recorded_turns, source_of

__all__ = ["PROBE", "convert", "read_expectations"]

PROBE = "last"  # the probe id of the final user message under --probe-last
_TOOL_REFUSAL = "tool calls are not imported yet; remove the tool messages, or wait for tool steps in chronologies"


def convert(
    source: Source, licence: str, probe_last: bool, expectations: dict[str, Any] | None = None
) -> Iterator[Item]:
    dataset = file_stem(source.path.stem, "")
    found = dict(expectations or {})
    for record in json_lines(source):
        item_id = _item_id(source, record)
        expect = found.pop(item_id, None)
        if expect is not None and not probe_last:
            raise source.refuse(
                record.where,
                "",
                f"--expect gives item {item_id!r} an expectation, but it has no probe; add --probe-last",
            )
        yield _item(source, record, item_id, dataset, licence, probe_last, expect)
    if found:
        unknown = ", ".join(repr(k) for k in sorted(found)[:3])
        raise ImportRefused(
            f'--expect names items the input does not hold: {unknown}; item ids are each line\'s "id", else line-N'
        )


def _item_id(source: Source, record: Located) -> str:
    given = record.value.get("id")
    if given is None:
        return f"line-{record.where}"
    if isinstance(given, int) and not isinstance(given, bool):
        return str(given)
    return checked_text(source, record.where, "id", given)


def _item(
    source: Source, record: Located, item_id: str, dataset: str, licence: str, probe_last: bool, expect: Any
) -> Item:
    where = record.where
    messages = record.value.get("messages")
    if not isinstance(messages, list):
        got = "missing" if messages is None else f"a {json_type(messages)}, not a list"
        raise source.refuse(
            where, "messages", f'{got}; each line is {{"messages": [{{"role": ..., "content": ...}}, ...]}}'
        )
    system: str | None = None
    said: list[Said] = []
    for index, message in enumerate(messages):
        name = f"messages[{index}]"
        if not isinstance(message, dict):
            raise source.refuse(where, name, f"a {json_type(message)}, not an object with role and content")
        role = message.get("role")
        if role in ("tool", "function") or message.get("tool_calls") or message.get("function_call"):
            raise source.refuse(where, name, _TOOL_REFUSAL)
        if role not in ("system", "developer", "user", "assistant"):
            raise source.refuse(where, f"{name}.role", f"{role!r} is not system, user or assistant")
        text = _content(source, where, f"{name}.content", message.get("content"))
        if role in ("system", "developer"):
            if said or system is not None:
                raise source.refuse(
                    where, name, "a system message after the conversation began; a chronology has one, first"
                )
            system = text
        else:
            said.append(Said(role, text, f"{name}.content"))
    if not any(s.role == "user" for s in said):
        raise source.refuse(where, "messages", "no user message; a chronology needs at least one")
    turns = recorded_turns(source, where, said)
    if probe_last:
        last = turns[-1]
        last.pop("assistant", None)
        last["probe"] = PROBE
        last["asks"] = []
        if expect is not None:
            last["expect"] = expect
    document: dict[str, Any] = {
        "title": f"{dataset} {item_id}",
        "description": _description(probe_last),
        "source": source_of(dataset, item_id, source, licence),
    }
    if system is not None:
        document["system"] = system
    document["turns"] = turns
    return Item(item_id, file_stem(dataset, item_id), document)


def _content(source: Source, where: str, field: str, content: object) -> str:
    """A message's text: a string, or a list of text parts (joined); other parts are refused."""
    if isinstance(content, list):
        texts = []
        for index, part in enumerate(content):
            if not isinstance(part, dict) or part.get("type") != "text":
                kind = part.get("type") if isinstance(part, dict) else json_type(part)
                raise source.refuse(where, f"{field}[{index}]", f"a {kind!s} part; only text is imported")
            texts.append(checked_text(source, where, f"{field}[{index}].text", part.get("text")))
        content = "\n".join(texts)
    return checked_text(source, where, field, content)


def _description(probe_last: bool) -> str:
    replies = "Each user message is replayed with the assistant reply recorded after it"
    if probe_last:
        return f"{replies}; the final user message is the probe, answered by the model under each policy."
    return f"{replies}; there is no probe (import with --probe-last to make the final user message one)."


def read_expectations(path: Path, limit: int) -> dict[str, Any]:
    """`--expect FILE`: item id -> expectation (a mapping, or a list of them, as in a chronology).

    JSONL (`*.jsonl`): one `{"id": ITEM, "expect": ...}` a line; otherwise one JSON or YAML mapping
    from item id to expectation. The loader checks each expectation's shape when the files are validated.
    """
    source = read_source(path, limit)
    found: dict[str, Any] = {}
    if path.suffix == ".jsonl":
        for record in json_lines(source):
            item = checked_text(source, record.where, "id", record.value.get("id"))
            if "expect" not in record.value:
                raise source.refuse(record.where, "expect", 'missing; each line is {"id": ITEM, "expect": ...}')
            if item in found:
                raise source.refuse(record.where, "id", f"{item!r} is given twice; give each item's expectations once")
            found[item] = _expectation(source, record.where, record.value["expect"])
        return found
    mapping = _mapping(source)
    for item, expect in mapping.items():
        if not isinstance(item, str):
            raise source.refuse("1", str(item), "an item id is text; quote it")
        found[item] = _expectation(source, item, expect)
    return found


def _mapping(source: Source) -> dict[Any, Any]:
    from harness.chronology.safe_yaml import YamlRefused, compose

    text = source.whole_text()  # an --expect file: a mapping, read whole within --max-input-bytes
    try:
        value = json.loads(text) if source.path.suffix == ".json" else compose(text)[1]
    except json.JSONDecodeError as exc:
        raise source.refuse(str(exc.lineno), "", f"not JSON ({exc.msg})") from None
    except YamlRefused as exc:
        raise source.refuse(str(exc.line or 1), "", str(exc)) from None
    except yaml.YAMLError as exc:
        raise source.refuse("1", "", f"not YAML: {str(exc).splitlines()[0]}") from None
    if not isinstance(value, dict):
        raise source.refuse("1", "", "not a mapping from item id to expectation")
    return value


def _expectation(source: Source, where: str, expect: object) -> object:
    items = expect if isinstance(expect, list) else [expect]
    if not items or not all(isinstance(e, dict) and len(e) >= 1 for e in items):
        raise source.refuse(
            where, "expect", "an expectation is a mapping ({value: ...}, {pattern: ...}, ...) or a list of them"
        )
    return expect
