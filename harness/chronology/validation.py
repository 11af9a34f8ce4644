"""Load chronology files: YAML in, typed `Chronology` records out, or every problem at once.

This is the edge where YAML becomes records (STYLE.md §4). The file is read only when it is a
regular file within the size limit (`harness.base.files`); PyYAML composes the node tree within
limits on nesting and alias expansion (`harness.chronology.safe_yaml`), which gives every value's line and
shows duplicate keys that plain loading would silently merge; patterns compile for RE2
(`harness.chronology.patterns`); strict pydantic models (`harness.chronology.schema`) check the
shape and give `harness schema` its JSON Schema; a few rules that span
fields (sessions declared, `sets:` and `forget:` keys of the key set, probe ids unique,
prohibitions stated, `expect:` on probes only and one kind per entry, `evidence:` naming probes
of the file) then run on whatever parts of
the file are valid, so one pass reports all of a file's problems, each as `path:line: field:
message`. The path and the field (a YAML key) are shown as `harness.base.text.visible` shows
them (`_problem_at`): a file name or a key may hold escape sequences or line breaks, which must
not drive the terminal that prints the problem, nor forge a line of it. A path that is not UTF-8
text is refused: a chronology is known by its file name, which the results record as text.
"""

from __future__ import annotations

import datetime
import difflib
import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from harness.base.errors import ChronologyError, Problem
from harness.base.files import FileRefused, read_regular_file
from harness.base.messages import ToolCall
from harness.base.text import not_utf8, visible
from harness.chronology.declarations import ALLOWED_KEYS, MAX_VALUE_CHARS, parse_declarations
from harness.chronology.ledger import Ledger
from harness.chronology.patterns import Pattern, compile_pattern
from harness.chronology.probing import asks_problems, warnings
from harness.chronology.safe_yaml import YamlRefused, clipped, compose, excerpt, shown
from harness.chronology.schema import (
    EXPECT_KINDS,
    FORGET_ALL,
    ID_PATTERN,
    KEYS,
    MAX_PROHIBITIONS,
    NAME_PATTERN,
    SESSIONS,
    TOOL_NAME_PATTERN,
    ChronologySpec,
    ExpectSpec,
    ProhibitionSpec,
    SourceSpec,
    StepSpec,
    SystemSpec,
    ToolCallSpec,
    ToolResultSpec,
    TurnSpec,
    WriterItem,
    arguments_json,
)
from harness.chronology.types import (
    DEFAULT_PASS,
    Chronology,
    Expectation,
    Forget,
    Prohibition,
    Reference,
    Source,
    Step,
    ToolResult,
    Turn,
    UserTurn,
    WriterCandidate,
)

__all__ = ["chronology_schema", "discover", "load_chronologies", "load_chronology"]

_PATTERN_HINTS = {
    NAME_PATTERN: "a session name uses letters, digits, '_' and '-'",
    ID_PATTERN: "an id uses letters, digits, '_', '.' and '-'",
    TOOL_NAME_PATTERN: "a tool name uses letters, digits, '_' and '-', at most 64 of them (as the OpenAI API requires)",
}
_NO_SUCH_PATH = "no such file or directory; give a .yaml file, a folder of them, or a .txt list of them"
LIST_SUFFIX = ".txt"  # a file listing chronologies, e.g. chronologies/library.txt
_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
LIMIT = f"a value is at most {MAX_VALUE_CHARS} characters, as the fact store admits"
MAX_PROBLEMS = 50  # shown per file: past that, more lines help no one fix the file

Loc = tuple[str | int, ...]  # a path in the YAML tree, e.g. ("turns", 3, "session")
K = TypeVar("K")
T = TypeVar("T")


def chronology_schema() -> dict[str, Any]:
    """JSON Schema (draft 2020-12) of a chronology file, for `harness schema` and editors."""
    return {"$schema": _SCHEMA_DIALECT, **ChronologySpec.model_json_schema()}


# --- Reading and locating -----------------------------------------------------------------


def _key(loc: Iterable[str | int]) -> tuple[str, ...]:
    # Sequence indices and mapping keys share one form, so a pydantic loc (where a YAML key
    # `1:` is an int) finds the node; a node is a mapping or a list, never both.
    return tuple(str(part) for part in loc)


@dataclass
class Tree:
    """The line and node of every path in the YAML tree, and where a key repeats."""

    lines: dict[tuple[str, ...], int] = field(default_factory=dict)
    nodes: dict[tuple[str, ...], yaml.Node] = field(default_factory=dict)
    duplicates: list[tuple[Loc, int]] = field(default_factory=list)

    @classmethod
    def of(cls, root: yaml.Node) -> Tree:
        tree = cls()
        tree.walk(root, (), root.start_mark.line + 1, frozenset())
        return tree

    def walk(self, node: yaml.Node, loc: Loc, line: int, above: frozenset[int]) -> None:
        self.lines[_key(loc)], self.nodes[_key(loc)] = line, node
        if id(node) in above:  # a recursive alias: `&a [*a]`
            return
        above = above | {id(node)}
        if isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                self.walk(item, (*loc, i), item.start_mark.line + 1, above)
        elif isinstance(node, yaml.MappingNode):
            self.walk_mapping(node, loc, above)

    def walk_mapping(self, node: yaml.MappingNode, loc: Loc, above: frozenset[int]) -> None:
        seen: set[str] = set()
        for key, value in node.value:
            if not isinstance(key, yaml.ScalarNode):
                continue
            line = key.start_mark.line + 1
            if key.value in seen:
                self.duplicates.append(((*loc, key.value), line))
            seen.add(key.value)
            self.walk(value, (*loc, key.value), line, above)

    def line(self, loc: Loc) -> int | None:
        """The line of `loc`, or of its nearest ancestor present in the file."""
        for end in range(len(loc), -1, -1):
            if (found := self.lines.get(_key(loc[:end]))) is not None:
                return found
        return None

    def raw(self, loc: Loc) -> str | None:
        """The text of a scalar as written (`No`, not False)."""
        node = self.nodes.get(_key(loc))
        return node.value if isinstance(node, yaml.ScalarNode) else None


def _field(loc: Loc) -> str:
    """`("turns", 3, "session")` -> `turns[3].session`; a key long or not printable is quoted
    short and printable (`excerpt`): it is the file's text."""
    text = ""
    for part in loc:
        name = part if isinstance(part, int) else excerpt(str(part))
        text += f"[{name}]" if isinstance(part, int) else f".{name}" if text else name
    return text


def _quoted(value: object) -> str:
    """A value of the file in a message, as every message quotes outside text (`shown`)."""
    return shown(value)


@dataclass
class Problems:
    """Collects one file's problems, each located by its path in the YAML tree."""

    path: str
    tree: Tree
    found: list[Problem] = field(default_factory=list)

    def add(self, loc: Loc, message: str, line: int | None = None) -> None:
        where = self.tree.line(loc) if line is None else line
        self.found.append(_problem_at(self.path, where, _field(loc), message))

    def raise_if_any(self) -> None:
        if self.found:
            found = sorted(self.found, key=lambda p: p.line or 0)
            if len(found) > MAX_PROBLEMS:
                more = f"and {len(found) - MAX_PROBLEMS:,} more problems; fix these first, then validate again"
                found = [*found[:MAX_PROBLEMS], _problem_at(self.path, None, "", more)]
            raise ChronologyError(found)


def _problem_at(path: str, line: int | None, field: str, message: str) -> Problem:
    """A problem, its path and field shown as escapes where they hold control characters."""
    return Problem(visible(path), line, visible(field), message)


def _problem(path: str, message: str, line: int | None = None) -> ChronologyError:
    return ChronologyError([_problem_at(path, line, "", message)])


def _read(path: str) -> tuple[bytes, str]:
    if (wrong := not_utf8(path)) is not None:
        raise _problem(path, f"the path is not UTF-8 ({wrong}); rename it: the results record a chronology by its name")
    try:
        data = read_regular_file(path)
    except FileNotFoundError:
        raise _problem(path, _NO_SUCH_PATH) from None
    except FileRefused as exc:
        raise _problem(path, str(exc)) from None
    except OSError as exc:
        raise _problem(path, f"cannot read it: {exc.strerror}") from None
    try:
        return data, data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        message = f"not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}); save it as UTF-8"
        raise _problem(path, message, line) from None


def _parse(path: str, text: str) -> tuple[dict[Any, Any], yaml.Node]:
    """The top-level mapping and its node; anything else is a problem."""
    try:
        node, value = compose(text)
    except YamlRefused as exc:
        raise _problem(path, exc.message, exc.line) from None
    except yaml.YAMLError as exc:
        raise ChronologyError([yaml_problem(path, text, exc)]) from None
    if node is None:
        raise _problem(path, "the file is empty; a chronology needs at least title: and turns:")
    if not isinstance(value, dict):
        message = f"the top level must be a mapping (title:, turns:, ...); found {kind_of(value)}"
        raise _problem(path, message, node.start_mark.line + 1)
    if names_no_field(value, ChronologySpec.model_fields):
        message = (
            "not a chronology: none of its top-level keys is a chronology field (title, turns, ...); "
            "give a chronology file (`harness new NAME` writes one)"
        )
        raise _problem(path, message, node.start_mark.line + 1)
    return value, node


def names_no_field(value: dict[Any, Any], fields: Iterable[str]) -> bool:
    """Whether a file's top-level mapping names none of `fields`, not even misspelt (`Title`,
    `turn`): then it is some other file (a system file a batch names), and its keys, which are
    its text, are not listed back as unknown fields."""
    known = [name.lower() for name in fields]
    keys = [str(key).lower() for key in value]
    return not any(key in known or difflib.get_close_matches(key, known, n=1, cutoff=0.75) for key in keys)


_INDENT_HINT = (
    "; check the indentation of this line and the lines above: the fields of one turn line up under "
    "its first field (two spaces after `- `), with spaces, never tabs"
)


_INDENT_SYMPTOMS = (
    "expected '-' indicator",
    "mapping values are not allowed",
    "expected <block end>",
    "could not find expected ':'",
    "did not find expected key",
    "found character '\\t'",
)


def _structure_hint(exc: yaml.MarkedYAMLError) -> str:
    """These parser and scanner errors, in a hand-written chronology, mean a line indented wrongly."""
    return _INDENT_HINT if any(s in (exc.problem or "") for s in _INDENT_SYMPTOMS) else ""


def yaml_problem(path: str, text: str, exc: yaml.YAMLError) -> Problem:
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        context = f" ({clipped(exc.context)})" if exc.context else ""
        line = min(exc.problem_mark.line + 1, len(text.splitlines()) or 1)  # not past the end: <stream end>
        tabbed = "\t" in (text.splitlines()[line - 1 : line] or [""])[0]
        hint = "; this line holds a tab: indent with spaces" if tabbed else _structure_hint(exc)
        return _problem_at(path, line, "", f"invalid YAML: {clipped(exc.problem or '')}{context}{hint}")
    position = getattr(exc, "position", None)  # a ReaderError: a character YAML does not allow
    at = text[:position].count("\n") + 1 if isinstance(position, int) else None
    return _problem_at(path, at, "", f"invalid YAML: {clipped(str(exc).splitlines()[0])}")


# --- From pydantic errors to messages that say what to do -----------------------------------

_KINDS: tuple[tuple[type, str], ...] = (
    (bool, "a boolean"),
    (int, "a number"),
    (float, "a number"),
    (str, "a string"),
    (list, "a list"),
    (dict, "a mapping"),
    (datetime.date, "a date"),
    (type(None), "an empty value"),
)
_EMPTY_TEXT = {
    "title": "empty title; write one",
    "user": "empty message; write the user's text",
    "assistant": "empty reply; write one, or remove assistant: to let the model answer",
}
_EMPTY_LIST = {
    "turns": "no turns; add at least one turn with user:",
    "sessions": "no sessions; declare at least one, or remove sessions: to use the default (main)",
    "keys": f"no keys; name at least one, or remove keys: to use the default ({', '.join(ALLOWED_KEYS)})",
    "steps": "no steps; give at least one (tool_calls: and results:), or remove steps:",
    "tool_calls": "no tool calls; a step is one assistant message with at least one call (id, name, arguments)",
    "results": "no results; a step answers each of its calls with a result (id, content)",
}


def kind_of(value: object) -> str:
    """The JSON-ish name of a parsed value's kind, for messages (`a list`, `a number`, ...)."""
    return next((name for kind, name in _KINDS if isinstance(value, kind)), type(value).__name__)


def _model_at(parent: Loc) -> type[BaseModel]:
    """The model that validates the mapping at `parent`."""
    if not parent:
        return ChronologySpec
    if parent[0] == "prohibitions":
        return ProhibitionSpec
    if parent[0] == "source":
        return SourceSpec
    if "expect" in parent:
        return ExpectSpec
    if "writer" in parent:
        return WriterItem
    if parent[:1] == ("turns",) and "system" in parent:
        return SystemSpec
    if "steps" in parent:
        # turns[i].steps[j] is a step; .tool_calls[k] and .results[k] its calls and results
        inner = parent[parent.index("steps") + 2 :]
        return (
            {"tool_calls": ToolCallSpec, "results": ToolResultSpec}.get(str(inner[0]), StepSpec) if inner else StepSpec
        )
    return TurnSpec


def _unknown_field(name: str, parent: Loc) -> str:
    allowed = [spec.alias or name for name, spec in _model_at(parent).model_fields.items()]  # `not`, `pass`
    close = difflib.get_close_matches(name, allowed, n=1, cutoff=0.75)
    hint = f"; did you mean '{close[0]}'?" if close else ""
    return f"unknown field {shown(name)}; allowed: {', '.join(allowed)}{hint}"


def _empty_value(name: str, parent: Loc) -> str:
    if name == "summary":
        return 'empty value; write summary: "" for an empty summary, or remove the field'
    spec = _model_at(parent).model_fields.get(name)
    return "empty value; write a value" + ("" if spec and spec.is_required() else ", or remove the field")


def _not_a_string(value: object, raw: str | None) -> str:
    if value is None:
        return "empty value; write a value"
    if raw is None:
        return f"expected a string, found {kind_of(value)}"
    return f"expected a string; quote it (YAML reads {excerpt(raw)} as {kind_of(value)})"


def _message(error: ErrorDetails, loc: Loc, tree: Tree) -> str:
    kind, value, name = error["type"], error.get("input"), str(loc[-1]) if loc else ""
    if kind == "missing":
        return f"missing required field {name!r}"
    if kind == "extra_forbidden":
        return _unknown_field(name, loc[:-1])
    if kind == "null":
        return _empty_value(name, loc[:-1])
    if kind == "string_type":
        return _not_a_string(value, tree.raw(loc))
    if kind == "literal_error" and name == "abstain":
        return f"abstain takes only true; found {_quoted(value)}: write abstain: true, or remove it"
    if kind == "literal_error" and name == "pass":
        quote = " (quote it: YAML reads a bare YES or NO as a boolean)" if isinstance(value, bool) else ""
        return f'pass takes "YES" or "NO", the judge\'s answer to the rubric that meets it{quote}'

    if kind == "string_pattern_mismatch" and (loc[:1] == ("keys",) or "sets" in loc or "forget" in loc):
        return f"{_quoted(value)} is not a valid key: a key uses letters, digits, '_' and '-'"
    return _shape_message(error, name) or error["msg"]


def _shape_message(error: ErrorDetails, name: str) -> str | None:
    kind, value, context = error["type"], error.get("input"), error.get("ctx", {})
    if kind == "model_type" and name == "system":  # a turn's: the text, or {text, pin}
        return f"expected the system message's text, or a mapping {{text: ..., pin: true}}; found {kind_of(value)}"
    if kind in ("model_type", "dict_type"):
        return f"expected a mapping (field: value), found {kind_of(value)}"
    if kind == "list_type":
        return f"expected a list, found {kind_of(value)}"
    if kind == "too_short":
        return _EMPTY_LIST.get(name, "empty list")
    if kind == "too_long" and name == "expect":
        return (
            f"{len(value) if isinstance(value, list) else 'too many'} expectations on one probe, more than "
            f"{context.get('max_length')}; keep those that matter, or ask the rest at another probe"
        )
    if kind == "too_long":
        count = len(value) if isinstance(value, (dict, list)) else "too many"
        return f"{count} {name or 'entries'}, more than {context.get('max_length')}; split the chronology"
    if kind == "string_too_long":  # an id or a name (schema.MAX_ID): it names results rows and report anchors
        return (
            f"{_quoted(value)}: more than {context.get('max_length')} characters; an id or a name is repeated in "
            "every results row of its own and names the report's rows: shorten it"
        )
    if kind == "string_too_short":
        return _EMPTY_TEXT.get(name, "empty text; write some")
    if kind == "string_pattern_mismatch":
        pattern = str(context.get("pattern"))
        return f"{_quoted(value)} is not valid: {_PATTERN_HINTS.get(pattern, f'it must match {pattern}')}"
    if kind == "invalid_key":
        return f"field names are text; {_quoted(value)} is not"
    if kind == "bool_type":
        quoted = " (quoted, it is text: write it bare)" if str(value).lower() in ("true", "false") else ""
        return f"expected true or false, found {kind_of(value)}{quoted}"
    return None


def _one_expectation(loc: Loc, tree: Tree) -> Loc:
    """`expect:` written as one mapping is validated as a list of one: drop the index it lacks."""
    if "expect" not in loc:
        return loc
    at = loc.index("expect") + 1
    if loc[at : at + 1] == (0,) and isinstance(tree.nodes.get(_key(loc[:at])), yaml.MappingNode):
        return loc[:at] + loc[at + 1 :]
    return loc


def _short_system(loc: Loc, tree: Tree) -> Loc:
    """A turn's `system:` written as text is validated as `{text: ...}`: drop the `text` it lacks."""
    if loc[:1] == ("turns",) and loc[2:] == ("system", "text"):
        if isinstance(tree.nodes.get(_key(loc[:3])), yaml.ScalarNode):
            return loc[:3]
    return loc


def _add_validation_errors(problems: Problems, exc: ValidationError) -> None:
    for error in exc.errors(include_url=False):
        at_key = error["loc"][-1:] == ("[key]",)  # a bad mapping key (e.g. a prohibition id)
        loc = _one_expectation(error["loc"][:-1] if at_key else error["loc"], problems.tree)
        loc = _short_system(loc, problems.tree)
        line = problems.tree.line(loc[:-1]) if error["type"] == "missing" else None
        problems.add(loc, _message(error, loc, problems.tree), line)


# --- Rules across fields, run on every part of the file that is valid on its own ----------


@dataclass(frozen=True)
class _Parts:
    """The valid parts of a file: all of it once the schema passed, else what can be salvaged."""

    sessions: tuple[str, ...] | None  # None: the declaration itself is invalid
    keys: tuple[str, ...] | None  # None: the declaration itself is invalid
    prohibitions: dict[str, ProhibitionSpec]
    turns: dict[int, TurnSpec]  # by index in `turns:`

    @classmethod
    def of(cls, data: dict[Any, Any], spec: ChronologySpec | None) -> _Parts:
        if spec is not None:
            turns = dict(enumerate(spec.turns))
            return cls(tuple(spec.sessions), tuple(spec.keys), dict(spec.prohibitions), turns)
        sessions = _valid(SESSIONS.validate_python, data.get("sessions", ["main"]))
        keys = _valid(KEYS.validate_python, data.get("keys", list(ALLOWED_KEYS)))
        prohibitions, turns = data.get("prohibitions"), data.get("turns")
        if isinstance(prohibitions, dict) and len(prohibitions) > MAX_PROHIBITIONS:
            prohibitions = None  # reported as too many; checking each would cost what the limit avoids
        return cls(
            tuple(sessions) if sessions is not None else None,
            tuple(keys) if keys is not None else None,
            _valid_items(ProhibitionSpec, prohibitions.items() if isinstance(prohibitions, dict) else []),
            _valid_items(TurnSpec, enumerate(turns) if isinstance(turns, list) else []),
        )


def _valid(validate: Callable[[object], T], value: object) -> T | None:
    try:
        return validate(value)
    except ValidationError:
        return None  # already reported by the whole-file validation


def _valid_items(model: type[Any], items: Iterable[tuple[K, object]]) -> dict[K, Any]:
    valid = {key: _valid(model.model_validate, value) for key, value in items}
    return {key: spec for key, spec in valid.items() if spec is not None}


def _check_rules(data: dict[Any, Any], parts: _Parts, problems: Problems) -> None:
    for index, turn in parts.turns.items():
        _check_turn(("turns", index), turn, problems)
        _check_session(("turns", index, "session"), turn.session, parts.sessions, problems)
        _check_keys(("turns", index), turn, parts.keys, problems)
        _check_values(("turns", index), turn, parts.keys, problems)
        for number, step in enumerate(turn.steps or ()):
            _check_step(("turns", index, "steps", number), step, problems)
    _check_probes_unique(parts.turns, problems)
    _check_expectations(parts.turns, problems)
    _check_call_ids_unique(parts.turns, problems)
    texts = _user_texts(data.get("turns"))
    for pid, prohibition in parts.prohibitions.items():
        _check_stated(pid, prohibition, texts, problems)


def _check_turn(loc: Loc, turn: TurnSpec, problems: Problems) -> None:
    others = [name for name in TurnSpec.model_fields if name in turn.model_fields_set - {"forget"}]
    if turn.user is None and turn.forget is None:
        problems.add(loc, "a turn needs user: (a message) or forget: (a fact key, or all)")
    elif turn.forget is not None and turn.user is not None:
        problems.add(loc, "a turn has user: or forget:, not both; make them two turns")
    elif turn.forget is not None and others:
        problems.add(loc, f"a forget turn has only the field forget; remove {', '.join(others)}")
    elif turn.probe is not None and turn.assistant is not None:
        problems.add((*loc, "assistant"), "a probe measures the model's answer; remove assistant: from this turn")
    elif turn.asks is not None and turn.probe is None:
        problems.add((*loc, "asks"), "asks: names what a probe's question asks about; add probe: or remove asks:")
    elif turn.category is not None and turn.probe is None:
        problems.add((*loc, "category"), "category: is a probe's question's category; add probe: or remove category:")
    elif turn.reference is not None and turn.probe is None:
        problems.add((*loc, "reference"), "reference: is a probe's reference answer; add probe: or remove reference:")
    elif turn.asks is not None and len(set(turn.asks)) < len(turn.asks):
        problems.add((*loc, "asks"), "a prohibition is named twice in asks:; name each once")


def _check_session(loc: Loc, session: str | None, declared: Sequence[str] | None, problems: Problems) -> None:
    if session is not None and declared is not None and session not in declared:
        problems.add(loc, f"unknown session {_quoted(session)} (declared: {', '.join(declared)})")


def _check_keys(loc: Loc, turn: TurnSpec, keys: Sequence[str] | None, problems: Problems) -> None:
    """`sets:` and `forget:` name keys of the chronology's key set (`keys:`, or the default ten)."""
    if keys is None:
        return  # the key set itself is invalid, and reported
    add_it = "" if ("keys",) in problems.tree.lines else "; to use another key, name the chronology's keys with keys:"
    for key in turn.sets or {}:
        if key not in keys:
            problems.add((*loc, "sets", key), f"unknown fact key {_quoted(key)}; sets: takes {', '.join(keys)}{add_it}")
    if turn.forget is not None and turn.forget != FORGET_ALL and turn.forget not in keys:
        message = f"unknown fact key {_quoted(turn.forget)}; allowed: {', '.join(keys)}, or {FORGET_ALL}{add_it}"
        problems.add((*loc, "forget"), message)


def _check_values(loc: Loc, turn: TurnSpec, keys: Sequence[str] | None, problems: Problems) -> None:
    """A value a turn declares (`key=value`, in its user or its system message) or `sets:` is at
    most MAX_VALUE_CHARS characters."""
    for field_name, text in (("user", turn.user), ("system", turn.system and turn.system.text)):
        _check_declared_values((*loc, field_name), text, keys, problems)
    for key, value in (turn.sets or {}).items():
        if len(value) > MAX_VALUE_CHARS:
            problems.add((*loc, "sets", key), f"a value of {len(value):,} characters; {LIMIT}: shorten it")


def _check_declared_values(loc: Loc, text: str | None, keys: Sequence[str] | None, problems: Problems) -> None:
    declared = parse_declarations(text, keys or ALLOWED_KEYS) if text else {}
    for key, declaration in declared.items():
        if len(declaration.value) > MAX_VALUE_CHARS:
            problems.add(
                loc,
                f"{key}= declares a value of {len(declaration.value):,} characters; {LIMIT}: shorten it, "
                f"or write it as prose (without {key}=)",
            )


def _check_probes_unique(turns: dict[int, TurnSpec], problems: Problems) -> None:
    first: dict[str, int] = {}
    for index, turn in turns.items():
        if turn.probe is None:
            continue
        if turn.probe in first:
            message = f"duplicate probe id {_quoted(turn.probe)}; turns[{first[turn.probe]}] already uses it"
            problems.add(("turns", index, "probe"), message)
        first.setdefault(turn.probe, index)


def _check_expectations(turns: dict[int, TurnSpec], problems: Problems) -> None:
    """`expect:` on a probe, each entry one kind; `evidence:` names probes of this file, each once."""
    probes = {turn.probe: index for index, turn in turns.items() if turn.probe is not None}
    for index, turn in turns.items():
        loc: Loc = ("turns", index)
        if turn.expect is not None and turn.probe is None:
            problems.add((*loc, "expect"), "expect: says what a probe's answer must meet; add probe: or remove expect:")
        at = (*loc, "expect") if isinstance(problems.tree.nodes.get(_key((*loc, "expect"))), yaml.MappingNode) else None
        seen: set[tuple[str, ...]] = set()
        for number, spec in enumerate(turn.expect or []):
            _check_expectation(at or (*loc, "expect", number), spec, seen, problems)
        _check_evidence(loc, index, turn.evidence, probes, problems)
        for s, step in enumerate(turn.steps or ()):
            for r, result in enumerate(step.results):
                _check_evidence((*loc, "steps", s, "results", r), index, result.evidence, probes, problems)


def _check_evidence(loc: Loc, index: int, named: list[str] | None, probes: dict[str, int], problems: Problems) -> None:
    """`evidence:` (of a message or a tool result) names probes of this file, asked later, each once."""
    for number, pid in enumerate(named or []):
        if pid not in probes:
            found = f"probes: {', '.join(probes)}" if probes else "it has none"
            message = f"no probe {_quoted(pid)} in this file ({found}); evidence: names probes of this file"
            problems.add((*loc, "evidence", number), message)
        elif probes[pid] < index:
            message = f"probe {_quoted(pid)} is asked before this message (turns[{probes[pid]}]); evidence comes first"
            problems.add((*loc, "evidence", number), message)
        elif pid in (named or [])[:number]:
            problems.add((*loc, "evidence", number), f"probe {_quoted(pid)} is named twice; name each once")


def _check_expectation(loc: Loc, spec: ExpectSpec, seen: set[tuple[str, ...]], problems: Problems) -> None:
    given = [kind for kind in EXPECT_KINDS if getattr(spec, _attribute(kind)) is not None]
    if not given:
        problems.add(loc, f"an expectation needs one of {', '.join(EXPECT_KINDS)}")
    elif len(given) > 1:
        problems.add(loc, f"an expectation has one kind, this one {' and '.join(given)}; make each an entry of a list")
    elif spec.pass_ is not None and given != ["rubric"]:
        problems.add((*loc, "pass"), "pass: is the judge's verdict for a rubric:; remove it or add rubric:")
    elif (found := tuple(str(getattr(spec, _attribute(kind))) for kind in EXPECT_KINDS)) in seen:
        problems.add(loc, "the same expectation twice on this probe; write it once")
    else:
        seen.add(found)


def _attribute(kind: str) -> str:
    return f"{kind}_" if kind == "not" else kind  # `not` is a Python keyword: the field is `not_`


def _check_step(loc: Loc, step: StepSpec, problems: Problems) -> None:
    """Every call answered by exactly one result with its id, in the calls' order; no result
    without a call of this step."""
    calls = [call.id for call in step.tool_calls]
    answered: set[str] = set()
    for index, result in enumerate(step.results):
        at = (*loc, "results", index, "id")
        expected = calls[index] if index < len(calls) else None
        if result.id == expected and result.id not in answered:
            answered.add(result.id)
        elif result.id not in calls:
            named = ", ".join(calls)
            problems.add(
                at, f"result {_quoted(result.id)} answers no call of this step (its calls: {named}); fix the id"
            )
        elif result.id in answered:
            problems.add(at, f"call {_quoted(result.id)} is answered twice; give each call exactly one result")
        else:
            where = f"{_quoted(expected)} here" if expected is not None else "no more results"
            problems.add(at, f"results follow the calls' order: expected {where}; reorder the results")
            answered.add(result.id)
    results = {result.id for result in step.results}
    for index, call in enumerate(step.tool_calls):
        if call.id not in results:
            message = f"call {_quoted(call.id)} has no result; add a result with id: {call.id} to this step's results"
            problems.add((*loc, "tool_calls", index, "id"), message)


def _check_call_ids_unique(turns: dict[int, TurnSpec], problems: Problems) -> None:
    """A tool call's id is unique in the file: a result names the one call it answers."""
    first: dict[str, str] = {}
    for index, turn in turns.items():
        for number, step in enumerate(turn.steps or ()):
            for position, call in enumerate(step.tool_calls):
                loc = ("turns", index, "steps", number, "tool_calls", position, "id")
                if call.id in first:
                    message = f"duplicate tool call id {_quoted(call.id)}; {first[call.id]} already uses it: rename one"
                    problems.add(loc, message)
                first.setdefault(call.id, _field(loc[:-1]))


def _user_texts(raw_turns: object) -> list[str]:
    """Every user message and every turn's system message: where a prohibition may be stated.
    From the raw data, so a message in a turn that is invalid for another reason still counts."""
    turns = [t for t in (raw_turns if isinstance(raw_turns, list) else []) if isinstance(t, dict)]
    texts = [t["user"] for t in turns if isinstance(t.get("user"), str)]
    systems = [s.get("text") if isinstance(s, dict) else s for s in (t.get("system") for t in turns)]
    return texts + [s for s in systems if isinstance(s, str)]


def _check_stated(pid: str, prohibition: ProhibitionSpec, texts: list[str], problems: Problems) -> None:
    present = compile_pattern(prohibition.present)
    if not any(present.search(text) for text in texts):
        message = (
            f"prohibition {_quoted(pid)} is never stated: no user message (nor a turn's system message) matches present"
        )
        problems.add(("prohibitions", pid, "present"), message + "; fix the pattern or add the message")


def _check_has_user_turn(data: dict[Any, Any], problems: Problems) -> None:
    turns = data.get("turns")
    if isinstance(turns, list) and turns and not any(isinstance(t, dict) and "user" in t for t in turns):
        problems.add(("turns",), "no user turn; a chronology needs at least one turn with user:")


# --- Building the records -----------------------------------------------------------------


def _build(spec: ChronologySpec, path: str, data: bytes, tree: Tree) -> Chronology:
    keys = tuple(spec.keys)
    return Chronology(
        path=path,
        sha256=hashlib.sha256(data).hexdigest(),
        title=spec.title,
        description=spec.description,
        system=spec.system,
        sessions=tuple(spec.sessions),
        keys=keys,
        prohibitions=tuple(_prohibition(pid, p) for pid, p in spec.prohibitions.items()),
        turns=tuple(_turn(i, turn, spec.sessions[0], keys, tree) for i, turn in enumerate(spec.turns)),
        name=Path(path).stem,
        source=None if spec.source is None else Source(**spec.source.model_dump()),
    )


def _prohibition(pid: str, spec: ProhibitionSpec) -> Prohibition:
    required: Pattern | None = compile_pattern(spec.required) if spec.required is not None else None
    present, violated_by = compile_pattern(spec.present), compile_pattern(spec.violated_by)
    return Prohibition(pid, present, violated_by, required, spec.description)


def _turn(index: int, spec: TurnSpec, default_session: str, keys: tuple[str, ...], tree: Tree) -> Turn:
    number, line = index + 1, tree.lines[_key(("turns", index))]
    if spec.forget is not None:
        return Forget(number, line, None if spec.forget == "all" else spec.forget)
    assert spec.user is not None  # the rules guarantee user: or forget:
    session = spec.session or default_session
    writer = None if spec.writer is None else tuple(WriterCandidate(w.key, w.value, w.evidence) for w in spec.writer)
    asks = None if spec.asks is None else tuple(spec.asks)
    sets = tuple((spec.sets or {}).items())
    return UserTurn(
        number,
        line,
        spec.user,
        session,
        assistant=spec.assistant,
        probe=spec.probe,
        asks=asks,
        summary=spec.summary,
        writer=writer,
        sets=sets,
        keys=keys,
        expect=tuple(_expectation(e) for e in spec.expect or []),
        category=spec.category,
        reference=None if spec.reference is None else Reference(spec.reference.answer, spec.reference.prefix),
        evidence=tuple(spec.evidence or []),
        steps=tuple(_step(step) for step in spec.steps or ()),
        system=None if spec.system is None else spec.system.text,
        pin=bool(spec.pin),
        pin_system=spec.system is not None and spec.system.pin,
    )


def _expectation(spec: ExpectSpec) -> Expectation:
    [kind] = [kind for kind in EXPECT_KINDS if getattr(spec, _attribute(kind)) is not None]
    if kind == "abstain":
        return Expectation("abstain", "true")
    text = str(getattr(spec, _attribute(kind)))
    pattern = compile_pattern(text) if kind in ("pattern", "not") else None
    return Expectation(kind, text, pattern, spec.pass_ or DEFAULT_PASS)


def _step(spec: StepSpec) -> Step:
    calls = tuple(ToolCall(call.id, call.name, arguments_json(call.arguments)) for call in spec.tool_calls)
    return Step(calls, tuple(ToolResult(r.id, r.content, r.error, tuple(r.evidence or ())) for r in spec.results))


# --- Public API ---------------------------------------------------------------------------


def load_chronology(path: str | Path) -> Chronology:
    """Load and validate one chronology file; raise `ChronologyError` listing every problem in it."""
    shown = str(path)
    data, text = _read(shown)
    value, root = _parse(shown, text)
    problems = Problems(shown, Tree.of(root))
    spec = _validate(value, problems)
    problems.raise_if_any()
    assert spec is not None
    chronology = _build(spec, shown, data, problems.tree)
    ledger = Ledger(chronology)
    problems.found.extend(asks_problems(chronology, ledger))
    problems.raise_if_any()
    return replace(chronology, warnings=tuple(warnings(chronology, ledger)))


def _validate(value: dict[Any, Any], problems: Problems) -> ChronologySpec | None:
    for loc, line in problems.tree.duplicates:
        problems.add(loc, f"duplicate key {_quoted(loc[-1])}; each field may appear once", line)
    spec = None
    try:
        spec = ChronologySpec.model_validate(value)
    except ValidationError as exc:
        _add_validation_errors(problems, exc)
    _check_rules(value, _Parts.of(value, spec), problems)
    _check_has_user_turn(value, problems)
    return spec


def discover(paths: Sequence[str | Path]) -> list[Path]:
    """Files as given; a folder stands for its *.yaml and *.yml files (not recursive), sorted."""
    files, problems = _discover(paths)
    if problems:
        raise ChronologyError(problems)
    return files


def _discover(paths: Sequence[str | Path]) -> tuple[list[Path], list[Problem]]:
    files: list[Path] = []
    problems: list[Problem] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            # Not only regular files: a FIFO or a device named *.yaml is reported when read, never skipped.
            files.extend(sorted(p for p in path.iterdir() if p.suffix.lower() in (".yaml", ".yml") and not p.is_dir()))
        elif path.suffix == LIST_SUFFIX and path.is_file():
            listed, wrong = _listed_files(path)
            files.extend(listed)
            problems.extend(wrong)
        elif path.exists():
            files.append(path)
        else:
            problems.append(_problem_at(str(given), None, "", _NO_SUCH_PATH))
    return list(dict.fromkeys(files)), problems  # a file named twice (alone and in its folder) loads once


def _listed_files(listing: Path) -> tuple[list[Path], list[Problem]]:
    """The chronology files a list names, one per line relative to the list's folder; `#` starts a comment."""
    files: list[Path] = []
    try:
        _, text = _read(str(listing))  # a regular file, within the size limit, UTF-8
    except ChronologyError as exc:
        return files, exc.problems
    problems = []
    entries = 0
    for number, line in enumerate(text.splitlines(), start=1):
        name = line.split("#", 1)[0].strip()
        if not name:
            continue
        entries += 1
        path = listing.parent / name
        if _exists(path):  # a FIFO or a device is named when read, like any file given
            files.append(path)
        else:
            message = f"{excerpt(name)}: no such file next to the list; fix the name"
            problems.append(_problem_at(str(listing), number, "", message))
    if problems and not files:  # some other text file: its lines are not listed back
        message = (
            f"not a list of chronologies: none of its {entries:,} entries names a file next to it; "
            "a .txt list names one chronology file per line"
        )
        return files, [_problem_at(str(listing), None, "", message)]
    return files, problems[:MAX_PROBLEMS]


def _exists(path: Path) -> bool:
    """A file or anything else that is not a folder; False for a name too long to be one."""
    try:
        return path.exists() and not path.is_dir()
    except OSError:  # ENAMETOOLONG and the like: no such file
        return False


def load_chronologies(paths: Sequence[str | Path]) -> list[Chronology]:
    """Discover and load every chronology; raise one `ChronologyError` with the problems of all files."""
    return load_each(paths, lambda chronology: chronology)


def load_each(paths: Sequence[str | Path], keep: Callable[[Chronology], T]) -> list[T]:
    """`keep` of every chronology, each loaded in turn and dropped once `keep` has read it (what a
    run plans with, never every chronology at once); the problems of all files in one `ChronologyError`."""
    files, problems = _discover(paths)
    loaded: list[T] = []
    for path in files:
        try:
            loaded.append(keep(load_chronology(path)))
        except ChronologyError as exc:
            problems.extend(exc.problems)
    problems.extend(_same_names(files))
    if problems:
        raise ChronologyError(problems)
    return loaded


def _same_names(files: list[Path]) -> list[Problem]:
    first: dict[str, Path] = {}
    problems = []
    for path in files:
        if path.stem in first:
            message = f"same name {path.stem!r} as {first[path.stem]}; a chronology is known by its file name"
            problems.append(_problem_at(str(path), None, "", message + ", rename one"))
        first.setdefault(path.stem, path)
    return problems
