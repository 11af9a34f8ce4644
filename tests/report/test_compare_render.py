"""The comparison as markdown, CSV and JSON: the same facts, each number labelled."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from harness.report.compare import compare_runs
from harness.report.compare_markdown import STATISTICS_HEADER
from harness.report.compare_render import CSV_COLUMNS, render
from harness.report.document import TITLE
from tests.report.test_compare import run, shipped


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("render")
    files = shipped("budget-cut-correction", "constraint-eviction")
    return run(root, "a", files, ("full-history", "last-turns")), run(
        root, "b", files, ("full-history", "last-turns:turns=1")
    )


def test_the_markdown_starts_as_every_report_does_so_the_index_lists_it(runs: tuple[Path, Path]) -> None:
    lines = render(compare_runs(*runs), "md").splitlines()
    assert lines[0] == f"{TITLE}paired comparison: a vs b"
    assert "passed→failed" in lines[2] and "failed→passed" in lines[2]  # the summary index.md shows
    text = "\n".join(lines)
    for heading in (
        "What differed between the runs",
        "Flips",
        "Per policy and check kind",
        "Token figures by call kind",
    ):
        assert f"\n## {heading}\n" in text
    assert "| " + " | ".join(STATISTICS_HEADER) + " |" in text
    assert "winner" not in text.replace("names no winner", "")


def test_the_csv_has_one_row_per_check_of_either_run(runs: tuple[Path, Path]) -> None:
    rows = list(csv.DictReader(render(compare_runs(*runs), "csv").splitlines()))
    assert tuple(rows[0]) == CSV_COLUMNS
    probes = [len((r / "probes.csv").read_text(encoding="utf-8").splitlines()) - 1 for r in runs]
    assert len(rows) == probes[0] == probes[1]  # every check paired


def test_the_json_holds_the_same_counts_as_the_markdown(runs: tuple[Path, Path]) -> None:
    comparison = compare_runs(*runs)
    data = json.loads(render(comparison, "json"))
    assert data["passed_to_failed"] == comparison.passed_to_failed > 0
    assert len(data["flips"]) == comparison.passed_to_failed + comparison.failed_to_passed
    assert all(f["show_a"].startswith("harness show ") for f in data["flips"])
    window = next(
        s
        for s in data["statistics"]
        if s["policy"] == "last-turns → last-turns:turns=1" and s["check_kind"] == "all checks"
    )
    counts = comparison.statistics[("last-turns → last-turns:turns=1", "all checks")]
    assert window["pairs_passed_to_failed"] == counts.passed_to_failed
    assert window["conversations_lower_in_b"] == counts.conversations_lower > 0
    assert 0 < window["sign_test_p_conversations"] <= window["holm_adjusted_p"] <= 1
    assert data["tests"] == len(data["statistics"])
