"""Faults once records exist: one message, the manifest says what happened, `--resume` finishes."""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import time
from contextlib import ExitStack
from pathlib import Path
from typing import TextIO

import pytest
from click.testing import CliRunner

from harness.cli.commands import main
from harness.models import Model
from tests.conftest import assert_same_results
from tests.paths import SHIPPED
from tests.scripted import ScriptedModel


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "chronologies").mkdir()
    shutil.copy(SHIPPED / "memory-drift.yaml", tmp_path / "chronologies")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def manifest(project: Path, run_id: str = "t") -> dict:
    return json.loads((project / "results" / run_id / "manifest.json").read_text())


@pytest.mark.slow
def test_a_fault_mid_run_marks_the_manifest_failed_and_says_how_to_finish(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    disk_full = OSError(errno.ENOSPC, "No space left on device", "results/t/calls.jsonl")
    model = ScriptedModel(fails=disk_full, from_call=6)  # five calls answered, then the disk is full
    monkeypatch.setattr("harness.models.catalog.model_factory", lambda options, seed: lambda name, stack: model)
    result = CliRunner().invoke(main, ["run", "--run-id", "t", "--quiet"])
    assert result.exit_code == 1 and result.exception is not None and isinstance(result.exception, SystemExit)
    assert result.stderr.count("\n") == 1  # one error line (--quiet: no "running ..." line)
    assert "No space left on device; the run stopped: the records so far are kept in results/t" in result.stderr
    assert "then: harness run --resume results/t" in result.stderr
    assert manifest(project)["status"] == "failed" and "No space left" in manifest(project)["error"]
    assert not (project / "reports" / "t.md").exists()
    monkeypatch.undo()
    monkeypatch.chdir(project)
    seen = []
    monkeypatch.setattr("harness.run.batch.ResultsWriter.manifest", lambda self, data: seen.append(data.status))
    resumed = CliRunner().invoke(main, ["run", "--resume", "results/t", "--quiet"])
    assert seen == ["running"]  # while it resumes, the manifest no longer says failed
    assert resumed.exit_code == 0, resumed.output
    assert manifest(project)["status"] == "complete" and manifest(project)["error"] is None
    assert CliRunner().invoke(main, ["run", "--run-id", "whole", "--quiet"]).exit_code == 0
    assert_same_results(project / "results" / "whole", project / "results" / "t")


def test_a_model_that_cannot_open_leaves_no_directory_behind(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def unopenable(name: str, stack: ExitStack) -> Model:
        from harness.base.errors import InputError

        raise InputError("--model local: the local extra is not installed")

    monkeypatch.setattr("harness.models.catalog.model_factory", lambda options, seed: unopenable)
    result = CliRunner().invoke(main, ["run", "--run-id", "t", "--quiet"])
    assert result.exit_code == 2 and "the local extra is not installed" in result.stderr
    assert list((project / "results").iterdir()) == []


@pytest.mark.slow
def test_a_run_killed_before_its_report_gets_it_from_resume(project: Path) -> None:
    assert CliRunner().invoke(main, ["run", "--run-id", "t", "--quiet"]).exit_code == 0
    written = (project / "reports" / "t.md").read_bytes()
    shutil.rmtree(project / "reports")  # as if killed between the manifest's `complete` and the report
    result = CliRunner().invoke(main, ["run", "--resume", "results/t", "--quiet"])
    assert result.exit_code == 0, result.output
    assert "the run was already complete; writing its report" in result.stderr
    assert (project / "reports" / "t.md").read_bytes() == written


def test_a_report_that_fails_after_the_run_says_the_records_are_kept(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full_disk(*args: object) -> Path:
        raise OSError(errno.ENOSPC, "No space left on device", "reports/t.md")

    monkeypatch.setattr("harness.report.document.write_report", full_disk)
    result = CliRunner().invoke(main, ["run", "--run-id", "t", "--quiet"])
    assert result.exit_code == 1
    assert "its report failed: the records so far are kept in results/t" in result.stderr
    assert manifest(project)["status"] == "complete"


@pytest.mark.parametrize("args", [["--run-id", "t"], ["--resume", "results/t"]])
@pytest.mark.slow
def test_the_results_folder_stays_locked_until_its_report_is_written(
    project: Path, monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    from harness.report.document import write_report

    if args[0] == "--resume":
        assert CliRunner().invoke(main, ["run", "--run-id", "t", "--quiet"]).exit_code == 0
    holders = []

    def locked_report(directories: list[Path], reports: Path, *options: object) -> Path:
        holders.append(json.loads((directories[0] / ".lock").read_text() or "{}"))
        return write_report(directories, reports, *options)

    monkeypatch.setattr("harness.report.document.write_report", locked_report)
    assert CliRunner().invoke(main, ["run", "--quiet", *args]).exit_code == 0
    assert [h.get("pid") for h in holders] == [os.getpid()]


@pytest.mark.parametrize(("signum", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGHUP, 129)])
@pytest.mark.slow
def test_a_report_stopped_by_a_signal_exits_with_its_status_and_leaves_no_temporary_file(
    project: Path, monkeypatch: pytest.MonkeyPatch, signum: int, status: int
) -> None:
    assert CliRunner().invoke(main, ["run", "--run-id", "t", "--quiet", "--no-charts"]).exit_code == 0
    shutil.rmtree(project / "reports")

    def stopped(cmp: object, charts: object, drawn: bool, out: TextIO, pages: object = None) -> None:
        out.write("# Context-policy report: half of it")
        os.kill(os.getpid(), signum)  # Ctrl-C, `kill`, or the terminal closed, while the report is written
        time.sleep(5)

    monkeypatch.setattr("harness.report.document.compose", stopped)
    result = CliRunner().invoke(main, ["report", "results/t", "--no-charts"])
    assert result.exit_code == status and result.stderr == "\ninterrupted\n"  # not click's "Aborted!"
    assert [p.name for p in (project / "reports").iterdir()] == []  # no .t.md.tmp, no t.md
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # the handlers are given back
