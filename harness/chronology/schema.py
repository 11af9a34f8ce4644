"""The chronology format as strict pydantic models: the shape every file is validated against
(`harness.chronology.validation` locates and words their errors) and the JSON Schema of
`harness schema`."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    TypeAdapter,
    ValidationError,
    field_validator,
)
from pydantic_core import PydanticCustomError

from harness.base import json_bounded
from harness.base.json_bounded import JsonBounded
from harness.base.text import shown
from harness.chronology.declarations import ALLOWED_KEYS, KEY_PATTERN
from harness.chronology.patterns import PatternError, compile_pattern

__all__ = [
    "EXPECT_KINDS",
    "KEYS",
    "SESSIONS",
    "ChronologySpec",
    "ExpectSpec",
    "ProhibitionSpec",
    "ReferenceSpec",
    "SourceSpec",
    "StepSpec",
    "SystemSpec",
    "ToolCallSpec",
    "ToolResultSpec",
    "TurnSpec",
    "ValidationError",
    "WriterItem",
]

NAME_PATTERN = r"^[A-Za-z0-9_-]+$"
FORGET_ALL = "all"  # `forget: all`; so no key may be called `all`
ID_PATTERN = r"^[A-Za-z0-9_.-]+$"
SHA256_PATTERN = r"^[0-9a-f]{64}$"
# A tool's name as the OpenAI API accepts it in a request (letters, digits, '_' and '-', at most 64).
TOOL_NAME_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
# Characters of an id or a name a chronology declares (a probe, a prohibition, a session, a tool
# call, a fact key): each is repeated in every results row of its own and named in the report's
# rows and anchors, so it is bounded as a run id is (harness.results.writer.MAX_RUN_ID).
MAX_ID = 100
MAX_PROHIBITIONS = 30  # each is searched for in every user message: 30 x 16,000 messages stays in seconds
MAX_SESSIONS = 100  # each turn's session is looked up among them
MAX_KEYS = 100  # every segment of every message is looked up among them


def _custom(kind: str, text: str) -> PydanticCustomError:
    # The text goes in the context: pydantic formats the template, and a regex message may hold braces.
    return PydanticCustomError(kind, "{text}", {"text": text})


def _compiles(pattern: str) -> str:
    try:
        compile_pattern(pattern)
    except PatternError as exc:
        raise _custom("regex", str(exc)) from None
    return pattern


def _unique(what: str) -> Callable[[list[str]], list[str]]:
    def unique(names: list[str]) -> list[str]:
        seen: set[str] = set()
        for name in names:
            if name in seen:
                raise _custom("duplicate", f"{what} {shown(name)} is declared twice; declare each {what} once")
            seen.add(name)
        return names

    return unique


def _not_all(key: str) -> str:
    if key == FORGET_ALL:
        raise _custom(
            "reserved", f"{FORGET_ALL!r} cannot be a key: `forget: {FORGET_ALL}` forgets every key; name it otherwise"
        )
    return key


def _no_null_in_schema(schema: dict[str, Any]) -> None:
    """Drop `null` from the schema of models whose present fields need a value (see `_NoNull`)."""
    for prop in schema.get("properties", {}).values():
        options = [o for o in prop.pop("anyOf", []) if o != {"type": "null"}]
        if len(options) == 1:
            prop.update(options[0])
        elif options:
            prop["anyOf"] = options
        if "default" in prop and prop["default"] is None:
            del prop["default"]


def arguments_json(arguments: dict[str, Any] | str) -> str:
    """A tool call's arguments as the JSON text the wire format carries: a mapping written as
    JSON (keys in the file's order, non-ASCII kept), a string as it is."""
    return arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)


def _json_arguments(arguments: dict[str, Any] | str) -> dict[str, Any] | str:
    # NaN and the infinities are no JSON (RFC 8259), though Python writes and reads them: a call's
    # arguments holding one (YAML's `.nan`, `.inf`) were sent to an endpoint as `{"n": NaN}`.
    if isinstance(arguments, dict):
        try:
            json.dumps(arguments, allow_nan=False)
        except (TypeError, ValueError):
            raise _custom(
                "arguments", "a value JSON cannot write (YAML read a date, binary data, .nan or .inf?); quote it"
            ) from None
        return arguments
    try:
        parsed = json_bounded.loads(arguments, what="the arguments")
    except JsonBounded as exc:
        raise _custom("arguments", f"{exc.msg} (at character {exc.pos})") from None
    except json.JSONDecodeError as exc:
        raise _custom("arguments", f"not JSON ({exc.msg} at character {exc.pos}); write a mapping instead") from None
    if not isinstance(parsed, dict):
        raise _custom("arguments", "JSON text that is not an object; the arguments of a call are an object ({...})")
    try:
        json.dumps(parsed, allow_nan=False)
    except ValueError:
        raise _custom("arguments", "NaN or Infinity, which JSON does not have; write the number, or quote it") from None
    return arguments


Text = Annotated[str, Field(min_length=1)]
Regex = Annotated[str, AfterValidator(_compiles), Field(json_schema_extra={"format": "regex"})]
Name = Annotated[str, StringConstraints(pattern=NAME_PATTERN, max_length=MAX_ID)]
Id = Annotated[str, StringConstraints(pattern=ID_PATTERN, max_length=MAX_ID)]
Sessions = Annotated[list[Name], Field(min_length=1, max_length=MAX_SESSIONS), AfterValidator(_unique("session"))]
# A fact key where a turn names one (`sets:`, `forget:`); that it is one of the chronology's
# `keys` is a rule across fields (`harness.chronology.validation`).
Key = Annotated[str, StringConstraints(pattern=KEY_PATTERN, max_length=MAX_ID)]
Keys = Annotated[
    list[Annotated[Key, AfterValidator(_not_all)]],
    Field(min_length=1, max_length=MAX_KEYS, json_schema_extra={"uniqueItems": True}),
    AfterValidator(_unique("key")),
]


class _Strict(BaseModel):
    # strict: YAML's `No`, `3.10` or `2024-01-01` where text belongs is an error, never coerced.
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class _NoNull(_Strict):
    """A field written without a value (`summary:`) is a mistake, not the field's default."""

    model_config = ConfigDict(json_schema_extra=_no_null_in_schema)

    @field_validator("*", mode="before")
    @classmethod
    def _present_means_given(cls, value: Any) -> Any:
        if value is None:
            raise _custom("null", "empty value")
        return value


class WriterItem(_Strict):
    """One scripted writer candidate; fields may be null or wrong, to reproduce a rejection."""

    key: str | None = None
    value: str | None = None
    evidence: str | None = None


_RE2 = "RE2 regular expression (no backreferences or lookarounds), searched anywhere in the text"

# --- Expectations, evidence and source (decision 0001) ---------------------------------------

EXPECT_KINDS = ("value", "pattern", "not", "abstain", "rubric")  # each expectation is exactly one
MAX_EXPECTATIONS = 20  # per probe: each is a probes.csv row, a rubric one a judge call


def _expect_schema(schema: dict[str, Any]) -> None:
    _no_null_in_schema(schema)
    schema["oneOf"] = [{"required": [kind]} for kind in EXPECT_KINDS]
    schema["dependentRequired"] = {"pass": ["rubric"]}


class ExpectSpec(_NoNull):
    """One expectation of a probe's answer: exactly one kind (`pass` goes with `rubric`)."""

    model_config = ConfigDict(json_schema_extra=_expect_schema)

    value: Text | None = Field(None, description="The answer contains this value (the one value-matching rule).")
    pattern: Regex | None = Field(None, description=f"The answer matches this pattern; {_RE2}.")
    not_: Regex | None = Field(None, alias="not", description=f"The answer does not match this pattern; {_RE2}.")
    abstain: Literal[True] | None = Field(None, description="true: the answer says it does not know.")
    rubric: Text | None = Field(None, description="Judged by the --judge model against this rubric.")
    pass_: Literal["YES", "NO"] | None = Field(
        None, alias="pass", description='With rubric: the judge\'s answer (YES or NO) that meets it; default "YES".'
    )


def _one_or_many(value: Any) -> Any:
    return [value] if isinstance(value, dict) else value


def _one_or_many_schema(schema: dict[str, Any]) -> None:
    many = dict(schema)
    schema.clear()
    schema["anyOf"] = [many["items"], many]


Expect = Annotated[
    list[ExpectSpec],
    BeforeValidator(_one_or_many),
    Field(min_length=1, max_length=MAX_EXPECTATIONS, json_schema_extra=_one_or_many_schema),
]


class ReferenceSpec(_NoNull):
    """A benchmark's reference answer to a probe, kept for the benchmark's own metric."""

    answer: Text = Field(description="The reference answer as the benchmark publishes it.")
    prefix: Text | None = Field(
        None, description="Text the benchmark requires the answer to start with (MRCR's random string)."
    )


class SourceSpec(_NoNull):
    """Where an imported chronology came from."""

    dataset: Text = Field(description="The dataset or log it was imported from.")
    item_id: Text = Field(description="The item's id in that dataset.")
    sha256: Annotated[str, StringConstraints(pattern=SHA256_PATTERN)] = Field(
        description="SHA-256 of the input file, 64 lowercase hex digits."
    )
    licence: Text = Field(description="The dataset's licence, as its publisher names it.")
    category: Text | None = Field(
        None,
        description="The item's category in its benchmark (LongMemEval's question_type, MultiChallenge's AXIS); "
        "the report groups items by it.",
    )


class ToolCallSpec(_NoNull):
    """One tool call of a step: its id (unique in the file), the tool's name, its arguments."""

    id: Id = Field(description="The call's id, unique in the file; its result gives the same id.")
    name: Annotated[str, StringConstraints(pattern=TOOL_NAME_PATTERN)] = Field(description="The tool's name.")
    arguments: Annotated[dict[str, Any] | str, AfterValidator(_json_arguments)] = Field(
        {}, description="A mapping, or a JSON object as a string; sent as JSON text."
    )


class ToolResultSpec(_NoNull):
    """The result answering one call: the call's id, the tool's output, whether it failed."""

    id: Id = Field(description="The id of the call it answers.")
    content: str = Field(description="The tool's output as the agent received it (its error text if error).")
    error: bool = Field(False, description="The tool failed: content is its error text.")
    evidence: list[Id] | None = Field(
        None, min_length=1, description="Probe ids (of this file) whose expectations this result holds the answer to."
    )


class StepSpec(_NoNull):
    """One assistant message carrying tool calls, and the tool messages answering them."""

    tool_calls: Annotated[list[ToolCallSpec], Field(min_length=1)] = Field(
        description="The calls of one assistant message, in order."
    )
    results: Annotated[list[ToolResultSpec], Field(min_length=1)] = Field(
        description="One result per call, in the calls' order."
    )


class SystemSpec(_NoNull):
    """A system message a turn adds mid-conversation, written as a mapping to pin it."""

    text: Text = Field(description="The system message's text, sent right after the turn's user message.")
    pin: bool = Field(False, description="true: policies run with pin=true copy it, verbatim, into every later view.")


def _text_or_mapping(value: Any) -> Any:
    # `system: TEXT` is the short form of `system: {text: TEXT}`.
    return {"text": value} if isinstance(value, str) else value


def _text_or_mapping_schema(schema: dict[str, Any]) -> None:
    mapping = dict(schema)
    schema.clear()
    schema["anyOf"] = [{"type": "string", "minLength": 1}, mapping]


TurnSystem = Annotated[SystemSpec, BeforeValidator(_text_or_mapping), Field(json_schema_extra=_text_or_mapping_schema)]


def _turn_schema(schema: dict[str, Any]) -> None:
    _no_null_in_schema(schema)
    schema["oneOf"] = [{"required": ["user"]}, {"required": ["forget"]}]


class TurnSpec(_NoNull):
    """One entry of `turns:`: either a user message (`user:`) or a forget event (`forget:`)."""

    model_config = ConfigDict(json_schema_extra=_turn_schema)

    user: Text | None = Field(None, description="The user's message.")
    assistant: Text | None = Field(None, description="Scripted reply, kept as the answer in fixed replay.")
    system: TurnSystem | None = Field(
        None,
        description="A system message this turn adds, sent right after its user message (and kept where "
        "the turn is kept): text, or {text, pin}.",
    )
    pin: bool | None = Field(
        None, description="true: policies run with pin=true copy this user message, verbatim, into every later view."
    )
    session: Name | None = Field(None, description="A declared session; default: the first one.")
    probe: Id | None = Field(None, description="Probe id, unique in the file: the checks run here.")
    asks: list[Id] | None = Field(
        None,
        description="On a probe: the prohibitions its question asks about ([] for none); "
        "the answer is judged only against these. Default: every prohibition in force.",
    )
    sets: dict[Key, Text] | None = Field(
        None,
        description="Values the checks take as declared at this turn, for a value stated in prose "
        "(the fact store still reads only the user's words); keys from the chronology's keys.",
    )
    summary: str | None = Field(None, description='Scripted summary after this exchange; "" is an empty one.')
    writer: list[WriterItem] | None = Field(None, description="Scripted writer output for this message.")
    steps: Annotated[list[StepSpec], Field(min_length=1)] | None = Field(
        None,
        description="What the agent did before its reply, in order: each step one assistant message "
        "with tool calls and the results answering them (recorded, never executed).",
    )
    expect: Expect | None = Field(None, description="On a probe: what its answer must meet; a mapping or a list.")
    category: Text | None = Field(
        None,
        description="On a probe: its question's category in the benchmark, where one item asks questions of "
        "several (LoCoMo); the probe's rows are counted under it rather than the source's category.",
    )
    reference: ReferenceSpec | None = Field(
        None,
        description="On a probe: the benchmark's reference answer, recorded for the benchmark's own metric "
        "(never checked by the harness: expect: is).",
    )
    evidence: list[Id] | None = Field(
        None, min_length=1, description="Probe ids (of this file) whose expectations this message holds the answer to."
    )
    forget: Key | None = Field(
        None, description="Forget one fact key (of the chronology's keys), or `all`; nothing else."
    )


class ProhibitionSpec(_NoNull):
    """A prohibition: `present` recognises it in a message, `violated_by` in an answer."""

    present: Regex = Field(description=f"Recognises the prohibition in any message; {_RE2}.")
    violated_by: Regex = Field(description=f"Recognises an answer that breaks it; {_RE2}.")
    required: Regex | None = Field(None, description=f"An answer honours it only if it also matches; {_RE2}.")
    description: str | None = None


class ChronologySpec(_NoNull):
    """A chronology: the fixed conversation the harness replays under every policy."""

    model_config = ConfigDict(title="Chronology")

    title: Text
    description: str = ""
    system: str | None = Field(None, description="System instructions; no policy drops them.")
    sessions: Sessions = Field(["main"], description="Business sessions; the first is the default.")
    keys: Keys = Field(
        list(ALLOWED_KEYS),
        description="The fact keys a `key=value` segment may declare; default: the seed's ten.",
    )
    prohibitions: dict[Id, ProhibitionSpec] = Field({}, max_length=MAX_PROHIBITIONS)
    turns: Annotated[list[TurnSpec], Field(min_length=1)]
    source: SourceSpec | None = Field(None, description="Where an imported chronology came from.")


_STRICT = ConfigDict(strict=True)
SESSIONS: TypeAdapter[list[str]] = TypeAdapter(Sessions, config=_STRICT)
KEYS: TypeAdapter[list[str]] = TypeAdapter(Keys, config=_STRICT)
