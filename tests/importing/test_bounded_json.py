"""Every import reads its file, the JSON strings inside it and its `--expect` file through the
one bounded reader: a number of thousands of digits or nesting thousands deep, even in a field
no importer reads, is one located refusal and exit status 2, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli.commands import main
from tests.importing.goldens import FIXTURES

LONG = "9" * 5_000  # Python converts at most 4,300 digits: a plain ValueError before
DEEP = "[" * 100_000 + "]" * 100_000  # a RecursionError before
SAYS = {LONG: "a number of 5,000 characters, over the 100 read", DEEP: "more than 200 deep, the most read"}

FORMATS = {
    "openai-chat": ("chat.jsonl", ["--accept-licence", "x", "--probe-last"]),
    "multichallenge": ("benchmark_questions.jsonl", ["--accept-licence", "x"]),
    "longmemeval": ("longmemeval_oracle.json", []),
    "factconsolidation": ("conflict_resolution.jsonl", []),
    "sharegpt": ("sharegpt.json", ["--probe-last"]),
    "compactbench": ("compactbench_case.json", []),
    "locomo": ("locomo_sample.json", ["--accept-licence", "CC BY-NC 4.0"]),
    "mrcr": ("needles.jsonl", []),
}


def imported(tmp_path: Path, name: str, path: Path, *options: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["import", name, str(path), "--out", str(tmp_path / "out"), *options])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert not (tmp_path / "out").exists()  # nothing half-written
    return result.exit_code, result.output


@pytest.mark.parametrize("bad", [LONG, DEEP], ids=["5,000 digits", "100,000 deep"])
@pytest.mark.parametrize("name", FORMATS)
def test_a_field_no_importer_reads_is_still_read_within_the_bounds(tmp_path: Path, name: str, bad: str) -> None:
    fixture, options = FORMATS[name]
    text = (FIXTURES / fixture).read_text(encoding="utf-8").replace("{", '{"ignored": ' + bad + ", ", 1)
    (tmp_path / fixture).write_text(text, encoding="utf-8")
    code, output = imported(tmp_path, name, tmp_path / fixture, *options)
    line = text[: text.index('"ignored"')].count("\n") + 1  # the line it is on
    assert code == 2 and f"{fixture}:{line}: " in output and SAYS[bad] in output, output


def rows(fixture: str) -> list[dict]:
    return [json.loads(line) for line in (FIXTURES / fixture).read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize("bad", [LONG, DEEP], ids=["5,000 digits", "100,000 deep"])
@pytest.mark.parametrize(
    ("name", "fixture", "field", "options"),
    [
        ("multichallenge", "benchmark_questions.jsonl", "CONVERSATION", ["--accept-licence", "x"]),
        ("mrcr", "needles.jsonl", "prompt", []),
    ],
)
def test_a_json_string_inside_a_record_is_read_within_the_bounds(
    tmp_path: Path, name: str, fixture: str, field: str, options: list[str], bad: str
) -> None:
    row = rows(fixture)[0]
    row[field] = '[{"role": "user", "content": "hi", "n": ' + bad + "}]"
    (tmp_path / fixture).write_text(json.dumps(row) + "\n", encoding="utf-8")
    code, output = imported(tmp_path, name, tmp_path / fixture, *options)
    assert code == 2 and f"{fixture}:1: {field}: " in output and SAYS[bad] in output, output


@pytest.mark.parametrize("bad", [LONG, DEEP], ids=["5,000 digits", "100,000 deep"])
def test_imported_tool_call_arguments_are_read_within_the_bounds(tmp_path: Path, bad: str) -> None:
    row = rows("chat-tools.jsonl")[0]
    call = next(m for m in row["messages"] if m.get("tool_calls"))["tool_calls"][0]
    call["function"]["arguments"] = '{"path": ' + bad + "}"
    (tmp_path / "tools.jsonl").write_text(json.dumps(row) + "\n", encoding="utf-8")
    code, output = imported(tmp_path, "openai-chat", tmp_path / "tools.jsonl", "--accept-licence", "x", "--probe-last")
    assert code == 2 and "tools.jsonl:1: messages[" in output and ".function.arguments: " in output, output
    assert SAYS[bad] in output


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity"])
def test_imported_tool_call_arguments_holding_nan_are_refused_at_their_line(tmp_path: Path, number: str) -> None:
    """Python's reader takes NaN and Infinity, which JSON does not have: they were imported and
    sent to the endpoint as the call's arguments."""
    row = rows("chat-tools.jsonl")[0]
    call = next(m for m in row["messages"] if m.get("tool_calls"))["tool_calls"][0]
    call["function"]["arguments"] = '{"n": ' + number + "}"
    (tmp_path / "tools.jsonl").write_text(json.dumps(row) + "\n", encoding="utf-8")
    code, output = imported(tmp_path, "openai-chat", tmp_path / "tools.jsonl", "--accept-licence", "x", "--probe-last")
    assert code == 2 and "tools.jsonl:1: messages[" in output, output
    assert ".function.arguments: NaN or Infinity, which JSON does not have" in output


@pytest.mark.parametrize("bad", [LONG, DEEP], ids=["5,000 digits", "100,000 deep"])
def test_an_expect_file_is_read_within_the_bounds(tmp_path: Path, bad: str) -> None:
    (tmp_path / "expect.json").write_text('{\n"line-1": {"value": "x", "n": ' + bad + "}}\n", encoding="utf-8")
    code, output = imported(
        tmp_path, "openai-chat", FIXTURES / "chat.jsonl", "--accept-licence", "x", "--probe-last",
        "--expect", str(tmp_path / "expect.json"),
    )  # fmt: skip
    assert code == 2 and "expect.json:2: " in output and SAYS[bad] in output, output
