"""Report and comparison file names: runs joined so that they can be read back, never two
reports in one file, never a name the file system refuses."""

from __future__ import annotations

from harness.report.names import MAX_STEM, paired_stem, rejudged_stem, side_by_side_stem
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


def test_a_plain_prompt_name_names_the_rejudged_verdicts() -> None:
    assert rejudged_stem("r", "second") == "r-rejudged-second"


def test_a_prompt_name_that_is_not_plain_is_replaced_by_its_digest() -> None:
    """The prompt's file name is the user's text: a control character or a newline became part of
    the verdicts' file name, and a 245-character name made it too long to create."""
    for stem in ("a\x1b[2Jb\nc", "p" * 245, "two words", ".hidden"):
        name = rejudged_stem("x" * MAX_RUN_ID, stem)
        assert name.startswith("x" * MAX_RUN_ID + "-rejudged-prompt~") and len(name) <= MAX_STEM
        assert name.isprintable() and "/" not in name
    assert rejudged_stem("r", "a\nb") != rejudged_stem("r", "a\tb")
