"""OpenAI's Responses API on the wire: requests read and validated as the provider validates them,
into typed records, and refusals in the provider's error shape.

Every refusal is a `WireError`: a status and `{"error": {"message", "type", "param", "code"}}`,
worded as the API words it ("Missing required parameter: 'model'.", "Invalid type for
'context_management[0].compact_threshold': expected an integer, but got a string instead.",
"No tool call found for function call output with call_id call_1."). Parameters the emulator
accepts but does not act on are listed in `IGNORED`; one the API takes but the emulator does not
emulate (a conversation object, background mode, a stored prompt) is refused with a message that
says so, rather than answered as if it were honoured.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from harness.emulate.sealing import unseal

INVALID_REQUEST = "invalid_request_error"
ROLES = ("assistant", "system", "developer", "user")
ITEM_TYPES = ("message", "function_call", "function_call_output", "compaction", "reasoning")
# Parameters the API takes that the emulator reads but that change nothing in its answers.
IGNORED = frozenset(
    {
        "include",
        "metadata",
        "parallel_tool_calls",
        "prompt_cache_key",
        "prompt_cache_retention",
        "reasoning",
        "safety_identifier",
        "service_tier",
        "temperature",
        "text",
        "tool_choice",
        "top_logprobs",
        "top_p",
        "user",
    }
)
NOT_EMULATED = frozenset({"background", "conversation", "prompt", "max_tool_calls", "stream_options"})
CREATE_PARAMS = frozenset(
    {
        "model",
        "input",
        "instructions",
        "previous_response_id",
        "store",
        "stream",
        "context_management",
        "truncation",
        "max_output_tokens",
        "tools",
    }
)
COMPACT_PARAMS = frozenset({"model", "input", "instructions", "previous_response_id"})
COMPACT_IGNORED = frozenset({"prompt_cache_key", "prompt_cache_retention", "safety_identifier", "service_tier"})
MIN_OUTPUT_TOKENS = 16  # the API refuses a smaller max_output_tokens
MIN_COMPACT_THRESHOLD = 1  # the SDK's types state no minimum; the emulator refuses only 0 and below
COMPACTION = "compaction"  # the purpose compaction content is sealed for (harness.emulate.sealing)


class WireError(Exception):
    """A request the provider refuses: an HTTP status and OpenAI's error body."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        type: str = INVALID_REQUEST,  # noqa: A002 - the wire's name
        param: str | None = None,
        code: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status, self.message, self.type, self.param, self.code = status, message, type, param, code
        self.headers = dict(headers or {})

    def body(self) -> dict[str, Any]:
        """`{"error": {...}}`, as the API writes it."""
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}


def invalid(message: str, param: str | None = None, code: str | None = None) -> WireError:
    return WireError(400, message, param=param, code=code)


def json_type(value: object) -> str:
    """A JSON value's type as the API's messages name it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    for kind, name in ((str, "string"), (int, "integer"), (float, "number"), (list, "array"), (dict, "object")):
        if isinstance(value, kind):
            return name
    return type(value).__name__


def wrong_type(param: str, expected: str, value: object) -> WireError:
    return invalid(
        f"Invalid type for '{param}': expected {expected}, but got {_a(json_type(value))} instead.",
        param,
        "invalid_type",
    )


def _a(noun: str) -> str:
    return f"an {noun}" if noun[0] in "aeiou" else f"a {noun}"


def invalid_value(param: str, value: object, supported: Sequence[str]) -> WireError:
    quoted = [f"'{s}'" for s in supported]
    listed = quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + f", and {quoted[-1]}"
    return invalid(f"Invalid value: '{value}'. Supported values are: {listed}.", param, "invalid_value")


def missing(param: str) -> WireError:
    return invalid(f"Missing required parameter: '{param}'.", param, "missing_required_parameter")


# --- items --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Item:
    """One conversation item, read from the wire (or made by the emulator).

    `text` is what a reader reads of it: a message's text, a tool call as `name(arguments)`, a
    tool output, a compaction's summary (unsealed), a reasoning item's summary. `wire` is the item
    as the API writes it, echoed when the emulator returns it (`/responses/compact`)."""

    type: str
    wire: Mapping[str, Any] = field(compare=False)
    text: str = ""
    role: str | None = None
    id: str | None = None
    call_id: str | None = None
    name: str | None = None
    arguments: str | None = None


def parse_items(value: object, param: str = "input") -> tuple[Item, ...]:
    """`input`: a string (one user message) or a list of items, each validated."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (message_item("user", value, None, "input_text"),)
    if not isinstance(value, list):
        raise wrong_type(param, "one of a string or array of input items", value)
    return tuple(parse_item(raw, f"{param}[{i}]") for i, raw in enumerate(value))


def parse_item(raw: object, param: str) -> Item:
    if not isinstance(raw, dict):
        raise wrong_type(param, "an object", raw)
    kind = raw.get("type", "message" if "role" in raw else None)
    if kind is None:
        raise missing(f"{param}.type")
    if kind not in ITEM_TYPES:
        raise invalid_value(f"{param}.type", kind, ITEM_TYPES)
    return {
        "message": _message,
        "function_call": _function_call,
        "function_call_output": _function_call_output,
        "compaction": _compaction,
        "reasoning": _reasoning,
    }[kind](raw, param)


def _string(raw: Mapping[str, Any], key: str, param: str, required: bool = True) -> str | None:
    value = raw.get(key)
    if value is None:
        if required:
            raise missing(f"{param}.{key}")
        return None
    if not isinstance(value, str):
        raise wrong_type(f"{param}.{key}", "a string", value)
    return value


def _message(raw: Mapping[str, Any], param: str) -> Item:
    role = raw.get("role")
    if role is None:
        raise missing(f"{param}.role")
    if role not in ROLES:
        raise invalid_value(f"{param}.role", role, ROLES)
    content = raw.get("content")
    parts = ("output_text", "refusal") if role == "assistant" else ("input_text",)
    if isinstance(content, str):
        return Item("message", dict(raw), content, role=role, id=_string(raw, "id", param, required=False))
    if not isinstance(content, list):
        raise missing(f"{param}.content") if content is None else wrong_type(f"{param}.content", "a string", content)
    texts = []
    for j, part in enumerate(content):
        where = f"{param}.content[{j}]"
        if not isinstance(part, dict):
            raise wrong_type(where, "an object", part)
        if part.get("type") not in parts:  # images, files and audio are not emulated
            raise invalid_value(f"{where}.type", part.get("type"), parts)
        texts.append(_string(part, "refusal" if part["type"] == "refusal" else "text", where) or "")
    return Item("message", dict(raw), "".join(texts), role=role, id=_string(raw, "id", param, required=False))


def _function_call(raw: Mapping[str, Any], param: str) -> Item:
    name, arguments = _string(raw, "name", param), _string(raw, "arguments", param)
    return Item(
        "function_call",
        dict(raw),
        f"{name}({arguments})",
        id=_string(raw, "id", param, required=False),
        call_id=_string(raw, "call_id", param),
        name=name,
        arguments=arguments,
    )


def _function_call_output(raw: Mapping[str, Any], param: str) -> Item:
    output = raw.get("output")
    if output is None:
        raise missing(f"{param}.output")
    if isinstance(output, list):  # a list of content parts: its text parts are read
        text = "".join(p.get("text", "") for p in output if isinstance(p, dict) and isinstance(p.get("text"), str))
    elif isinstance(output, str):
        text = output
    else:
        raise wrong_type(f"{param}.output", "a string", output)
    return Item("function_call_output", dict(raw), text, call_id=_string(raw, "call_id", param))


def _compaction(raw: Mapping[str, Any], param: str) -> Item:
    content = _string(raw, "encrypted_content", param) or ""
    summary = unseal(content, COMPACTION)
    if summary is None:
        raise invalid(
            f"The encrypted content for item {raw.get('id') or param} could not be verified.",
            f"{param}.encrypted_content",
            "invalid_encrypted_content",
        )
    return Item("compaction", dict(raw), summary, id=_string(raw, "id", param, required=False))


def _reasoning(raw: Mapping[str, Any], param: str) -> Item:
    summary = raw.get("summary")
    if summary is None:
        raise missing(f"{param}.summary")
    if not isinstance(summary, list):
        raise wrong_type(f"{param}.summary", "an array", summary)
    text = "\n".join(p.get("text", "") for p in summary if isinstance(p, dict) and isinstance(p.get("text"), str))
    return Item("reasoning", dict(raw), text, id=_string(raw, "id", param, required=False))


def message_item(role: str, text: str, item_id: str | None, part: str = "output_text") -> Item:
    """A message item as the API writes it (`status: completed`)."""
    content: dict[str, Any] = {"type": part, "text": text}
    if part == "output_text":
        content.update(annotations=[], logprobs=[])
    wire: dict[str, Any] = {"type": "message", "role": role, "content": [content], "status": "completed"}
    if item_id is not None:
        wire = {"id": item_id, **wire}
    return Item("message", wire, text, role=role, id=item_id)


# --- requests -----------------------------------------------------------------------------


@dataclass(frozen=True)
class CreateRequest:
    """`POST /v1/responses`, validated."""

    model: str
    items: tuple[Item, ...]
    instructions: str | None = None
    previous_response_id: str | None = None
    store: bool = True
    stream: bool = False
    compact_threshold: int | None = None  # None: no compaction asked for
    compaction_asked: bool = False  # context_management named compaction (its threshold may default)
    truncation: Literal["auto", "disabled"] = "disabled"
    max_output_tokens: int | None = None
    tools: tuple[str, ...] = ()  # the function tools' names, in order
    echoed: Mapping[str, Any] = field(default_factory=dict)  # ignored parameters, echoed in the response


@dataclass(frozen=True)
class CompactRequest:
    """`POST /v1/responses/compact`, validated."""

    model: str
    items: tuple[Item, ...]
    instructions: str | None = None
    previous_response_id: str | None = None


def read_body(body: bytes) -> dict[str, Any]:
    try:
        parsed = json.loads(body or b"null")
    except (ValueError, UnicodeDecodeError):
        parsed = None
    if not isinstance(parsed, dict):
        raise invalid("We could not parse the JSON body of your request. The API expects a JSON object.")
    return parsed


def _check_params(body: Mapping[str, Any], known: frozenset[str], ignored: frozenset[str]) -> None:
    for key in body:
        if key in NOT_EMULATED:
            raise invalid(f"'{key}' is a parameter of the API that harness emulate does not emulate.", key)
        if key not in known and key not in ignored:
            raise invalid(f"Unknown parameter: '{key}'.", key, "unknown_parameter")


def _common(body: Mapping[str, Any]) -> tuple[str, tuple[Item, ...], str | None, str | None]:
    model = body.get("model")
    if model is None:
        raise missing("model")
    if not isinstance(model, str):
        raise wrong_type("model", "a string", model)
    instructions, previous = body.get("instructions"), body.get("previous_response_id")
    if instructions is not None and not isinstance(instructions, str):
        raise wrong_type("instructions", "a string", instructions)
    if previous is not None and not isinstance(previous, str):
        raise wrong_type("previous_response_id", "a string", previous)
    return model, parse_items(body.get("input")), instructions, previous


def _flag(body: Mapping[str, Any], key: str, default: bool) -> bool:
    value = body.get(key)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise wrong_type(key, "a boolean", value)
    return value


def _threshold(value: object) -> tuple[int | None, bool]:
    """`context_management`: (the compaction threshold, None for the default; whether compaction is asked)."""
    if value is None:
        return None, False
    if not isinstance(value, list):
        raise wrong_type("context_management", "an array", value)
    threshold, asked = None, False
    for i, entry in enumerate(value):
        param = f"context_management[{i}]"
        if not isinstance(entry, dict):
            raise wrong_type(param, "an object", entry)
        if entry.get("type") is None:
            raise missing(f"{param}.type")
        if entry["type"] != "compaction":
            raise invalid_value(f"{param}.type", entry["type"], ("compaction",))
        for key in entry:
            if key not in ("type", "compact_threshold"):
                raise invalid(f"Unknown parameter: '{param}.{key}'.", f"{param}.{key}", "unknown_parameter")
        given = entry.get("compact_threshold")
        if given is not None:
            if not isinstance(given, int) or isinstance(given, bool):
                raise wrong_type(f"{param}.compact_threshold", "an integer", given)
            if given < MIN_COMPACT_THRESHOLD:
                raise invalid(
                    f"Invalid '{param}.compact_threshold': integer below minimum value. Expected a value >= "
                    f"{MIN_COMPACT_THRESHOLD}, but got {given} instead.",
                    f"{param}.compact_threshold",
                    "integer_below_min_value",
                )
            threshold = given
        asked = True
    return threshold, asked


def _tools(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise wrong_type("tools", "an array", value)
    names = []
    for i, tool in enumerate(value):
        if not isinstance(tool, dict):
            raise wrong_type(f"tools[{i}]", "an object", tool)
        if tool.get("type") == "function":
            names.append(_string(tool, "name", f"tools[{i}]") or "")
    return tuple(names)


def parse_create(body: Mapping[str, Any]) -> CreateRequest:
    """A create request validated, or the `WireError` the API would answer."""
    _check_params(body, CREATE_PARAMS, IGNORED)
    model, items, instructions, previous = _common(body)
    threshold, asked = _threshold(body.get("context_management"))
    truncation = body.get("truncation") or "disabled"
    if truncation not in ("auto", "disabled"):
        raise invalid_value("truncation", truncation, ("auto", "disabled"))
    cap = body.get("max_output_tokens")
    if cap is not None:
        if not isinstance(cap, int) or isinstance(cap, bool):
            raise wrong_type("max_output_tokens", "an integer", cap)
        if cap < MIN_OUTPUT_TOKENS:
            raise invalid(
                f"Invalid 'max_output_tokens': integer below minimum value. Expected a value >= {MIN_OUTPUT_TOKENS}, "
                f"but got {cap} instead.",
                "max_output_tokens",
                "integer_below_min_value",
            )
    return CreateRequest(
        model=model,
        items=items,
        instructions=instructions,
        previous_response_id=previous,
        store=_flag(body, "store", True),
        stream=_flag(body, "stream", False),
        compact_threshold=threshold,
        compaction_asked=asked,
        truncation=truncation,
        max_output_tokens=cap,
        tools=_tools(body.get("tools")),
        echoed={k: body[k] for k in ("metadata", "temperature", "top_p", "tool_choice") if k in body},
    )


def parse_compact(body: Mapping[str, Any]) -> CompactRequest:
    """A compact request validated, or the `WireError` the API would answer."""
    _check_params(body, COMPACT_PARAMS, COMPACT_IGNORED)
    model, items, instructions, previous = _common(body)
    return CompactRequest(model=model, items=items, instructions=instructions, previous_response_id=previous)


# --- the conversation's invariants ----------------------------------------------------------


def check_tool_pairs(items: Sequence[Item]) -> None:
    """Every tool output answers an earlier call, and every call has its output: the API's two
    400s (the second is the one openai-agents-python #2317 meets when it compacts a response
    whose tool call's output is not yet in the chain)."""
    called: set[str] = set()
    answered: set[str] = set()
    for item in items:
        if item.type == "function_call" and item.call_id is not None:
            called.add(item.call_id)
        elif item.type == "function_call_output" and item.call_id is not None:
            if item.call_id not in called:
                raise invalid(f"No tool call found for function call output with call_id {item.call_id}.", "input")
            answered.add(item.call_id)
    for item in items:
        if item.type == "function_call" and item.call_id not in answered:
            raise invalid(f"No tool output found for function call {item.call_id}.", "input")


def check_reasoning_pairs(items: Sequence[Item], reasoning_of: Mapping[str, str]) -> None:
    """An item the emulated model produced beside a reasoning item (`reasoning_of`: item id ->
    reasoning id) is refused when sent back by id without that reasoning item before it: the 400
    of openai-agents-python #2727, which a history keeping those ids then meets on every request."""
    present = {item.id for item in items if item.type == "reasoning" and item.id}
    for item in items:
        needed = reasoning_of.get(item.id or "")
        if needed is not None and needed not in present:
            raise invalid(
                f"Item '{item.id}' of type '{item.type}' was provided without its required 'reasoning' item: "
                f"'{needed}'.",
                "input",
            )
