"""A command killed mid-write leaves its temporaries (`.harness-tmp-<pid>-…`); the next command
that owns the folder removes them and says so on stderr, and leaves a running command's alone."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from harness.base.temporaries import temporary_stem
from harness.cli.commands import main
from tests.importing.goldens import FIXTURES
from tests.paths import SHIPPED

GONE = 2**22 + 1  # above Linux's largest pid_max: the process that wrote it is gone


def harness(*args: str) -> Result:
    return CliRunner().invoke(main, [*args])


def killed_mid_write(folder: Path, what: str, pid: int = GONE) -> Path:
    """What a kill (SIGKILL, a power cut) leaves: a temporary half written, or a staging folder."""
    path = folder / f"{temporary_stem(pid)}.{what}"
    if what.endswith(".tmp"):
        path.write_text("half written")
    else:
        path.mkdir()
        (path / "a.md").write_text("half a page")
    return path


def test_import_removes_what_a_killed_import_left_and_says_so(project: Path) -> None:
    out = project / "out"
    out.mkdir()
    staged = killed_mid_write(out, "import")
    running = killed_mid_write(out, "chat.yaml.tmp", pid=os.getppid())  # a command still at work
    result = harness("import", "openai-chat", str(FIXTURES / "chat.jsonl"), "--out", "out", "--accept-licence", "ours")
    assert result.exit_code == 0, result.output
    assert not staged.exists() and running.exists()
    assert "note: out: removed a temporary left by a harness command that stopped mid-write" in result.stderr
    assert staged.name[:60] in result.stderr and running.name not in result.stderr


@pytest.mark.slow
def test_report_and_resume_remove_what_a_killed_run_and_report_left(project: Path) -> None:
    shutil.copy(SHIPPED / "memory-drift.yaml", project / "chronologies")
    assert harness("run", "--run-id", "t", "--quiet", "--no-charts").exit_code == 0
    in_results = killed_mid_write(project / "results" / "t", "manifest.json.tmp")
    in_reports = killed_mid_write(project / "reports", "t.md.tmp")
    pages = killed_mid_write(project / "reports" / "t", "pages")
    running = killed_mid_write(project / "reports", "index.md.tmp", pid=os.getppid())

    reported = harness("report", "results/t", "--no-charts")
    assert reported.exit_code == 0, reported.output
    assert not in_reports.exists() and not pages.exists() and running.exists()
    assert "note: reports: removed a temporary" in reported.stderr and "note: reports/t: removed" in reported.stderr
    assert in_results.exists()  # the results folder is not the report's: a run may be writing it

    resumed = harness("run", "--resume", "results/t", "--quiet", "--no-charts")
    assert resumed.exit_code == 0, resumed.output
    assert not in_results.exists()
    assert "note: results/t: removed a temporary" in resumed.stderr
