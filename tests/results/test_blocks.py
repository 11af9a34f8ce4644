"""A run's turns and calls read a block of chronologies at a time: each chronology's byte range
in a file in plan order, the frames read from those ranges, and the whole reading where a file is
not in that order."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.report.comparison import ONLY, READ, records
from harness.results import blocks
from harness.results.blocks import block_reader, chronology_ranges
from harness.results.calls_in_bulk import read_calls
from harness.results.order import RecordFile
from harness.results.rows import CALL, PROBE, TURN
from harness.results.tables import read_columns

NAMES = ("memory-drift", "two-sessions")


def reader(directory: Path, bound: int | None = None) -> blocks.BlockReader:
    return block_reader(directory, NAMES, READ["turns"], READ["calls"], CALL.messages, ONLY, bound)


def interleaved(source: Path, target: Path) -> Path:
    """A copy of a run whose turns and calls hold the chronologies' conversations taken in turn,
    a record of each at a time (as a concurrent run leaves them before its final rewrite)."""
    shutil.copytree(source, target)
    for name in ("turns.csv", "calls.jsonl"):
        found = RecordFile(source / name)
        queues: dict[object, list[bytes]] = {}
        for record in found:
            queues.setdefault(record.key, []).append(record.data)
        out = [found.header]
        while any(queues.values()):
            out += [queue.pop(0) for queue in queues.values() if queue]
        (target / name).write_bytes(b"".join(out))
    return target


def test_each_chronology_lies_in_one_range_that_reads_as_its_rows_of_the_whole_file(run: Path) -> None:
    ranges = chronology_ranges(run / "turns.csv")
    assert ranges is not None and list(ranges.spans) == list(NAMES)
    whole = read_columns(run / "turns.csv", READ["turns"])
    for name, (start, end, count) in ranges.spans.items():
        part = ranges.header + (run / "turns.csv").read_bytes()[start:end]
        mine = whole[whole[TURN.chronology] == name]
        assert records(read_columns(run / "turns.csv", READ["turns"], part)) == records(mine)
        assert count == len(mine)


def test_a_block_reads_the_turns_and_calls_of_its_chronologies_as_the_whole_files_hold_them(run: Path) -> None:
    found = reader(run, bound=1)
    assert found.blocks == tuple((name,) for name in NAMES)  # at least one chronology, even over the bound
    turns = read_columns(run / "turns.csv", READ["turns"])
    calls = read_calls(run / "calls.jsonl", READ["calls"], drop=CALL.messages, only=ONLY)
    for number, (name,) in enumerate(found.blocks):
        read = found.read(number)
        assert read is not None
        assert records(read[0]) == records(turns[turns[TURN.chronology] == name])
        assert records(read[1]) == records(calls[calls[CALL.chronology] == name])
    assert reader(run).blocks == (NAMES,)  # under the bound, together


def test_a_file_not_in_plan_order_is_read_whole(run: Path, tmp_path: Path) -> None:
    mixed = interleaved(run, tmp_path / "mixed")
    assert chronology_ranges(mixed / "turns.csv") is None
    assert chronology_ranges(mixed / "calls.jsonl") is None
    found = reader(mixed, bound=1)
    assert found.whole and found.blocks == ((),)
    read = found.read(0)
    assert read is not None and len(read[0]) == len(read_columns(run / "turns.csv", READ["turns"]))


def test_a_quoted_line_break_stays_in_its_record_and_a_torn_last_record_is_left_out(tmp_path: Path) -> None:
    header = ",".join(PROBE)
    row = ["c", "p", "m", "1", "2", "q", "s", "measured", "prohibition", "x", "true", "", "false", "1"]
    row += ["", "", "true", '"a note\nover two lines"', "", "", ""]
    other = ['"d,\n e"', *row[1:]]
    text = "\n".join([header, ",".join(row), ",".join(row), ",".join(other)]) + "\n" + ",".join(row)[:-12]
    (tmp_path / "probes.csv").write_text(text, encoding="utf-8")
    ranges = chronology_ranges(tmp_path / "probes.csv")
    assert ranges is not None
    assert {name: count for name, (_, _, count) in ranges.spans.items()} == {"c": 2, "d,\n e": 1}
    start, end, _ = ranges.spans["d,\n e"]
    assert (tmp_path / "probes.csv").read_bytes()[start:end].decode() == ",".join(other) + "\n"


def test_a_cell_over_three_lines_stays_in_its_record(tmp_path: Path) -> None:
    """A quoted cell may hold several line breaks: a line without a quote inside it ends no record."""
    header = ",".join(PROBE)
    row = ["c", "p", "m", "1", "2", "q", "s", "measured", "prohibition", "x", "true", "", "false", "1"]
    row += ["", "", "true", '"an error\nover\nthree lines"', "", "", ""]
    other = ["d", *row[1:]]
    text = "\n".join([header, ",".join(row), ",".join(other), ",".join(row)]) + "\n"
    (tmp_path / "probes.csv").write_text(text, encoding="utf-8")
    assert chronology_ranges(tmp_path / "probes.csv") is None  # c comes back after d: not one range each
    (tmp_path / "probes.csv").write_text("\n".join([header, ",".join(row), ",".join(other)]) + "\n", encoding="utf-8")
    ranges = chronology_ranges(tmp_path / "probes.csv")
    assert ranges is not None
    assert {name: count for name, (_, _, count) in ranges.spans.items()} == {"c": 1, "d": 1}


@pytest.mark.parametrize(
    "lines",
    [
        ['{"chronology": "a"}', '{"chronology": "b"}', '{"chronology": "a"}'],  # a comes back
        ['{"chronology": "a"}', '{"policy": "p"}'],  # a record of no chronology
        ['{"chronology": "a"}', '{"chronology": 3}'],
    ],
)
def test_calls_that_cannot_be_placed_in_one_range_each_are_read_whole(tmp_path: Path, lines: list[str]) -> None:
    (tmp_path / "calls.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert chronology_ranges(tmp_path / "calls.jsonl") is None


def test_a_line_that_is_no_record_and_a_torn_last_line_belong_to_no_chronology(tmp_path: Path) -> None:
    lines = ['{"chronology": "a", "turn": 1}', "not json", '{"chronology": "a", "turn": 2}', "[1]"]
    lines += ['{"chronology": "b", "turn": 1}']
    (tmp_path / "calls.jsonl").write_text("\n".join(lines) + '\n{"chronology": "a"', encoding="utf-8")
    ranges = chronology_ranges(tmp_path / "calls.jsonl")
    assert ranges is not None
    assert {name: count for name, (_, _, count) in ranges.spans.items()} == {"a": 2, "b": 1}
    assert ranges.spans["b"][1] == len("\n".join(lines)) + 1  # the torn line after it left out


def test_blocks_hold_neighbours_in_plan_order_up_to_the_bound(run: Path) -> None:
    calls = [json.loads(line)["chronology"] for line in (run / "calls.jsonl").read_text(encoding="utf-8").splitlines()]
    sizes = {name: calls.count(name) for name in NAMES}
    turns = chronology_ranges(run / "turns.csv")
    assert turns is not None
    first = turns.spans[NAMES[0]][2] + sizes[NAMES[0]]
    assert reader(run, bound=first).blocks == ((NAMES[0],), (NAMES[1],))
    backwards = block_reader(run, NAMES[::-1], READ["turns"], READ["calls"], CALL.messages, ONLY, first)
    assert [name for block in backwards.blocks for name in block] == list(NAMES[::-1])


def test_a_chronology_with_records_only_elsewhere_has_a_block_too(run: Path) -> None:
    """A chronology with probe rows and no turn or call (a hand-made file) is read with a block,
    as it was read with the whole run: its probe rows are shown where it is asked for."""
    found = block_reader(run, NAMES, READ["turns"], READ["calls"], CALL.messages, ONLY, 1, others=["elsewhere"])
    assert found.blocks[-1] == ("elsewhere",) and found.block_of("elsewhere") == len(NAMES)
