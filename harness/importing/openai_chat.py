"""`openai-chat`: `{"messages": [...]}` conversations, the shape of providers' chat logs and
fine-tuning files, as JSONL (one a line), a JSON array or one JSON object; one chronology each.

A leading `system` message is the chronology's `system:`; each user message is a turn with the
recorded assistant reply after it (`harness.importing.turns`). With `probe_last`, the final user
message is the probe `last` (a reply recorded after it is left out: the model answers the probe
under each policy). Expectations come from a separate file (`expectations`), by item id: the
line's `"id"` when it has one (text, or a whole number), else `line-N`. Content that is not text
(an image part) is refused.

Tool use becomes the turn's `steps:` (decision 0001): an assistant message with `tool_calls` and
the `tool` messages answering them, which must follow it before any other message, are one step;
its results are written in the calls' order (the order of one message's results in the log is
not kept); the message's text, if any, joins the turn's reply (`harness.importing.turns`). A tool
message answering no call of the message before it, a call left unanswered, an id used twice, and
the legacy `function_call` / `function` messages (no call ids) are refused. The line's `tools`
(the definitions offered) are not imported: a chronology replays the calls made.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from harness.base import json_bounded
from harness.base.json_bounded import JsonBounded
from harness.base.names import file_stem
from harness.base.text import shown
from harness.chronology.schema import ID_PATTERN, TOOL_NAME_PATTERN
from harness.importing.source import (
    ImportRefused,
    Located,
    Source,
    checked_text,
    json_lines,
    json_type,
    read_source,
)
from harness.importing.turns import Item, Said, Steps, converted, recorded_turns, source_of

__all__ = ["PROBE", "Reader", "convert", "log_items", "read_expectations"]

PROBE = "last"  # the probe id of the final user message under --probe-last
_LEGACY = (
    "a legacy function call (function_call, or role function) carries no call id, and is not imported; "
    "rewrite it as tool_calls (with an id) answered by a tool message (with that tool_call_id)"
)


def convert(
    source: Source, licence: str, probe_last: bool, expectations: dict[str, Any] | None = None
) -> Iterator[Item]:
    return log_items(source, licence, probe_last, expectations, _recorded)


# One conversation of a log read into its system message and what was said, in order (`where`: its line).
Reader = Callable[[Source, str, dict[str, Any]], tuple["str | None", "list[Said | Steps]"]]


def log_items(
    source: Source, licence: str, probe_last: bool, expectations: dict[str, Any] | None, read: Reader
) -> Iterator[Item]:
    """The chronologies of a chat log, one per conversation (`read` takes one apart: the
    `openai-chat` and `sharegpt` formats differ only there): `--probe-last` and `--expect` as
    documented above, each expectation matched to its conversation by item id."""
    dataset = file_stem(source.path.stem, "")
    found = dict(expectations or {})

    def make(record: Located) -> Item:
        item_id = _item_id(source, record)
        expect = found.pop(item_id, None)
        if expect is not None and not probe_last:
            raise source.refuse(
                record.where,
                "",
                f"--expect gives item {shown(item_id)} an expectation, but it has no probe; add --probe-last",
            )
        system, said = read(source, record.where, record.value)
        return _item(source, record.where, item_id, dataset, licence, probe_last, expect, system, said)

    yield from converted(source, make)
    if found:
        unknown = ", ".join(shown(k) for k in sorted(found)[:3])
        raise ImportRefused(
            f'--expect names items the input does not hold: {unknown}; item ids are each conversation\'s "id", '
            "else line-N (item-N in a JSON array)"
        )


def _item_id(source: Source, record: Located) -> str:
    """The conversation's own `id`, else its line (`line-N`) or place in a JSON array (`item-N`):
    a line's number, not its count, so a line passed over (`--skip-invalid`) renames no other."""
    given = record.value.get("id")
    if given is None:
        return record.name
    if isinstance(given, int) and not isinstance(given, bool):
        return str(given)
    return checked_text(source, record.where, "id", given)


def _recorded(source: Source, where: str, record: dict[str, Any]) -> tuple[str | None, list[Said | Steps]]:
    """An openai-chat conversation: its `messages`."""
    messages = record.get("messages")
    if not isinstance(messages, list):
        got = "missing" if messages is None else f"a {json_type(messages)}, not a list"
        raise source.refuse(
            where, "messages", f'{got}; each conversation is {{"messages": [{{"role": ..., "content": ...}}, ...]}}'
        )
    system, said = _messages(source, where, messages)
    if not any(isinstance(s, Said) and s.role == "user" for s in said):
        raise source.refuse(where, "messages", "no user message; a chronology needs at least one")
    return system, said


def _item(
    source: Source,
    where: str,
    item_id: str,
    dataset: str,
    licence: str,
    probe_last: bool,
    expect: Any,
    system: str | None,
    said: list[Said | Steps],
) -> Item:
    turns = recorded_turns(source, where, said)
    if probe_last:  # the probe keeps its steps: the model answers as the agent's last call, results in view
        last = turns[-1]
        last.pop("assistant", None)
        last["probe"] = PROBE
        last["asks"] = []
        if expect is not None:
            last["expect"] = expect
    document: dict[str, Any] = {
        "title": f"{dataset} {item_id}",
        "description": _description(probe_last, any(isinstance(s, Steps) for s in said)),
        "source": source_of(dataset, item_id, source, licence),
    }
    if system is not None:
        document["system"] = system
    document["turns"] = turns
    return Item(item_id, file_stem(dataset, item_id), document)


def _messages(source: Source, where: str, messages: list[Any]) -> tuple[str | None, list[Said | Steps]]:
    """The line's system message, and its user and assistant messages and tool steps in order."""
    system: str | None = None
    said: list[Said | Steps] = []
    calls = _Calls(source, where)
    for index, message in enumerate(messages):
        name = f"messages[{index}]"
        if not isinstance(message, dict):
            raise source.refuse(where, name, f"a {json_type(message)}, not an object with role and content")
        role = message.get("role")
        if role == "tool":
            calls.answer(name, message)
            continue
        said.extend(calls.steps(name))
        if role == "function" or message.get("function_call"):
            raise source.refuse(where, name, _LEGACY)
        if role not in ("system", "developer", "user", "assistant"):
            raise source.refuse(where, f"{name}.role", f"{shown(role)} is not system, user, assistant or tool")
        if role == "assistant" and message.get("tool_calls"):
            text = _content(source, where, f"{name}.content", message.get("content"), empty=True)
            if text.strip():
                said.append(Said(role, text, f"{name}.content"))
            calls.made(name, message["tool_calls"])
            continue
        text = _content(source, where, f"{name}.content", message.get("content"))
        if role in ("system", "developer"):
            if said or system is not None:
                raise source.refuse(
                    where, name, "a system message after the conversation began; a chronology has one, first"
                )
            system = text
        else:
            said.append(Said(role, text, f"{name}.content"))
    said.extend(calls.steps("the end of the conversation"))
    return system, said


def _content(source: Source, where: str, field: str, content: object, empty: bool = False) -> str:
    """A message's text: a string, or a list of text parts (joined); other parts are refused.
    `empty`: blank text, or none (null), is allowed (a tool's output, an assistant message that calls)."""
    if empty and content is None:
        return ""
    read = _any_text if empty else checked_text
    if isinstance(content, list):
        texts = []
        for index, part in enumerate(content):
            if not isinstance(part, dict) or part.get("type") != "text":
                kind = part.get("type") if isinstance(part, dict) else json_type(part)
                raise source.refuse(where, f"{field}[{index}]", f"a {kind!s} part; only text is imported")
            texts.append(read(source, where, f"{field}[{index}].text", part.get("text")))
        content = "\n".join(texts)
    return read(source, where, field, content)


def _any_text(source: Source, where: str, field: str, value: object) -> str:
    """`value` if it is a string of valid Unicode, blank included (a tool's output may be empty)."""
    return value if isinstance(value, str) and not value.strip() else checked_text(source, where, field, value)


def _description(probe_last: bool, steps: bool) -> str:
    replies = "Each user message is replayed with the assistant reply recorded after it"
    if steps:
        replies = "Each user message is replayed with the tool calls and results (steps) and the assistant reply recorded after it"
    if probe_last:
        return f"{replies}; the final user message is the probe, answered by the model under each policy."
    return f"{replies}; there is no probe (import with --probe-last to make the final user message one)."


@dataclass
class _Calls:
    """The tool calls of one conversation: those of the last assistant message waiting for their
    results, and every id seen (a chronology's call ids are unique in the file)."""

    source: Source
    where: str
    waiting: dict[str, tuple[dict[str, Any], str]] = field(default_factory=dict)  # id -> (call, its field)
    answered: dict[str, dict[str, Any]] = field(default_factory=dict)
    made_at: str = ""
    seen: dict[str, str] = field(default_factory=dict)  # id -> the field of the call that used it

    def made(self, name: str, tool_calls: object) -> None:
        """An assistant message's `tool_calls`: the calls of a step, waiting for their results."""
        if not isinstance(tool_calls, list):
            raise self.source.refuse(
                self.where, f"{name}.tool_calls", f"a {json_type(tool_calls)}, not a list of calls"
            )
        self.made_at = name
        for index, call in enumerate(tool_calls):
            at = f"{name}.tool_calls[{index}]"
            parsed = _call(self.source, self.where, at, call)
            if parsed["id"] in self.seen:
                raise self.source.refuse(
                    self.where,
                    f"{at}.id",
                    f"{shown(parsed['id'])} is the id of an earlier call ({self.seen[parsed['id']]}); a chronology "
                    "needs each call's id once: give this call and its tool message another id",
                )
            self.seen[parsed["id"]] = at
            self.waiting[parsed["id"]] = (parsed, at)

    def answer(self, name: str, message: dict[str, Any]) -> None:
        """A `tool` message: the result of one waiting call."""
        call_id = message.get("tool_call_id")
        at = f"{name}.tool_call_id"
        if not isinstance(call_id, str):
            raise self.source.refuse(
                self.where,
                at,
                f"{'missing' if call_id is None else 'not text'}; a tool message names the call it answers",
            )
        if call_id not in self.waiting or call_id in self.answered:
            if call_id in self.answered:
                why = "answers a call a tool message before it answered already; keep one result per call"
            elif self.waiting:
                why = f"answers no call of {self.made_at} (its calls: {', '.join(self.waiting)}); fix the id"
            else:
                why = "answers no call: the tool messages answering an assistant message's tool_calls follow it"
            raise self.source.refuse(self.where, at, f"{shown(call_id)} {why}")
        content = _content(self.source, self.where, f"{name}.content", message.get("content"), empty=True)
        self.answered[call_id] = {"id": call_id, "content": content}

    def steps(self, before: str) -> list[Steps]:
        """The waiting calls as one step, each answered (before the message `before`); none waiting: []."""
        if not self.waiting:
            return []
        for call_id, (_, at) in self.waiting.items():
            if call_id not in self.answered:
                raise self.source.refuse(
                    self.where,
                    f"{at}.id",
                    f"call {shown(call_id)} is never answered: no tool message with this tool_call_id follows it "
                    f"before {before}; add its result, or remove the call",
                )
        step = {
            "tool_calls": [call for call, _ in self.waiting.values()],
            "results": [self.answered[call_id] for call_id in self.waiting],
        }
        made_at, self.waiting, self.answered = self.made_at, {}, {}
        return [Steps((step,), f"{made_at}.tool_calls")]


def _call(source: Source, where: str, at: str, call: object) -> dict[str, Any]:
    """One entry of `tool_calls` as a chronology's call: id, name, arguments (as recorded: the JSON
    text, or a mapping; none or "" is left out, `{}`)."""
    if not isinstance(call, dict):
        raise source.refuse(where, at, f"a {json_type(call)}, not a call (id, type, function)")
    if call.get("type", "function") != "function":
        raise source.refuse(where, f"{at}.type", f"{shown(call.get('type'))}; only function calls are imported")
    call_id = call.get("id")
    if not isinstance(call_id, str) or not re.fullmatch(ID_PATTERN, call_id):
        what = "missing" if call_id is None else f"{shown(call_id)}: letters, digits, '_', '.' and '-' only"
        raise source.refuse(where, f"{at}.id", f"{what}; a call needs an id its tool message names")
    function = call.get("function")
    if not isinstance(function, dict):
        raise source.refuse(where, f"{at}.function", "missing; a call names its function: {name, arguments}")
    name = function.get("name")
    if not isinstance(name, str) or not re.fullmatch(TOOL_NAME_PATTERN, name):
        raise source.refuse(
            where,
            f"{at}.function.name",
            f"{shown(name)}: a tool's name is 1-64 letters, digits, '_' or '-' (as the API requires)",
        )
    found: dict[str, Any] = {"id": call_id, "name": name}
    arguments = function.get("arguments")
    if isinstance(arguments, str) and arguments.strip():
        try:
            parsed = json_bounded.loads(arguments, what="the arguments")
        except JsonBounded as exc:
            raise source.refuse(where, f"{at}.function.arguments", exc.msg) from None
        except json.JSONDecodeError as exc:
            raise source.refuse(
                where, f"{at}.function.arguments", f"not JSON ({exc.msg}); a call's arguments are a JSON object"
            ) from None
        if not isinstance(parsed, dict):
            raise source.refuse(where, f"{at}.function.arguments", f"a JSON {json_type(parsed)}, not an object")
        try:  # Python's reader takes NaN and Infinity, which JSON (and the API) does not have
            json.dumps(parsed, allow_nan=False)
        except ValueError:
            raise source.refuse(
                where, f"{at}.function.arguments", "NaN or Infinity, which JSON does not have; fix the arguments"
            ) from None
        found["arguments"] = arguments
    elif isinstance(arguments, dict):
        found["arguments"] = arguments
    elif arguments not in (None, ""):
        raise source.refuse(
            where, f"{at}.function.arguments", f"a {json_type(arguments)}; give the JSON text of an object"
        )
    return found


def read_expectations(path: Path, limit: int) -> dict[str, Any]:
    """`--expect FILE`: item id -> expectation (a mapping, or a list of them, as in a chronology).

    JSONL (`*.jsonl`): one `{"id": ITEM, "expect": ...}` a line; otherwise one JSON or YAML mapping
    from item id to expectation. The loader checks each expectation's shape when the files are validated.
    """
    source = read_source(path, limit, option="--expect", wanted="the expectations file (JSON Lines, JSON or YAML)")
    found: dict[str, Any] = {}
    if path.suffix == ".jsonl":
        from harness.chronology.safe_yaml import excerpt

        # Each line is decoded within the bounds first (json_lines), then read again for keys named
        # twice, which the decoder keeps the last of: `{"value": "a", "value": "b"}` kept `b` silently.
        lines = re.split(r"\r\n|\r|\n", source.whole_text())
        for record in json_lines(source):
            try:
                json.loads(lines[int(record.where) - 1], object_pairs_hook=_once_each)
            except _DuplicateKey as exc:
                raise source.refuse(record.where, excerpt(exc.key), _TWICE) from None
            item = checked_text(source, record.where, "id", record.value.get("id"))
            if "expect" not in record.value:
                raise source.refuse(record.where, "expect", 'missing; each line is {"id": ITEM, "expect": ...}')
            if item in found:
                raise source.refuse(
                    record.where, "id", f"{shown(item)} is given twice; give each item's expectations once"
                )
            found[item] = _expectation(source, record.where, record.value["expect"])
        return found
    mapping = _mapping(source)
    for item, expect in mapping.items():
        if not isinstance(item, str):
            raise source.refuse("1", str(item), "an item id is text; quote it")
        found[item] = _expectation(source, item, expect)
    return found


def _mapping(source: Source) -> dict[Any, Any]:
    from harness.chronology.safe_yaml import YamlRefused, compose, excerpt

    text = source.whole_text()  # an --expect file: a mapping, read whole within --max-input-bytes
    try:
        if source.path.suffix == ".json":
            json_bounded.loads(text, what="the file")  # within the bounds before the duplicate-key reading
            value = json.loads(text, object_pairs_hook=_once_each)
        else:
            node, value = compose(text)
            _refuse_duplicate_keys(source, node)
    except JsonBounded as exc:
        raise source.refuse(str(exc.lineno), "", exc.msg) from None
    except _DuplicateKey as exc:  # JSON keeps the last of two equal keys; an item named twice is a mistake
        raise source.refuse(str(_line_of_second(text, exc.key)), excerpt(exc.key), _TWICE) from None
    except json.JSONDecodeError as exc:
        raise source.refuse(str(exc.lineno), "", f"not JSON ({exc.msg})") from None
    except YamlRefused as exc:
        raise source.refuse(str(exc.line or 1), "", str(exc)) from None
    except yaml.YAMLError as exc:
        raise source.refuse("1", "", f"not YAML: {str(exc).splitlines()[0]}") from None
    if not isinstance(value, dict):
        raise source.refuse("1", "", "not a mapping from item id to expectation")
    return value


_TWICE = "named twice in this mapping; give each item (and each field of an expectation) once"


class _DuplicateKey(Exception):
    """A JSON object names a key twice (`json` itself keeps the last silently)."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _once_each(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise _DuplicateKey(key)
        found[key] = value
    return found


def _line_of_second(text: str, key: str) -> int:
    """The line of the second place `key` is written as a JSON key (the decoder gives no position;
    a key spelt with escapes is not found, and the message then names line 1)."""
    places = [m.start() for m in re.finditer(re.escape(json.dumps(key)) + r"\s*:", text)]
    return text.count("\n", 0, places[1]) + 1 if len(places) > 1 else 1


def _refuse_duplicate_keys(source: Source, node: yaml.Node | None) -> None:
    """YAML's loader, like JSON's, keeps the last of two equal keys: refuse the file instead."""
    from harness.chronology.safe_yaml import excerpt
    from harness.chronology.validation import Tree

    if node is None:
        return
    duplicates = Tree.of(node).duplicates
    if duplicates:
        loc, line = duplicates[0]
        raise source.refuse(str(line), excerpt(str(loc[-1])), _TWICE)


def _expectation(source: Source, where: str, expect: object) -> object:
    items = expect if isinstance(expect, list) else [expect]
    if not items or not all(isinstance(e, dict) and len(e) >= 1 for e in items):
        raise source.refuse(
            where, "expect", "an expectation is a mapping ({value: ...}, {pattern: ...}, ...) or a list of them"
        )
    return expect
