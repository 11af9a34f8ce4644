"""Naming the damage in a results folder: the first record whose field is not what the harness
writes, by file, line and field.

The report and `harness show` read results quickly and trust the writer's types (pandas, the
span index). When what they read makes them fail (a `TypeError` from a turn written as text, a
`KeyError` from a view that refers to a message no record holds), they ask `first_damage` where
the folder differs from what the harness writes, and say that in one message (exit status 2).
Nothing here runs unless a reader failed: it reads every record in Python, which a report of a
large batch need not pay for. A failure it finds no damage for is the harness's own, and is
raised as it is.

What is checked: every record of each file against its record type (`harness.results.rows` for
`turns.csv`, `probes.csv` and `calls.jsonl`; the shapes below for the other files): identity
fields present, each field of its type (a whole number within 64 bits, never a bool; a CSV cell
that parses as its column's type, blank only where the field may be unknown), a probe's check
one of the four; and each view's references: to messages of its own conversation, to a base row
of an earlier turn.
"""

from __future__ import annotations

import csv
import functools
import io
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from types import UnionType
from typing import Any, ParamSpec, TypeVar, get_args, get_origin, get_type_hints

from harness.base import json_bounded
from harness.base.errors import InputError
from harness.base.identity import IDENTITY, RunKey
from harness.results.reader import complete_text, of_type, type_name
from harness.results.rows import CallRecord, ProbeCells, ProbeRow, ResidueRow, TurnRow

CHECKS = ("prohibition", "current", "stale", "forgotten", "expect")  # probes.csv `check` (rows.ProbeCells)
LIMIT = 2**63  # a whole number a reader's 64-bit column holds: below this, at least -LIMIT

Check = Callable[[Any], str | None]  # a value -> what is wrong with it, or None


def whole(value: Any) -> str | None:
    if type(value) is not int:
        return f"should be a whole number, not {json_shape(value)}"
    return None if -LIMIT <= value < LIMIT else "is beyond 64 bits"


def text(value: Any) -> str | None:
    return None if isinstance(value, str) else f"should be text, not {json_shape(value)}"


def maybe(check: Check) -> Check:
    return lambda value: None if value is None else check(value)


def items(check: Check) -> Check:
    """A list whose every item passes `check`."""

    def checked(value: Any) -> str | None:
        if not isinstance(value, list):
            return f"should be a list, not {json_shape(value)}"
        return next((f"[{i}] {why}" for i, item in enumerate(value) if (why := check(item))), None)

    return checked


def shaped(**checks: Check) -> Check:
    """An object holding each of `checks`' keys, each passing its check (other keys are free)."""

    def checked(value: Any) -> str | None:
        if not isinstance(value, dict):
            return f"should be an object, not {json_shape(value)}"
        for key, check in checks.items():
            why = check(value.get(key)) if key in value else f"lacks {key!r}"
            if why:
                return f".{key} {why}" if key in value else why
        return None

    return checked


def json_shape(value: Any) -> str:
    if value is None:
        return "null"
    shown = json.dumps(value, ensure_ascii=False, default=str)
    return f"{type(value).__name__} {shown if len(shown) <= 40 else shown[:37] + '...'}"


def annotated(annotation: Any) -> Check:
    """The check of a record type's field: its outer type (`harness.results.reader.of_type`),
    whole numbers within 64 bits."""

    def checked(value: Any) -> str | None:
        if not of_type(value, annotation):
            return f"should be {type_name(annotation)}, not {json_shape(value)}"
        return whole(value) if type(value) is int else None

    return checked


REFERENCE = shaped(base=maybe(whole), head=whole, tail=whole, ids=items(whole))
FACT = shaped(key=text, value=text, turn=whole)
IDENTITY_CHECKS: dict[str, Check] = dict(zip(IDENTITY, (text, text, text, whole), strict=True))

# The shape of each JSON-lines file's records, beyond the identity every record starts with.
JSON_SHAPES: dict[str, dict[str, Check]] = {
    "calls.jsonl": {name: annotated(kind) for name, kind in get_type_hints(CallRecord).items()},
    "messages.jsonl": {
        "id": whole,
        "role": text,
        "content": text,
        "origin": maybe(text),
        "turn": maybe(whole),
        "session": maybe(text),
        "tool_calls": maybe(items(shaped(id=text, name=text, arguments=text))),
        "tool_call_id": maybe(text),
    },
    "views.jsonl": {"turn": whole, "session": text, "status": text, "view": maybe(REFERENCE), "retained": REFERENCE},
    "facts.jsonl": {
        "turn": whole,
        "facts": items(FACT),
        "admission": shaped(status=maybe(text), evicted=maybe(items(FACT)), replaced=maybe(items(FACT))),
        "forget": maybe(shaped(key=maybe(text), removed=items(FACT))),
    },
    "conversations.jsonl": {"status": text},
}
REQUIRED = {"calls.jsonl": ("turn", "kind"), "messages.jsonl": ("id", "content"), "views.jsonl": ("turn", "retained")}
REQUIRED |= {"facts.jsonl": ("turn", "facts", "admission")}

# The CSV files' columns and their types, from the record types.
CSV_TYPES: dict[str, dict[str, Any]] = {
    "turns.csv": get_type_hints(TurnRow),
    "probes.csv": {
        **{k: v for k, v in get_type_hints(ProbeRow).items() if k != "cells"},
        **get_type_hints(ProbeCells),
    },
    "residue.csv": get_type_hints(ResidueRow),
}


def first_damage(directory: Path) -> str | None:
    """`file:line: field: what is wrong` for the first damaged record of `directory`, or None."""
    for name in CSV_TYPES:
        found = _first(_csv_damage(directory / name, CSV_TYPES[name]))
        if found:
            return found
    for name, shape in JSON_SHAPES.items():
        found = _first(_json_damage(directory / name, shape, REQUIRED.get(name, ())))
        if found:
            return found
    return _first(_reference_damage(directory))


def damaged(directories: Sequence[Path]) -> InputError | None:
    """The one message for a reader's failure on these folders (None: no damage found, so the
    failure is the harness's own)."""
    for directory in directories:
        found = first_damage(Path(directory))
        if found:
            return damage_error(found)
    return None


def damage_error(found: str) -> InputError:
    """The one message for damage `first_damage` or `csv_damage` found."""
    return InputError(
        f"{found}; the results were changed after the harness wrote them: restore the file, or start a new run"
    )


def csv_damage(path: Path) -> str | None:
    """`file:line: field: what is wrong` for the first damaged cell of one results CSV (its
    columns' types by its name: turns.csv, probes.csv, residue.csv), or None."""
    types = CSV_TYPES.get(path.name)
    return _first(_csv_damage(path, types)) if types else None


# What a reader raises on a record of another shape than it trusts.
READ_FAILURES = (TypeError, ValueError, KeyError, IndexError, AttributeError, OverflowError, ZeroDivisionError)
P = ParamSpec("P")
R = TypeVar("R")


def naming_damage(read: Callable[P, R]) -> Callable[P, R]:
    """`read(directory or directories, ...)`, whose failure on what it read becomes one message
    naming the damaged file, line and field (InputError), when `first_damage` finds one."""

    @functools.wraps(read)
    def reading(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return read(*args, **kwargs)
        except READ_FAILURES:
            given = args[0] if args else next(iter(kwargs.values()))
            found = damaged([given] if isinstance(given, str | Path) else list(given))  # type: ignore[call-overload]
            if found is None:
                raise
            raise found from None

    return reading


def _first(problems: Iterator[str]) -> str | None:
    return next(problems, None)


def _records(path: Path) -> Iterator[tuple[int, Any]]:
    """(line number, parsed value) of each complete line of a JSON-lines file that is JSON (a line
    that is not is dropped by every reader, as a torn one)."""
    if not path.is_file():
        return
    for number, line in enumerate(complete_text(path).splitlines(), start=1):
        try:
            yield number, json_bounded.loads(line, what=f"line {number}")
        except ValueError:  # JsonBounded too
            continue


def _json_damage(path: Path, shape: Mapping[str, Check], required: tuple[str, ...]) -> Iterator[str]:
    for number, record in _records(path):
        where = f"{path}:{number}"
        if not isinstance(record, dict):
            yield f"{where}: not a record ({json_shape(record)})"
            continue
        for name in (*IDENTITY, *required):
            if name not in record:
                yield f"{where}: {name}: missing"
        for name, check in {**IDENTITY_CHECKS, **shape}.items():
            why = check(record[name]) if name in record else None
            if why:
                yield f"{where}: {name}: {why}"


def _csv_damage(path: Path, types: Mapping[str, Any]) -> Iterator[str]:
    if not path.is_file():
        return
    reader = csv.DictReader(io.StringIO(complete_text(path), newline=""))
    for row in reader:
        where = f"{path}:{reader.line_num}"
        for name, annotation in types.items():
            if name in row and row[name] is not None:
                why = _cell_problem(name, row[name], annotation)
                if why:
                    yield f"{where}: {name}: {why}"


def _cell_problem(name: str, cell: str, annotation: Any) -> str | None:
    choices = get_args(annotation) if isinstance(annotation, UnionType) else (annotation,)
    kinds = [get_origin(c) or c for c in choices if c is not type(None)]
    if cell == "":
        return None if type(None) in choices else "blank, where the harness always writes a value"
    if int in kinds:
        return _whole_cell(cell)
    if float in kinds:
        try:
            float(cell)
        except ValueError:
            return f"should be a number, not {cell[:40]!r}"
    if bool in kinds and cell not in ("true", "false"):
        return f"should be true or false, not {cell[:40]!r}"
    if name == "check" and cell not in CHECKS:
        return f"should be one of {', '.join(CHECKS)}, not {cell[:40]!r}"
    return None


def _whole_cell(cell: str) -> str | None:
    digits = cell.strip().lstrip("+-").replace("_", "").lstrip("0")
    if digits.isdecimal() and len(digits) > 19:  # never converted: Python refuses past 4,300 digits
        return "is beyond 64 bits"
    try:
        return whole(int(cell))
    except ValueError:
        return f"should be a whole number, not {cell[:40]!r}"


def _reference_damage(directory: Path) -> Iterator[str]:
    """Each view row's references: message ids of its own conversation, bases of earlier rows."""
    messages: dict[RunKey, set[int]] = {}
    for _, record in _records(directory / "messages.jsonl"):
        if isinstance(record, dict):
            messages.setdefault(RunKey.held(record), set()).add(record.get("id"))
    rows: dict[tuple[RunKey, str], set[int]] = {}  # (conversation, kind) -> turns with that list
    path = directory / "views.jsonl"
    for number, record in _records(path):
        if not isinstance(record, dict):
            continue
        key, turn = RunKey.held(record), record.get("turn")
        for kind in ("view", "retained"):
            ref = record.get(kind)
            if not isinstance(ref, dict):
                continue
            missing = [i for i in ref.get("ids") or () if i not in messages.get(key, ())]
            if missing:
                held = f"which messages.jsonl does not hold for {key}"
                yield f"{path}:{number}: {kind}: refers to message {missing[0]}, {held}"
            base = ref.get("base")
            if base is not None and (base not in rows.get((key, kind), ()) or not (type(turn) is int and base < turn)):
                earlier = f"no earlier row of {key} has a {kind} list"
                yield f"{path}:{number}: {kind}: its base is turn {base}, where {earlier}"
            rows.setdefault((key, kind), set()).add(turn)
