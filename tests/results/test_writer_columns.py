"""A results file an older harness began keeps its width when a newer one resumes it: the
columns added since (turns.csv's `trigger_*`) are left out of the rows appended, never written
past the header, so every line reads back under its header."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from harness.results.rows import TURN_COLUMNS
from harness.results.writer import ResultsWriter
from tests.conftest import turn_row

OLDER = TURN_COLUMNS[: TURN_COLUMNS.index("group_violations") + 1]  # before the trigger_* columns


def test_a_resumed_turns_csv_of_an_older_harness_gets_rows_of_its_own_width(tmp_path: Path) -> None:
    (tmp_path / "turns.csv").write_text(",".join(OLDER) + "\n", encoding="utf-8")
    writer = ResultsWriter(tmp_path)
    writer.turn(turn_row(turn=1, session="main", status="answered", trigger_counter="tiktoken", trigger_tokens=12))
    writer.close()
    lines = (tmp_path / "turns.csv").read_text(encoding="utf-8").splitlines()
    assert len({line.count(",") for line in lines}) == 1  # the row is as wide as the header
    frame = pd.read_csv(tmp_path / "turns.csv")
    assert tuple(frame.columns) == OLDER and frame.status[0] == "answered"


def test_a_fresh_turns_csv_has_every_column(tmp_path: Path) -> None:
    writer = ResultsWriter(tmp_path)
    writer.turn(turn_row(turn=1, session="main", status="answered", trigger_counter="tiktoken", trigger_tokens=12))
    writer.close()
    frame = pd.read_csv(tmp_path / "turns.csv")
    assert tuple(frame.columns) == TURN_COLUMNS and frame.trigger_tokens[0] == 12
