"""Tool steps on a user turn (`steps:`): the records they become, and each mistake named by
line and field (docs/decisions/0001-chronology-extensions.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.base.errors import ChronologyError, Problem
from harness.base.messages import ToolCall
from harness.chronology import Step, ToolResult, UserTurn, load_chronology
from harness.cli.commands import main

AGENT = """\
title: An agent fixes a test
turns:
  - user: "The export test fails. Never edit generated/schema.py; it is generated."
    steps:
      - tool_calls:
          - id: call_1
            name: read_file
            arguments: {path: reporting/export.py}
          - id: call_2
            name: run_tests
            arguments: '{"filter": "export"}'
        results:
          - id: call_1
            content: "def export(rows): ..."
          - id: call_2
            content: "1 failed"
            error: true
      - tool_calls:
          - {id: call_3, name: list_files}
        results:
          - {id: call_3, content: ""}
    assistant: "Fixed reporting/export.py: the header row was written twice."
"""


def write(folder: Path, text: str) -> Path:
    path = folder / "agent.yaml"
    path.write_text(text)
    return path


def problems_of(path: Path) -> list[Problem]:
    with pytest.raises(ChronologyError) as caught:
        load_chronology(path)
    return caught.value.problems


def test_steps_load_as_calls_and_results_with_arguments_as_json_text(tmp_path: Path) -> None:
    turn = load_chronology(write(tmp_path, AGENT)).turns[0]
    assert isinstance(turn, UserTurn)
    assert turn.steps == (
        Step(
            (
                ToolCall("call_1", "read_file", '{"path": "reporting/export.py"}'),
                ToolCall("call_2", "run_tests", '{"filter": "export"}'),
            ),
            (ToolResult("call_1", "def export(rows): ..."), ToolResult("call_2", "1 failed", error=True)),
        ),
        Step((ToolCall("call_3", "list_files", "{}"),), (ToolResult("call_3", ""),)),
    )


def test_a_turn_without_steps_has_none(tmp_path: Path) -> None:
    path = write(tmp_path, "title: t\nturns:\n  - user: hello\n")
    assert load_chronology(path).user_turns[0].steps == ()


BROKEN = {
    "a result naming no call": (
        "results:\n          - {id: call_9, content: x}",
        8,
        "turns[0].steps[0].results[0].id",
        "result 'call_9' answers no call of this step (its calls: call_1)",
    ),
    "a call answered twice": (
        "results:\n          - {id: call_1, content: x}\n          - {id: call_1, content: y}",
        9,
        "turns[0].steps[0].results[1].id",
        "call 'call_1' is answered twice",
    ),
}


@pytest.mark.parametrize("results, line, field, message", BROKEN.values(), ids=BROKEN)
def test_results_must_answer_the_steps_calls(tmp_path: Path, results: str, line: int, field: str, message: str) -> None:
    text = f"""\
title: t
turns:
  - user: go
    steps:
      - tool_calls:
          - {{id: call_1, name: read_file, arguments: {{path: a.py}}}}
        {results}
"""
    problems = problems_of(write(tmp_path, text))
    assert any((p.line, p.field) == (line, field) and message in p.message for p in problems), problems


def test_an_unanswered_call_is_named_at_its_own_line(tmp_path: Path) -> None:
    text = """\
title: t
turns:
  - user: go
    steps:
      - tool_calls:
          - {id: call_1, name: read_file}
          - {id: call_2, name: read_file}
        results:
          - {id: call_1, content: x}
"""
    (problem,) = problems_of(write(tmp_path, text))
    assert (problem.line, problem.field) == (7, "turns[0].steps[0].tool_calls[1].id")
    assert "call 'call_2' has no result; add a result with id: call_2" in problem.message


def test_results_follow_the_calls_order(tmp_path: Path) -> None:
    text = """\
title: t
turns:
  - user: go
    steps:
      - tool_calls:
          - {id: a, name: read_file}
          - {id: b, name: read_file}
        results:
          - {id: b, content: x}
          - {id: a, content: y}
"""
    problems = problems_of(write(tmp_path, text))
    assert [(p.line, p.field) for p in problems] == [
        (9, "turns[0].steps[0].results[0].id"),
        (10, "turns[0].steps[0].results[1].id"),
    ]
    assert "results follow the calls' order: expected 'a' here" in problems[0].message


def test_a_call_id_is_unique_in_the_file(tmp_path: Path) -> None:
    step = "      - tool_calls: [{id: call_1, name: f}]\n        results: [{id: call_1, content: x}]\n"
    text = f"title: t\nturns:\n  - user: one\n    steps:\n{step}  - user: two\n    steps:\n{step}"
    (problem,) = problems_of(write(tmp_path, text))
    assert (problem.line, problem.field) == (9, "turns[1].steps[0].tool_calls[0].id")
    assert "duplicate tool call id 'call_1'; turns[0].steps[0].tool_calls[0] already uses it" in problem.message


SHAPES = {
    "arguments that are not JSON": (
        "{id: c, name: f, arguments: '{path: a'}",
        "turns[0].steps[0].tool_calls[0].arguments",
        "not JSON",
    ),
    "arguments holding a number of 5,000 digits (was a traceback)": (
        '{id: c, name: f, arguments: \'{"n": ' + "9" * 5_000 + "}'}",
        "turns[0].steps[0].tool_calls[0].arguments",
        "the arguments: a number of 5,000 characters, over the 100 read",
    ),
    "arguments nested 100,000 deep (was a traceback)": (
        "{id: c, name: f, arguments: '" + "[" * 100_000 + "]" * 100_000 + "'}",
        "turns[0].steps[0].tool_calls[0].arguments",
        "the arguments: arrays or objects nested more than 200 deep, the most read; flatten it",
    ),
    "arguments that are a JSON list": (
        "{id: c, name: f, arguments: '[1, 2]'}",
        "turns[0].steps[0].tool_calls[0].arguments",
        "not an object",
    ),
    "arguments holding a date": (
        "{id: c, name: f, arguments: {day: 2024-01-01}}",
        "turns[0].steps[0].tool_calls[0].arguments",
        "JSON cannot write",
    ),
    "arguments holding YAML's .nan (sent as NaN, which is no JSON)": (
        "{id: c, name: f, arguments: {n: .nan}}",
        "turns[0].steps[0].tool_calls[0].arguments",
        "JSON cannot write",
    ),
    "arguments whose JSON text holds Infinity": (
        "{id: c, name: f, arguments: '{\"n\": -Infinity}'}",
        "turns[0].steps[0].tool_calls[0].arguments",
        "NaN or Infinity, which JSON does not have",
    ),
    "a tool name with a space": (
        "{id: c, name: read file}",
        "turns[0].steps[0].tool_calls[0].name",
        "a tool name uses letters, digits",
    ),
    "a misspelt field": (
        "{id: c, nmae: f}",
        "turns[0].steps[0].tool_calls[0].nmae",
        "did you mean 'name'?",
    ),
}


@pytest.mark.parametrize("call, field, message", SHAPES.values(), ids=SHAPES)
def test_a_call_of_the_wrong_shape_is_named_by_field(tmp_path: Path, call: str, field: str, message: str) -> None:
    text = f"title: t\nturns:\n  - user: go\n    steps:\n      - tool_calls: [{call}]\n        results: [{{id: c, content: x}}]\n"
    problems = problems_of(write(tmp_path, text))
    assert any(p.field == field and p.line == 5 and message in p.message for p in problems), problems


def test_an_empty_step_says_what_it_needs(tmp_path: Path) -> None:
    text = "title: t\nturns:\n  - user: go\n    steps:\n      - tool_calls: []\n        results: []\n"
    problems = problems_of(write(tmp_path, text))
    assert [p.field for p in problems] == ["turns[0].steps[0].tool_calls", "turns[0].steps[0].results"]
    assert "at least one call" in problems[0].message


def test_a_forget_turn_has_no_steps(tmp_path: Path) -> None:
    text = "title: t\nturns:\n  - user: go\n  - forget: all\n    steps: [{tool_calls: [{id: c, name: f}], results: [{id: c, content: x}]}]\n"
    (problem,) = problems_of(write(tmp_path, text))
    assert "a forget turn has only the field forget; remove steps" in problem.message


def test_validate_names_file_line_and_field_and_exits_2(tmp_path: Path) -> None:
    text = "title: t\nturns:\n  - user: go\n    steps:\n      - tool_calls: [{id: c, name: f}]\n        results: [{id: d, content: x}]\n"
    result = CliRunner().invoke(main, ["validate", str(write(tmp_path, text))])
    assert result.exit_code == 2
    assert f"{tmp_path / 'agent.yaml'}:6: turns[0].steps[0].results[0].id: result 'd' answers no call" in result.output
