"""Links and special files planted where the harness writes its own files: each is refused with
one line and exit status 2 (or passed over, for a temporary), and nothing outside the folders a
user named is read, truncated or overwritten."""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from harness.cli.commands import main
from tests.paths import SHIPPED
from tests.scripted import ScriptedModel

SECRET = "alice:$6$not-for-your-eyes:19000:0:99999:7:::\n"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "chronologies").mkdir()
    shutil.copy(SHIPPED / "memory-drift.yaml", tmp_path / "chronologies")
    (tmp_path / "victim").write_text(SECRET)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def harness(*args: str) -> Result:
    return CliRunner().invoke(main, [*args])


def refused(result: Result, says: str) -> None:
    assert result.exit_code == 2, result.output
    assert result.stderr.count("\n") == 1 and says in result.stderr  # one line, naming what was refused


def failed_run(project: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """results/t: a run stopped by a fault after a few calls, to be resumed."""
    disk_full = OSError(errno.ENOSPC, "No space left on device", "results/t/calls.jsonl")
    model = ScriptedModel(fails=disk_full, from_call=4)
    with monkeypatch.context() as patched:
        patched.setattr("harness.models.catalog.model_factory", lambda options, seed: lambda name, stack: model)
        assert harness("run", "--run-id", "t", "--quiet", "--no-charts").exit_code == 1
    return project / "results" / "t"


@pytest.mark.slow
def test_a_lock_planted_as_a_link_is_refused_and_its_target_not_truncated(project: Path) -> None:
    assert harness("run", "--run-id", "t", "--quiet", "--no-charts").exit_code == 0
    (project / "results/t/.lock").unlink()
    (project / "results/t/.lock").symlink_to(project / "victim")
    refused(harness("run", "--resume", "results/t", "--quiet"), "results/t/.lock: a symbolic link, where the harness")
    assert (project / "victim").read_text() == SECRET


@pytest.mark.slow
def test_a_lock_that_is_a_fifo_is_refused_with_one_line_and_exit_2(project: Path) -> None:
    assert harness("run", "--run-id", "t", "--quiet", "--no-charts").exit_code == 0
    (project / "results/t/.lock").unlink()
    os.mkfifo(project / "results/t/.lock")
    refused(harness("run", "--resume", "results/t", "--quiet"), "results/t/.lock: a named pipe (FIFO), where")


@pytest.mark.slow
def test_a_link_planted_at_the_manifests_old_temporary_name_is_not_followed(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = failed_run(project, monkeypatch)
    (run / ".manifest.json.tmp").symlink_to(project / "victim")
    assert harness("run", "--resume", "results/t", "--quiet", "--no-charts").exit_code == 0
    assert (project / "victim").read_text() == SECRET
    assert (run / ".manifest.json.tmp").is_symlink()  # left as it was, beside a manifest written in full
    assert not (run / "manifest.json").is_symlink()


@pytest.mark.parametrize("name", ["calls.jsonl", "turns.csv", "manifest.json"])
def test_a_results_file_planted_as_a_link_is_refused_by_resume_and_report(
    project: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    run = failed_run(project, monkeypatch)
    shutil.copy(run / name, project / "victim")  # a copy that reads as the real thing
    kept = (project / "victim").read_bytes()
    (run / name).unlink()
    (run / name).symlink_to(project / "victim")
    refused(harness("run", "--resume", "results/t", "--quiet"), f"results/t/{name}: a symbolic link, where")
    refused(harness("report", "results/t"), f"results/t/{name}: a symbolic link, where")
    assert (project / "victim").read_bytes() == kept


PLANTED: dict[str, Callable[[Path, Path], None]] = {
    "the report": lambda reports, victim: (reports / "t.md").symlink_to(victim),
    "the report's old temporary": lambda reports, victim: (reports / ".t.md.tmp").symlink_to(victim),
    "index.md": lambda reports, victim: (reports / "index.md").symlink_to(victim),
    "a chart": lambda reports, victim: (
        (reports / "t").mkdir() or (reports / "t" / "survival-by-age.png").symlink_to(victim)
    ),
    "the charts folder": lambda reports, victim: (reports / "t").symlink_to(victim.parent / "elsewhere"),
}


@pytest.mark.parametrize("where", list(PLANTED))
@pytest.mark.slow
def test_a_link_planted_in_the_reports_folder_is_never_written_through(project: Path, where: str) -> None:
    assert harness("run", "--run-id", "t", "--quiet", "--no-charts").exit_code == 0
    (project / "elsewhere").mkdir()
    (project / "elsewhere" / "survival-by-age.png").write_text(SECRET)
    reports = project / "reports"
    shutil.rmtree(reports)
    reports.mkdir()
    PLANTED[where](reports, project / "victim")
    result = harness("report", "results/t", "--reports", "reports")
    if where in ("the report's old temporary",):
        assert result.exit_code == 0, result.output  # a temporary's name is drawn afresh: the link is passed over
    else:
        refused(result, "a symbolic link, where the harness keeps a")
    assert (project / "victim").read_text() == SECRET
    assert (project / "elsewhere" / "survival-by-age.png").read_text() == SECRET
    assert os.listdir(project / "elsewhere") == ["survival-by-age.png"]


@pytest.mark.slow
def test_a_report_beside_it_that_links_to_a_system_file_is_not_copied_into_the_index(project: Path) -> None:
    assert harness("run", "--run-id", "t", "--quiet", "--no-charts").exit_code == 0
    (project / "victim").write_text("# Context-policy report: x\n\nSECRET-LINE\n")
    (project / "reports" / "other.md").symlink_to(project / "victim")
    assert harness("report", "results/t", "--no-charts").exit_code == 0
    index = (project / "reports" / "index.md").read_text()
    assert "SECRET-LINE" not in index and "[other](other.md) | not a harness report" in index


@pytest.mark.slow
def test_a_markdown_fifo_beside_the_reports_is_listed_without_being_waited_on(project: Path) -> None:
    assert harness("run", "--run-id", "t", "--quiet", "--no-charts").exit_code == 0
    os.mkfifo(project / "reports" / "pipe.md")
    with ThreadPoolExecutor(1) as pool:
        reporting = pool.submit(harness, "report", "results/t", "--no-charts")
        try:
            result = reporting.result(timeout=60)
        except TimeoutError:
            os.close(os.open(project / "reports" / "pipe.md", os.O_WRONLY | os.O_NONBLOCK))  # the writer it waits for
            raise AssertionError("the index waited on a FIFO") from None
    assert result.exit_code == 0, result.output
    assert "[pipe](pipe.md) | not a harness report" in (project / "reports" / "index.md").read_text()


@pytest.mark.slow
def test_the_folders_a_user_names_may_be_links(project: Path) -> None:
    """A results or reports folder on another disk, linked from here: followed, as named."""
    (project / "disk" / "results").mkdir(parents=True)
    (project / "disk" / "reports").mkdir()
    (project / "results").symlink_to(project / "disk" / "results")
    (project / "reports").symlink_to(project / "disk" / "reports")
    assert harness("run", "--run-id", "t", "--quiet").exit_code == 0
    assert (project / "disk" / "results" / "t" / "manifest.json").is_file()
    (project / "linked-run").symlink_to(project / "disk" / "results" / "t")
    result = harness("run", "--resume", "linked-run", "--quiet", "--reports", "reports")
    assert result.exit_code == 0, result.output
    assert (project / "disk" / "reports" / "t.md").is_file() and (project / "disk" / "reports" / "t").is_dir()
