"""docs/comparing.md's GitHub Actions example, its `harness` commands run as written in a
checkout laid out as the job lays it out (the baseline and the candidate side by side): nothing
changed between them, so the gate passes and the comparison is written."""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli.commands import main
from tests.paths import ROOT, SHIPPED

PAGE = (ROOT / "docs" / "comparing.md").read_text(encoding="utf-8")
WORKFLOW = PAGE.split("## A CI gate", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]


def commands() -> list[list[str]]:
    """Every line of the workflow's `run:` blocks that starts with `harness`, in order."""
    return [shlex.split(line.strip()) for line in WORKFLOW.splitlines() if line.strip().startswith("harness ")]


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("baseline", "candidate"):
        shutil.copytree(SHIPPED, tmp_path / name / "chronologies")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.slow
def test_the_ci_example_runs_as_written_and_passes_the_gate_when_nothing_changed(checkout: Path) -> None:
    steps = commands()
    assert [s[:2] for s in steps] == [["harness", "run"], ["harness", "run"], ["harness", "compare"]]
    assert steps[2].count("--fail-on") == 2
    for args in steps:
        result = CliRunner().invoke(main, args[1:])
        assert result.exit_code == 0, (args, result.output, result.stderr)
    written = checkout / "reports" / "paired-baseline+candidate.md"
    assert result.output.strip() == str(Path("reports") / written.name)
    text = written.read_text(encoding="utf-8")
    assert "0 passed→failed, 0 failed→passed" in text
    assert "Every check of each run has its partner in the other." in text


def test_the_page_is_linked_from_the_readme() -> None:
    assert "(docs/comparing.md)" in (ROOT / "README.md").read_text(encoding="utf-8")
    assert "`failed>=N`" in PAGE and "`p<X`" in PAGE
