"""`harness compare RUN_A RUN_B`: two runs paired check by check, through the command line as a
user runs it, on chronologies of the shipped library."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from harness.base.text import path_shown
from harness.cli.commands import main
from harness.report.compare import compare_runs, file_name
from tests.paths import SHIPPED

CHRONOLOGIES = ("budget-cut-correction", "constraint-eviction", "two-sessions")
POLICIES = ("full-history", "last-turns", "summary", "bounded-facts")


def harness(*args: object) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


def run(root: Path, run_id: str, chronologies: list[Path], policies: tuple[str, ...] = POLICIES, *more: str) -> Path:
    """A finished run of these files in `root/results/<run_id>`."""
    policy_args = [x for p in policies for x in ("--policy", p)]
    result = harness(
        "run", *chronologies, *policy_args, *more, "--run-id", run_id, "--out", root / "results",
        "--reports", root / "reports", "--no-charts", "--quiet",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return root / "results" / run_id


def shipped(*names: str) -> list[Path]:
    return [SHIPPED / f"{n}.yaml" for n in names]


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run(tmp_path_factory.mktemp("compare"), "base", shipped(*CHRONOLOGIES))


@pytest.fixture(scope="module")
def twin(base: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of `base` in another folder: the same run id and records (one folder given twice is refused)."""
    return shutil.copytree(base, tmp_path_factory.mktemp("twin") / "base")


def passed_by_key(directory: Path) -> dict[tuple, str]:
    """Each probes.csv row's `passed`, keyed as the comparison pairs (the policy's name, not its label)."""
    with (directory / "probes.csv").open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    return {
        (r["chronology"], r["policy"].split(":")[0], r["probe"], r["check"], r["subject"], r["repetition"]): r["passed"]
        for r in rows
    }


def test_a_copy_of_a_run_compared_with_it_has_no_flips_and_passes_every_gate(base: Path, twin: Path) -> None:
    result = harness("compare", base, twin, "--fail-on", "failed>=1", "--fail-on", "p<0.05")
    assert result.exit_code == 0, result.output
    assert "0 passed→failed, 0 failed→passed" in result.output
    assert "No paired check changed outcome between the runs." in result.output
    assert "Every check of each run has its partner in the other." in result.output
    assert "The manifests record the same settings" in result.output


@pytest.mark.parametrize("spelling", ["same", "link"])
def test_one_folder_given_as_both_runs_is_refused(base: Path, tmp_path: Path, spelling: str) -> None:
    """Each check would pair with itself: "no flips" would say nothing (a copy is compared, above)."""
    other = base
    if spelling == "link":
        other = tmp_path / "link"
        other.symlink_to(base)
    result = harness("compare", base, other)
    assert result.exit_code == 2
    assert (
        f"error: {path_shown(base)} and {path_shown(other)} are the same folder: a run compared with" in result.output
    )


@pytest.mark.slow
def test_flips_are_exactly_the_pairs_whose_outcome_differs(base: Path, tmp_path: Path) -> None:
    """The window cut from 3 turns to 1: `last-turns` pairs by name, and every check whose passed
    differs between the two probes.csv files is a flip, in its direction; no other."""
    narrow = run(
        tmp_path, "narrow", shipped(*CHRONOLOGIES), ("full-history", "last-turns:turns=1", "summary", "bounded-facts")
    )
    a, b = passed_by_key(base), passed_by_key(narrow)
    expected = sorted(
        (k[0], k[2], k[3], k[4], "passed→failed" if a[k] == "true" else "failed→passed")
        for k in a
        if {a[k], b[k]} == {"true", "false"}
    )
    assert expected, "the narrower window must lose something for this test to mean anything"
    result = harness("compare", base, narrow, "--format", "json")
    data = json.loads(result.output)
    found = sorted((f["chronology"], f["probe"], f["check"], f["subject"], f["direction"]) for f in data["flips"])
    assert found == expected
    assert {f["pair_policy"] for f in data["flips"]} == {"last-turns → last-turns:turns=1"}
    assert data["passed_to_failed"] == sum(e[-1] == "passed→failed" for e in expected)


@pytest.mark.slow
def test_each_flip_shows_both_causes_and_both_show_commands(base: Path, tmp_path: Path) -> None:
    narrow = run(tmp_path, "narrow", shipped(*CHRONOLOGIES), ("full-history", "last-turns:turns=1"))
    text = harness("compare", base, narrow).output
    flip = next(line for line in text.splitlines() if line.startswith("| passed→failed |"))
    cells = [c.strip() for c in flip.strip("|").split("|")]
    assert cells[7].startswith("yes · ") and cells[8:10] == ["", ""]  # in A's view, not lost
    assert cells[10].startswith("no · ")  # not in B's view
    assert cells[11] == "window" and cells[12].startswith("left the request window")  # B's cause and lost_at
    assert cells[13].startswith(f"`harness show {base} --chronology ") and cells[13].endswith("--policy last-turns`")
    assert cells[14].startswith(f"`harness show {narrow} --chronology ")
    assert cells[14].endswith("--policy last-turns:turns=1`")


@pytest.mark.slow
def test_the_gate_fails_on_passed_to_failed_flips_with_one_line(base: Path, tmp_path: Path) -> None:
    narrow = run(tmp_path, "narrow", shipped(*CHRONOLOGIES), ("full-history", "last-turns:turns=1"))
    result = harness("compare", base, narrow, "--fail-on", "failed>=1")
    assert result.exit_code == 1
    [line] = [x for x in result.stderr.splitlines() if x]
    assert line.startswith("gate failed: ") and "passed in A and failed in B (failed>=1)" in line
    assert harness("compare", narrow, base, "--fail-on", "failed>=1").exit_code == 0  # only failed→passed that way


@pytest.mark.slow
def test_runs_of_different_chronology_versions_name_the_checks_not_paired(tmp_path: Path) -> None:
    files = tmp_path / "chronologies"
    files.mkdir()
    for path in shipped("budget-cut-correction", "two-sessions"):
        shutil.copy(path, files / path.name)
    before = run(tmp_path, "before", sorted(files.iterdir()), ("full-history",))
    edited = files / "two-sessions.yaml"
    edited.write_text(edited.read_text(encoding="utf-8") + "# a new version of the file\n", encoding="utf-8")
    after = run(tmp_path, "after", sorted(files.iterdir()), ("full-history",))
    text = harness("compare", before, after).output
    assert "| two-sessions |" in text and "| changed: not paired |" in text
    assert "| budget-cut-correction |" in text and "| same file |" in text
    rows = list(csv.DictReader(harness("compare", before, after, "--format", "csv").output.splitlines()))
    alone = [r for r in rows if r["chronology"] == "two-sessions"]
    assert alone and {r["reason"] for r in alone} == {"chronology changed (sha256 differs), not paired"}
    assert {r["outcome"] for r in alone} == {"in run A only", "in run B only"}
    assert all(r["reason"] == "" for r in rows if r["chronology"] == "budget-cut-correction")


def test_checks_in_one_run_only_are_counted_with_the_reason_never_dropped(base: Path, tmp_path: Path) -> None:
    subset = run(tmp_path, "subset", shipped("two-sessions"), ("full-history",))
    data = json.loads(harness("compare", base, subset, "--format", "json").output)
    reasons = {(x["chronology"], x["policy"]): x["reason"] for x in data["checks_in_one_run_only"]}
    assert reasons[("constraint-eviction", "full-history")] == "chronology not in the other run"
    assert reasons[("two-sessions", "summary")] == "policy not in the other run"
    rows = list(csv.DictReader(harness("compare", base, subset, "--format", "csv").output.splitlines()))
    assert sum(1 for r in rows if r["policy_a"]) == len(passed_by_key(base))  # every check of A, once
    assert sum(1 for r in rows if r["policy_b"]) == len(passed_by_key(subset))  # and of B


@pytest.mark.slow
def test_reports_writes_the_comparison_into_the_folder_and_its_index(base: Path, twin: Path, tmp_path: Path) -> None:
    for form in ("md", "csv", "json"):
        result = harness("compare", base, twin, "--reports", tmp_path / "out", "--format", form)
        assert result.exit_code == 0, result.output
        assert result.output.strip() == str(tmp_path / "out" / f"paired-base+base.{form}")
    assert (
        (tmp_path / "out" / "paired-base+base.md")
        .read_text(encoding="utf-8")
        .startswith("# Context-policy paired comparison: base vs base")
    )
    assert "paired-base+base" in (tmp_path / "out" / "index.md").read_text(encoding="utf-8")
    assert file_name(compare_runs(base, twin), "csv") == "paired-base+base.csv"
    for form in ("md", "csv", "json"):  # its own earlier comparisons: replaced as the command runs again
        again = harness("compare", base, twin, "--reports", tmp_path / "out", "--format", form)
        assert again.exit_code == 0, again.output


@pytest.mark.parametrize("form", ["md", "csv", "json"])
def test_reports_never_replaces_a_file_the_harness_did_not_write_unless_forced(
    base: Path, twin: Path, tmp_path: Path, form: str
) -> None:
    mine = tmp_path / "out" / f"paired-base+base.{form}"
    mine.parent.mkdir()
    mine.write_text("my notes\n")
    refused = harness("compare", base, twin, "--reports", tmp_path / "out", "--format", form)
    assert refused.exit_code == 2 and "already exists and was not written by the harness" in refused.output
    assert mine.read_text() == "my notes\n"
    forced = harness("compare", base, twin, "--reports", tmp_path / "out", "--format", form, "--force")
    assert forced.exit_code == 0, forced.output
    assert mine.read_text() != "my notes\n"


def test_reports_is_never_a_results_folder(base: Path, twin: Path) -> None:
    before = sorted(p.name for p in base.iterdir())
    refused = harness("compare", base, twin, "--reports", base, "--force")
    assert refused.exit_code == 2 and "lies in the results folder" in refused.output
    assert sorted(p.name for p in base.iterdir()) == before


def test_a_changed_run_is_refused_as_the_report_refuses_it(base: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(base, copy)
    probes = copy / "probes.csv"
    probes.write_text(probes.read_text(encoding="utf-8").replace(",true\n", ",false\n", 1), encoding="utf-8")
    result = harness("compare", base, copy)
    assert result.exit_code == 2
    assert "probes.csv" in result.stderr and "changed after the harness wrote them" in result.stderr


def test_a_folder_that_is_no_run_is_bad_input(base: Path, tmp_path: Path) -> None:
    result = harness("compare", base, tmp_path)
    assert result.exit_code == 2 and "not a results directory" in result.stderr


@pytest.mark.parametrize("condition", ["failed>0", "p<=0.05", "regressions"])
def test_a_malformed_fail_on_is_a_usage_error(base: Path, twin: Path, condition: str) -> None:
    result = harness("compare", base, twin, "--fail-on", condition)
    assert result.exit_code == 2
    assert f"Invalid value for '--fail-on': {condition!r} is not a condition; give failed>=N" in result.stderr


def test_token_figures_keep_unknown_provider_counts_unknown(base: Path, twin: Path) -> None:
    text = harness("compare", base, twin).output
    assert "| full-history | answer | estimate tokens (chars/4) |" in text
    reported = next(x for x in text.splitlines() if x.startswith("| full-history | answer | provider-reported prompt"))
    assert reported.endswith("calls reported) | unknown |") and "unknown (0 of" in reported
