"""SIGKILL at random points, `--resume`, and the results equal an uninterrupted run's (times aside),
with no record taken for one changed after it was written.

The default suite kills 3 times; the long loop (25 kills) is opt-in, being slow on a shared
machine: `HARNESS_KILL_LOOP=1 pytest -m kill_loop`, or `python benchmarks/kill_resume.py`.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import assert_same_results
from tests.killing import kill_resume_loop

pytestmark = pytest.mark.slow  # harness processes, killed and resumed


def check(tmp_path: Path, kills: int, seed: int) -> None:
    loop, pairs = kill_resume_loop(tmp_path, kills, seed)
    assert loop.kills >= kills
    assert loop.mismatches == []  # no resume took a kill for a change to the records
    for whole, resumed in pairs:
        assert_same_results(whole, resumed)
        assert (tmp_path / "reports" / f"{resumed.name}.md").is_file()


def test_three_kills_then_resume_equal_an_uninterrupted_run(tmp_path: Path) -> None:
    check(tmp_path, kills=3, seed=14)


@pytest.mark.kill_loop
@pytest.mark.skipif(os.environ.get("HARNESS_KILL_LOOP") != "1", reason="slow: set HARNESS_KILL_LOOP=1")
def test_twenty_five_kills_then_resume_equal_an_uninterrupted_run(tmp_path: Path) -> None:
    check(tmp_path, kills=25, seed=2026)
