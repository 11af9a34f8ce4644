"""Naming the damage in a results folder: the first record whose field is not what the harness
writes, by file, line and field; `harness report` and `harness show` say it in one message."""

from __future__ import annotations

import csv
import io
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli.commands import main
from harness.results.damage import first_damage


def edited_json(directory: Path, name: str, change: Callable[[dict], None], pick: Callable[[dict], bool]) -> int:
    """Change the first record of `name` that `pick` chooses; its line number."""
    path = directory / name
    lines = path.read_text(encoding="utf-8").splitlines()
    number = next(i for i, line in enumerate(lines) if pick(json.loads(line)))
    record = json.loads(lines[number])
    change(record)
    lines[number] = json.dumps(record, ensure_ascii=False)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return number + 1


def edited_cell(directory: Path, name: str, column: str, value: str, row: int = 5) -> int:
    """Set one cell of a results CSV (the `row`-th data row); its line number."""
    path = directory / name
    rows = list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"), newline="")))
    rows[row][rows[0].index(column)] = value
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    path.write_text(out.getvalue(), encoding="utf-8")
    return row + 1


@pytest.fixture
def copy(run: Path, tmp_path: Path) -> Path:
    """A copy of the completed batch, to damage."""
    return Path(shutil.copytree(run, tmp_path / "run"))


def answer_of(turn: int) -> Callable[[dict], bool]:
    return lambda r: r["policy"] == "full-history" and r["turn"] == turn and r.get("kind", "answer") == "answer"


JSON_EDITS = {
    "a turn written as text": ("calls.jsonl", "turn", lambda r: r.update(turn="7"), 'should be int, not str "7"'),
    "a count beyond 64 bits": ("calls.jsonl", "attempts", lambda r: r.update(attempts=10**30), "beyond 64 bits"),
    "a bool as a count": ("calls.jsonl", "chars", lambda r: r.update(chars=True), "should be int, not bool true"),
    "kind as a list": ("calls.jsonl", "kind", lambda r: r.update(kind=["answer"]), "should be str, not list"),
    "usage as a number": ("calls.jsonl", "invalid_reported_usage", lambda r: r.update(invalid_reported_usage=1.5), ""),
    "a message id as text": ("messages.jsonl", "id", lambda r: r.update(id="x"), "should be a whole number"),
    "a view as a list": ("views.jsonl", "view", lambda r: r.update(view=[1]), "should be an object, not list"),
    "a view's ids": ("views.jsonl", "retained", lambda r: r["retained"].update(ids="1"), ".ids should be a list"),
    "a missing message": ("views.jsonl", "view", lambda r: r["view"]["ids"].append(9999), "refers to message 9999"),
    "a missing base": ("views.jsonl", "view", lambda r: r["view"].update(base=99), "its base is turn 99"),
    "a dropped identity": ("conversations.jsonl", "policy", lambda r: r.pop("policy"), "missing"),
}


@pytest.mark.parametrize(("name", "field", "change", "says"), JSON_EDITS.values(), ids=JSON_EDITS.keys())
def test_a_json_record_of_another_shape_is_named_by_file_line_and_field(
    copy: Path, name: str, field: str, change: Callable[[dict], None], says: str
) -> None:
    pick = answer_of(3) if name != "conversations.jsonl" else (lambda r: r["policy"] == "full-history")
    if name == "views.jsonl":
        pick = lambda r: r["policy"] == "full-history" and r["turn"] == 5  # noqa: E731
    line = edited_json(copy, name, change, pick)
    found = first_damage(copy)
    assert found is not None and found.startswith(f"{copy / name}:{line}: {field}: ") and says in found


CSV_EDITS = {
    "a blank turn": ("turns.csv", "turn", "", "blank, where the harness always writes a value"),
    "a turn beyond 64 bits": ("turns.csv", "turn", "9" * 23, "is beyond 64 bits"),
    "a size as text": ("turns.csv", "view_chars", "many", "should be a whole number, not 'many'"),
    "a latency as text": ("turns.csv", "latency_ms", "slow", "should be a number, not 'slow'"),
    "a blank probe": ("probes.csv", "probe", "", "blank, where the harness always writes a value"),
    "an unknown check": (
        "probes.csv",
        "check",
        "vibes",
        "should be one of prohibition, current, stale, forgotten, expect, not 'vibes'",
    ),
    "a verdict as a word": ("probes.csv", "passed", "yes", "should be true or false, not 'yes'"),
    "an age beyond 64 bits": ("probes.csv", "age", "9" * 23, "is beyond 64 bits"),
    "a turn of 5,000 digits": ("turns.csv", "turn", "9" * 5000, "is beyond 64 bits"),
}


@pytest.mark.parametrize(("name", "column", "value", "says"), CSV_EDITS.values(), ids=CSV_EDITS.keys())
def test_a_csv_cell_of_another_type_is_named_by_file_line_and_column(
    copy: Path, name: str, column: str, value: str, says: str
) -> None:
    line = edited_cell(copy, name, column, value)
    assert first_damage(copy) == f"{copy / name}:{line}: {column}: {says}"


def test_a_folder_as_the_harness_wrote_it_has_no_damage(run: Path) -> None:
    assert first_damage(run) is None


@pytest.mark.parametrize(
    "edit",
    [
        lambda d: edited_json(d, "calls.jsonl", lambda r: r.update(turn="x"), answer_of(3)),
        lambda d: edited_json(d, "facts.jsonl", lambda r: r.update(admission={"a": 1}), lambda r: True),
        lambda d: edited_cell(d, "probes.csv", "check", "vibes"),
        lambda d: edited_cell(d, "turns.csv", "turn", "9" * 23),
    ],
    ids=["calls turn", "facts admission", "probes check", "turns turn"],
)
def test_report_names_a_damaged_field_in_one_message_and_exits_2(copy: Path, tmp_path: Path, edit) -> None:
    edit(copy)
    result = CliRunner().invoke(main, ["report", str(copy), "--no-charts", "--reports", str(tmp_path / "reports")])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"error: {copy}: ") and result.stderr.count("\n") == 1  # its digests say so first
    assert "was changed" in result.stderr or "changed after" in result.stderr or "do not match" in result.stderr
    unverified(copy)  # as a folder written before results recorded digests: the record itself is named
    result = CliRunner().invoke(main, ["report", str(copy), "--no-charts", "--reports", str(tmp_path / "reports")])
    assert result.exit_code == 2, result.output
    note, error = result.stderr.splitlines()  # the note that the folder is unverified, then the one error
    assert note.startswith(f"note: {copy} is unverified") and error.startswith(f"error: {copy}/")
    assert "restore the file, or start a new run" in error and "Traceback" not in result.output


@pytest.mark.parametrize("name", ["calls.jsonl", "conversations.jsonl"])
def test_a_record_beyond_the_json_bounds_is_damage_not_a_traceback(copy: Path, tmp_path: Path, name: str) -> None:
    """A results folder given to `report` may come from anywhere: a RecursionError before."""
    path = copy / name
    first, rest = path.read_text(encoding="utf-8").split("\n", 1)
    path.write_text(first[:-1] + ', "zz": ' + "[" * 100_000 + "]" * 100_000 + "}\n" + rest, encoding="utf-8")
    result = CliRunner().invoke(main, ["report", str(copy), "--no-charts", "--reports", str(tmp_path / "reports")])
    assert result.exit_code == 2 and f"error: {copy}: {name}:1: is no" in result.stderr, result.output


@pytest.mark.parametrize(("name", "column"), [("turns.csv", "turn"), ("probes.csv", "age")])
def test_a_cell_of_5000_digits_in_an_unverified_folder_is_named_in_the_harness_s_words(
    copy: Path, tmp_path: Path, name: str, column: str
) -> None:
    """Python refuses to convert past 4,300 digits, and its message advises `sys.set_int_max_str_digits()`."""
    line = edited_cell(copy, name, column, "9" * 5000)
    unverified(copy)  # a format-3 folder is refused by its digests first
    result = CliRunner().invoke(main, ["report", str(copy), "--no-charts", "--reports", str(tmp_path / "reports")])
    assert result.exit_code == 2, result.output
    error = result.stderr.splitlines()[-1]
    assert error == (
        f"error: {copy / name}:{line}: {column}: is beyond 64 bits; "
        "the results were changed after the harness wrote them: restore the file, or start a new run"
    )


def unverified(directory: Path) -> None:
    """The folder as format version 2 wrote it: no digests in the manifest nor in conversations.jsonl."""
    manifest = json.loads((directory / "manifest.json").read_text())
    manifest = {k: v for k, v in manifest.items() if k not in ("files", "settings_sha256")}
    (directory / "manifest.json").write_text(json.dumps({**manifest, "format_version": 2}))
    lines = (directory / "conversations.jsonl").read_text().splitlines()
    bare = [{k: v for k, v in json.loads(line).items() if k not in ("records", "sha256")} for line in lines]
    (directory / "conversations.jsonl").write_text("".join(json.dumps(r) + "\n" for r in bare))


def test_show_of_a_view_pointing_at_missing_messages_says_so_in_one_message(copy: Path) -> None:
    pick = lambda r: r["policy"] == "full-history" and r["chronology"] == "memory-drift" and r["turn"] == 3  # noqa: E731
    line = edited_json(copy, "views.jsonl", lambda r: r["view"]["ids"].append(9999), pick)
    args = ["show", str(copy), "--chronology", "memory-drift", "--turn", "3", "--policy", "full-history"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"error: {copy}/views.jsonl:{line}: view: refers to message 9999, ")
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.output
