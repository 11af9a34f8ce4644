"""Reading results files back: a write cut short by a kill is dropped, damage is named."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from harness.base.errors import InputError, RunInUse
from harness.base.locking import RunLock
from harness.results.reader import each_record, read_manifest, read_records
from harness.results.writer import ResultsWriter
from tests.conftest import call_record, turn_row

ROW = {"chronology": "c", "policy": "p", "model": "m", "repetition": 1, "turn": 1, "error": "café"}


def written(tmp_path: Path) -> ResultsWriter:
    writer = ResultsWriter(tmp_path)
    writer.call(call_record(turn=1, error="café", response="été"))
    writer.turn(turn_row(turn=1, error="café"))
    return writer


@pytest.mark.parametrize("name", ["calls.jsonl", "turns.csv"])
def test_a_write_torn_inside_a_utf8_character_is_dropped(tmp_path: Path, name: str) -> None:
    written(tmp_path).close()
    whole = read_records(tmp_path / name)
    line = json.dumps({**ROW, "response": "é"}, ensure_ascii=False) if name.endswith("jsonl") else "c,p,m,1,2,main,é"
    with (tmp_path / name).open("ab") as handle:
        handle.write(line.encode()[: line.encode().index("é".encode()) + 1])  # half of 'é'
    assert read_records(tmp_path / name) == whole


def test_a_csv_row_torn_inside_a_quoted_field_is_dropped(tmp_path: Path) -> None:
    written(tmp_path).close()
    whole = read_records(tmp_path / "turns.csv")
    with (tmp_path / "turns.csv").open("a") as handle:
        handle.write('c,p,m,1,2,main,error,,"line one\nline')  # killed inside a multi-line cell
    assert read_records(tmp_path / "turns.csv") == whole


@pytest.mark.parametrize("name, line", [("calls.jsonl", 2), ("turns.csv", 3)])
def test_a_complete_line_that_is_not_utf8_is_damage_named_with_its_line(tmp_path: Path, name: str, line: int) -> None:
    written(tmp_path).close()
    with (tmp_path / name).open("ab") as handle:
        handle.write("caf\xe9\n".encode("latin-1"))
    with pytest.raises(InputError, match=rf"{name}:{line}: not UTF-8"):
        read_records(tmp_path / name)


def test_records_are_read_one_at_a_time_never_the_whole_file_first(tmp_path: Path) -> None:
    """A batch of thousands of conversations counts conversations.jsonl record by record: the
    first record is had before the reading reaches damage further on, which then is named."""
    written(tmp_path).close()
    with (tmp_path / "calls.jsonl").open("ab") as handle:
        handle.write("caf\xe9\n".encode("latin-1"))
    records = each_record(tmp_path / "calls.jsonl")
    assert next(records)["error"] == "café"
    with pytest.raises(InputError, match=r"calls.jsonl:2: not UTF-8"):
        next(records)


DAMAGED = [
    ('{"run_id": "x", ', "not valid JSON"),
    ("[1, 2]", "not a JSON object"),
    ('{"format_version": 1}', "field 'run_id' is missing"),
    (
        '{"format_version": 1, "run_id": 3, "policies": [], "repetitions": 1, "live": false}',
        "field 'run_id' should be str, not int",
    ),
    (
        '{"format_version": 1, "run_id": "x", "policies": [], "repetitions": 1, "live": false, "seed": true}',
        "field 'seed' should be int or null, not bool",
    ),
    (b"\xff\xfe{}", "not UTF-8"),
    # a results folder given to `report` or `compare` may come from anywhere: tracebacks before
    ('{"format_version": ' + "1" * 5_000 + "}", "the manifest: a number of 5,000 characters, over the 100 read"),
    ("[" * 100_000 + "]" * 100_000, "the manifest: arrays or objects nested more than 200 deep"),
]


@pytest.mark.parametrize("text, message", DAMAGED)
def test_a_damaged_manifest_is_one_input_error(tmp_path: Path, text: str | bytes, message: str) -> None:
    path = tmp_path / "manifest.json"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(InputError, match=message) as caught:
        read_manifest(tmp_path)
    assert str(path) in str(caught.value)


def test_a_run_still_starting_is_in_use_not_a_folder_to_remove(tmp_path: Path) -> None:
    """A run holds its folder before it writes its manifest: a `--resume` (or `report`) in that
    moment named the folder a stopped run's and advised removing it, under the running process."""
    with RunLock(tmp_path, "run"):
        with pytest.raises(RunInUse, match=rf"is in use by process {os.getpid()} .*not written its manifest yet"):
            read_manifest(tmp_path)


def test_a_run_stopped_before_its_manifest_has_nothing_to_resume(tmp_path: Path) -> None:
    with RunLock(tmp_path, "run"):
        pass
    (tmp_path / ".lock").touch()  # left by a run killed while starting, held by nobody
    with pytest.raises(InputError, match="the run stopped before it wrote its manifest"):
        read_manifest(tmp_path)


@pytest.mark.parametrize("name", ["manifest.json", "calls.jsonl"])
def test_a_results_file_with_another_name_is_refused(tmp_path: Path, name: str) -> None:
    """A hard link in a results folder is another file (`/etc/passwd`, another run's records):
    a resume would append to it, a report would present it as this run's."""
    written(tmp_path / "run").close()
    (tmp_path / "run" / "manifest.json").write_text("{}")
    other = tmp_path / "other"
    other.write_text("not this run's\n")
    (tmp_path / "run" / name).unlink()
    os.link(other, tmp_path / "run" / name)
    with pytest.raises(InputError, match=rf"{name}: a file that has another name \(a hard link\)"):
        read_manifest(tmp_path / "run")
    assert other.read_text() == "not this run's\n"


def test_a_record_beyond_the_json_bounds_is_skipped_as_one_that_is_no_json(tmp_path: Path) -> None:
    (tmp_path / "calls.jsonl").write_text(
        '{"n": ' + "1" * 5_000 + '}\n{"n": 2}\n' + "[" * 100_000 + "]" * 100_000 + "\n"
    )
    assert list(each_record(tmp_path / "calls.jsonl")) == [{"n": 2}]  # a traceback before


@pytest.mark.parametrize("name", ["calls.jsonl", "turns.csv"])
def test_a_file_cut_at_any_byte_reads_as_a_prefix_of_its_records(tmp_path: Path, name: str) -> None:
    with ResultsWriter(tmp_path / "whole") as writer:
        for turn, text in enumerate(["café", 'multi\nline, "quoted"', "日本語", "plain"], start=1):
            writer.call(call_record(turn=turn, error="café", response=text))
            writer.turn(turn_row(turn=turn, error=text))
    data = (tmp_path / "whole" / name).read_bytes()
    whole = read_records(tmp_path / "whole" / name)
    cut = tmp_path / name
    for end in range(len(data) + 1):  # a kill can stop a write after any byte
        # A new file each time: ext4 flushes a file truncated and rewritten to disk when it is closed
        # (auto_da_alloc), which made this loop wait on the disk for seconds.
        cut.unlink(missing_ok=True)
        cut.write_bytes(data[:end])
        records = read_records(cut)
        assert records == whole[: len(records)], end
    assert len(whole) == 4
