"""`--no-charts`: the report's tables alone, no image linked, nothing stale beside it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli.commands import main
from harness.report.header import CHARTS_NOTE, NO_CHARTS_NOTE
from tests.conftest import run_through_cli
from tests.paths import SHIPPED

LONG = SHIPPED / "long-conversation.yaml"  # long enough for ranged size tables
SHORT = SHIPPED / "memory-drift.yaml"
IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")


def report(root: Path, *options: str) -> str:
    """The report and its chronologies' pages, as one text."""
    result = CliRunner().invoke(main, ["report", str(root / "results" / "r"), "--reports", str(root / "out"), *options])
    assert result.exit_code == 0, result.output
    pages = sorted((root / "out" / "r").glob("*.md"))
    return "".join(p.read_text(encoding="utf-8") for p in [root / "out" / "r.md", *pages])


def test_run_no_charts_links_no_image_and_draws_none(tmp_path: Path) -> None:
    results = run_through_cli(tmp_path, [SHORT], "r", "--no-charts", "--policy", "full-history")
    text = (tmp_path / "reports" / "r.md").read_text(encoding="utf-8")
    assert results.is_dir()
    assert not IMAGE.search(text) and ".png" not in text
    assert NO_CHARTS_NOTE in text and CHARTS_NOTE not in text
    # its folder: the CSV and the chronology's page, no image
    assert sorted(p.name for p in (tmp_path / "reports" / "r").iterdir()) == [
        "chronology-memory-drift.md",
        "policies.csv",
    ]


@pytest.mark.slow
def test_the_tables_are_those_of_the_charted_report(tmp_path: Path) -> None:
    """Only the image links, the charts note and the pointer to the charts differ."""
    run_through_cli(tmp_path, [SHORT, LONG], "r", "--policy", "full-history", "--policy", "last-turns")
    charted, plain = report(tmp_path), report(tmp_path, "--no-charts")
    assert IMAGE.search(charted) and not IMAGE.search(plain)
    assert "the charts show every turn" in charted and "the charts show every turn" not in plain

    def tables(text: str) -> list[str]:
        text = IMAGE.sub("", text).replace("; the charts show every turn.", ".")
        return [line for line in text.splitlines() if line.strip() and not line.startswith((CHARTS_NOTE, "Charts not"))]

    assert tables(charted) == tables(plain)


@pytest.mark.slow
def test_report_no_charts_removes_the_charts_of_an_earlier_build(tmp_path: Path) -> None:
    run_through_cli(tmp_path, [SHORT], "r", "--policy", "full-history")
    report(tmp_path)
    folder = tmp_path / "out" / "r"
    assert list(folder.glob("*.png"))
    report(tmp_path, "--no-charts")
    # the charts gone, the table's CSV and the chronology's page kept
    assert sorted(p.name for p in folder.iterdir()) == ["chronology-memory-drift.md", "policies.csv"]


@pytest.mark.slow
def test_resume_takes_no_charts(tmp_path: Path) -> None:
    """A report option, not a setting of the run: accepted beside --resume."""
    results = run_through_cli(tmp_path, [SHORT], "r", "--policy", "full-history")
    args = ["run", "--resume", str(results), "--reports", str(tmp_path / "again"), "--no-charts", "--quiet"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert not IMAGE.search((tmp_path / "again" / "r.md").read_text(encoding="utf-8"))
