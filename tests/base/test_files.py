"""Reading input files: regular files up to the limit, anything else refused at once."""

from __future__ import annotations

import os
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from harness.base.files import MAX_FILE_BYTES, FileRefused, read_regular_file


def test_a_file_of_exactly_the_limit_is_read_and_one_byte_more_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "x.yaml"
    path.write_bytes(b"#" * MAX_FILE_BYTES)
    assert len(read_regular_file(str(path))) == MAX_FILE_BYTES
    path.write_bytes(b"#" * (MAX_FILE_BYTES + 1))
    with pytest.raises(FileRefused, match="larger than 1,048,576 bytes"):
        read_regular_file(str(path))


def test_a_fifo_without_a_writer_is_refused_without_waiting(tmp_path: Path) -> None:
    fifo = str(tmp_path / "pipe.yaml")
    os.mkfifo(fifo)
    with ThreadPoolExecutor(1) as pool:
        reading = pool.submit(read_regular_file, fifo)
        try:
            # An open() that waits for a writer waits for ever: a bound no loaded machine reaches
            # still tells it from a refusal at once, and the test fails instead of hanging.
            refused = reading.exception(timeout=10)
        except TimeoutError:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))  # the writer it waits for: the thread ends
            raise AssertionError(f"reading {fifo} waited for a writer") from None
    assert isinstance(refused, FileRefused)
    assert re.fullmatch(r"a named pipe \(FIFO\), not a regular file; give a .yaml file", str(refused))


def test_a_device_that_never_ends_is_refused_before_reading() -> None:
    with pytest.raises(FileRefused, match="^a character device"):
        read_regular_file("/dev/zero")


def test_a_missing_file_is_left_to_the_caller_to_word(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_regular_file(str(tmp_path / "nope.yaml"))
