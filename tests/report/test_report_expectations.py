"""The report on probes that expect an answer: the side-by-side table and policies.csv count
expectations met, offline kinds and judged rubrics apart (a rubric without --judge counted
neither way), and a chronology's section shows each expectation per policy, with where the
evidence of one not met went."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from harness.report.policies import CSV_NAME, count_text, probe_counts
from harness.results.rows import NEEDS_JUDGE
from tests.conftest import run_through_cli

CHRONOLOGY = """\
title: Where the database is
turns:
  - user: database=PostgreSQL
    assistant: Noted.
    evidence: [db]
  - user: The invoice run finished.
    assistant: Noted.
  - user: Which database are we on?
    probe: db
    expect:
      - value: PostgreSQL
      - abstain: true
      - rubric: Names the database.
"""
POLICIES = ("full-history", "last-turns:turns=0")


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("expect")
    source = root / "source" / "db.yaml"
    source.parent.mkdir()
    source.write_text(CHRONOLOGY)
    run_through_cli(root, [source], "r", "--no-charts", *(o for p in POLICIES for o in ("--policy", p)))
    return root


def test_policies_csv_counts_offline_and_judged_expectations_apart(report: Path) -> None:
    table = pd.read_csv(report / "reports" / "r" / CSV_NAME).set_index("policy")
    columns = [
        "expect_offline_k",
        "expect_offline_n",
        "expect_judged_k",
        "expect_judged_n",
        "expect_judged_needs_judge",
    ]
    assert table[columns].to_dict("index") == {
        "full-history": dict(zip(columns, [1, 2, 0, 0, 1])),  # the value met, no abstention
        "last-turns:turns=0": dict(zip(columns, [1, 2, 0, 0, 1])),  # the value missed, an abstention
    }


def test_the_side_by_side_table_shows_them_after_the_residue_column(report: Path) -> None:
    text = (report / "reports" / "r.md").read_text(encoding="utf-8")
    section = text.split("## Policies side by side", 1)[1].split("\n### ", 1)[0]
    header, _, *rows = [line for line in section.splitlines() if line.startswith("| ")]
    names = [c.strip() for c in header.strip("|").split(" | ")]
    at = names.index("old values still kept") + 1
    assert names[at] == "expectations met"  # offline and judged in one cell, apart
    cells = [c.strip() for c in rows[0].strip("|").split(" | ")]
    assert cells[at] == f"1/2 · 1 {NEEDS_JUDGE}"


def test_the_chronologys_section_shows_each_expectation_and_its_evidence(report: Path) -> None:
    text = (report / "reports" / "r.md").read_text(encoding="utf-8")
    section = text.split("### Expectations of the answer", 1)[1].split("\n### ", 1)[0]
    rows = {line.split(" | ")[1].strip(): line for line in section.splitlines() if line.startswith("| db")}
    assert rows["value: PostgreSQL"].endswith(
        "| offline | met | not met; evidence not in view: left the request window at turn 2 (window) |"
    )
    assert rows["abstain"].endswith("| offline | not met; evidence in view | met |")
    assert rows["rubric: Names the database."].endswith(f"| judged | {NEEDS_JUDGE} | {NEEDS_JUDGE} |")


def test_a_chronology_without_expectations_has_no_such_section(tmp_path: Path) -> None:
    source = tmp_path / "source" / "plain.yaml"
    source.parent.mkdir()
    source.write_text("title: t\nturns:\n  - user: database=PostgreSQL\n  - user: Which database?\n    probe: p\n")
    run_through_cli(tmp_path, [source], "r", "--no-charts", "--policy", "full-history")
    assert "Expectations of the answer" not in (tmp_path / "reports" / "r.md").read_text(encoding="utf-8")


def test_judged_rubrics_are_counted_by_their_verdict_and_the_waiting_ones_apart() -> None:
    rows = pd.DataFrame(
        {
            "subject": ["rubric: a", "rubric: b", "rubric: c", "value: x", "abstain"],
            "passed": pd.array([True, False, None, True, None], dtype="boolean"),
            "note": [None, None, NEEDS_JUDGE, None, None],
        }
    ).assign(check="expect", status="measured", cause=None, in_view=None, in_answer=None, in_retained=None)
    counts = probe_counts(rows)
    assert (counts["expect_judged"].k, counts["expect_judged"].n, counts["expect_judged"].waiting) == (1, 2, 1)
    assert (counts["expect_offline"].k, counts["expect_offline"].n) == (1, 1)
    assert count_text("expect_judged", counts["expect_judged"]) == f"1/2 · 1 {NEEDS_JUDGE}"
