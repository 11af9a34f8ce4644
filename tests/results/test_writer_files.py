"""The results writer never writes through a link planted in a results folder: not at a record
file, not at the manifest, not at any name its temporary could take."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from harness.base.errors import InputError
from harness.results.writer import FILES, ResultsWriter, write_json_atomic

SECRET = "alice:$6$hash:19000:0:99999:7:::\n"


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    path = tmp_path / "victim"
    path.write_text(SECRET)
    return path


@pytest.fixture
def run(tmp_path: Path) -> Path:
    (tmp_path / "run").mkdir()
    return tmp_path / "run"


@pytest.mark.parametrize("name", [n for n in FILES if n != "manifest.json"])
def test_a_record_file_planted_as_a_link_is_refused_and_its_target_left_whole(
    run: Path, victim: Path, name: str
) -> None:
    (run / name).symlink_to(victim)
    with pytest.raises(InputError, match=f"{name}: a symbolic link, where the harness keeps a file of its own"):
        ResultsWriter(run)
    assert victim.read_text() == SECRET


def test_a_record_file_that_is_a_fifo_is_refused_without_waiting(run: Path) -> None:
    os.mkfifo(run / "calls.jsonl")
    with ThreadPoolExecutor(1) as pool:
        opening = pool.submit(ResultsWriter, run)
        try:
            refused = opening.exception(timeout=10)
        except TimeoutError:
            os.close(os.open(run / "calls.jsonl", os.O_RDONLY | os.O_NONBLOCK))  # the reader it waits for
            raise AssertionError("opening calls.jsonl waited on a FIFO") from None
    assert isinstance(refused, InputError)
    assert "calls.jsonl: a named pipe (FIFO), where the harness keeps a file of its own" in str(refused)


@pytest.mark.parametrize("planted", [".manifest.json.tmp", "manifest.json"])
def test_the_manifest_is_never_written_through_a_planted_link(run: Path, victim: Path, planted: str) -> None:
    (run / planted).symlink_to(victim)
    try:
        write_json_atomic(run / "manifest.json", {"status": "running"})
    except InputError as refused:  # a link at the manifest itself is refused, and left
        assert planted == "manifest.json" and "a symbolic link" in str(refused)
    else:
        assert planted != "manifest.json" and (run / "manifest.json").read_text() == '{\n  "status": "running"\n}\n'
    assert victim.read_text() == SECRET
