"""Report and comparison file names: runs joined so that they can be read back, never two
reports in one file, never a name the file system refuses."""

from __future__ import annotations

from harness.report.names import MAX_STEM, paired_stem, side_by_side_stem
from harness.results.rundir import MAX_RUN_ID


def test_one_run_is_named_by_its_id_and_several_are_joined_by_a_character_no_id_holds() -> None:
    assert side_by_side_stem(["r"]) == "r"
    assert side_by_side_stem(["one", "two"]) == "compare-one+two"
    assert paired_stem("p", "q") == "paired-p+q"


def test_runs_whose_ids_hold_dashes_never_share_a_name() -> None:
    assert side_by_side_stem(["a-b", "c"]) != side_by_side_stem(["a", "b-c"])
    assert paired_stem("p-vs-q", "r") != paired_stem("p", "q-vs-r")


def test_many_long_ids_give_a_short_name_that_still_tells_runs_apart() -> None:
    ids = [f"{n:02d}" + "x" * (MAX_RUN_ID - 2) for n in range(12)]
    stem = side_by_side_stem(ids)
    assert stem.startswith("compare-12-runs~") and len(stem) <= MAX_STEM
    assert side_by_side_stem(list(reversed(ids))) != stem  # the order of the columns is part of the report
    assert side_by_side_stem(ids[:11] + ["other"]) != stem
    assert len(paired_stem("a" * MAX_RUN_ID, "b" * MAX_RUN_ID)) <= MAX_STEM
