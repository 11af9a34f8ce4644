"""The report reads rows through the names harness/results/rows.py derives from the record types, so a
renamed or misspelt field fails here, not silently in a report that reads nothing."""

from __future__ import annotations

import ast
from dataclasses import fields
from pathlib import Path

import pytest

from harness.results import rows
from harness.results.rows import CALL, PROBE, PROBE_COLUMNS, TURN, TURN_COLUMNS, CallRecord

HARNESS = Path(rows.__file__).parent.parent
READERS = sorted((HARNESS / "report").glob("*.py")) + [HARNESS / "results" / "tables.py"]
NAMESPACES = {"TURN": TURN, "PROBE": PROBE, "CALL": CALL}
COLUMNS = set(TURN) | set(PROBE) | set(CALL)

# Functions that index records of files without a row type (facts.jsonl, views.jsonl and the
# messages in them), whose keys may share a name with a column (`turn`, `status`, `session`).
UNTYPED_RECORDS = {
    ("timeline.py", "fact_timeline"),
    ("timeline.py", "column_timelines"),
    ("timeline.py", "facts_by_owner"),
    ("timeline.py", "fact_events"),
    ("timeline.py", "describe"),
    ("show.py", "policy_text"),
    ("show.py", "answer_text"),
    ("show.py", "degraded_text"),  # the entries of calls.jsonl `degraded` (`kind`, `text`, ...)
    ("show.py", "label"),
    ("show.py", "identity"),
    ("otel.py", "_compacted_turns"),  # views.jsonl rows and their messages
}


def test_the_names_are_the_fields_and_equal_to_them() -> None:
    assert tuple(TURN) == TURN_COLUMNS and tuple(PROBE) == PROBE_COLUMNS
    assert tuple(CALL) == tuple(f.name for f in fields(CallRecord))
    assert PROBE.passed == "passed" and TURN.view_chars == "view_chars" and CALL.response == "response"


def test_a_misspelt_name_fails_at_first_use() -> None:
    with pytest.raises(AttributeError):
        _ = PROBE.pased
    with pytest.raises(AttributeError):
        PROBE.passed = "other"


def uses(path: Path) -> list[tuple[str, str, int]]:
    """(namespace, attribute, line) of every `TURN.x`, `PROBE.x` and `CALL.x` in a module."""
    return [
        (node.value.id, node.attr, node.lineno)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in NAMESPACES
    ]


def test_every_column_name_the_report_uses_is_a_field_of_the_row_types() -> None:
    found = [(path.name, *use) for path in READERS for use in uses(path)]
    assert len(found) > 100  # the scan sees the report's reads
    wrong = [f"{file}:{line}: {ns}.{name}" for file, ns, name, line in found if name not in NAMESPACES[ns]]
    assert not wrong, wrong


def literal_keys(path: Path) -> list[str]:
    """`x["column"]` and `x.get("column")` with a column's name as a string, outside UNTYPED_RECORDS."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    untyped = {
        id(node)
        for function in ast.walk(tree)
        if isinstance(function, ast.FunctionDef) and (path.name, function.name) in UNTYPED_RECORDS
        for node in ast.walk(function)
    }
    found = []
    for node in ast.walk(tree):
        key = None
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            key = node.slice.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
            key = node.args[0].value if node.args and isinstance(node.args[0], ast.Constant) else None
        if key in COLUMNS and id(node) not in untyped:
            found.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
    return found


@pytest.mark.slow
def test_the_report_indexes_no_row_by_a_string_literal() -> None:
    found = sorted({hit for path in READERS for hit in literal_keys(path)})
    assert not found, found
