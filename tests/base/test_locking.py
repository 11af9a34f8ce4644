"""A run folder's lock names its holder, even when asked in the instant before the holder has
written its name (a named holder refused to another thread: tests/results/test_rundir.py)."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import threading
from pathlib import Path

import pytest

from harness.base.errors import InputError, RunInUse
from harness.base.locking import LOCK_FILE, RunLock, holder_record


def hold_unnamed(directory: Path) -> int:
    """A lock taken the way RunLock takes it, stopped before it writes its holder's name."""
    fd = os.open(directory / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.ftruncate(fd, 0)
    return fd


def test_a_holder_that_names_itself_a_moment_later_is_named(tmp_path: Path) -> None:
    fd = hold_unnamed(tmp_path)
    naming = threading.Timer(0.2, lambda: os.pwrite(fd, json.dumps(holder_record("run")).encode(), 0))
    naming.start()
    try:
        with pytest.raises(RunInUse, match=f"in use by process {os.getpid()} .*harness run since"):
            RunLock(tmp_path, "resume").__enter__()
    finally:
        naming.join()
        os.close(fd)


@pytest.mark.slow  # waits a second for the holder to name itself
def test_a_holder_that_never_names_itself_is_another_harness_process(tmp_path: Path) -> None:
    fd = hold_unnamed(tmp_path)
    try:
        with pytest.raises(RunInUse, match="in use by another harness process; wait for it to end"):
            RunLock(tmp_path, "resume").__enter__()
    finally:
        os.close(fd)


HELD: list[RunLock] = []  # the parent's lock, as a forked worker inherits it


def in_a_forked_worker(directory: str) -> tuple[list[str], str, str]:
    """In a worker of `forked_pool`: the lock files it has open, what locking the directory
    again gives, and what the lock file says after it lets go of its copy of the parent's lock."""
    opened = []
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(FileNotFoundError):  # the listing's own descriptor, closed since
            opened.append(os.readlink(f"/proc/self/fd/{fd}"))
    try:
        with RunLock(Path(directory), "worker"):
            again = "held"
    except RunInUse:
        again = "refused"
    HELD[0].__exit__(None, None, None)  # the parent's `with` unwinding in the worker: not its lock to release
    return [path for path in opened if path.endswith(LOCK_FILE)], again, (Path(directory) / LOCK_FILE).read_text()


@pytest.mark.slow  # a forked worker
@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="reads /proc")
def test_a_forked_worker_neither_holds_nor_releases_the_parents_lock(tmp_path: Path) -> None:
    from harness.base.forking import forked_pool

    with RunLock(tmp_path, "run") as lock, forked_pool(1) as pool:
        HELD[:] = [lock]
        try:
            opened, again, named = pool.submit(in_a_forked_worker, str(tmp_path)).result(timeout=60)
        finally:
            HELD.clear()
        assert opened == []  # its copy was closed at the fork: a worker outliving us keeps nothing locked
        assert again == "refused"  # the parent's lock is not the worker's to re-enter
        assert f'"pid": {os.getpid()}' in named  # it did not unlock or empty it
        refused = []
        other = threading.Thread(target=lambda: refused.extend(attempt(tmp_path)))
        other.start()
        other.join()
        assert refused == ["refused"]  # still held here


def attempt(directory: Path) -> list[str]:
    try:
        with RunLock(directory, "check"):
            return ["held"]
    except RunInUse:
        return ["refused"]


def test_a_lock_file_planted_as_a_symlink_is_refused_and_its_target_left_whole(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / LOCK_FILE).symlink_to(victim)
    with pytest.raises(InputError, match=r"\.lock: a symbolic link, where the harness keeps a file of its own"):
        RunLock(tmp_path / "run", "resume").__enter__()
    assert victim.read_text() == "precious\n"


def test_a_lock_file_that_is_a_fifo_is_refused_with_one_line(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / LOCK_FILE)
    with pytest.raises(InputError, match=r"\.lock: a named pipe \(FIFO\), where the harness keeps a file") as refused:
        RunLock(tmp_path, "resume").__enter__()
    assert refused.value.exit_code == 2 and "\n" not in str(refused.value)


@pytest.mark.parametrize("refusal", ["changed", "swapped", "elsewhere"])
@pytest.mark.slow
def test_a_refused_resume_leaves_the_folder_as_it_found_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, refusal: str
) -> None:
    from click.testing import CliRunner

    from harness.cli.commands import main
    from tests.paths import SHIPPED

    project = tmp_path / "project"
    (project / "chronologies").mkdir(parents=True)
    for name in ("memory-drift.yaml", "two-sessions.yaml"):
        (project / "chronologies" / name).write_bytes((SHIPPED / name).read_bytes())
    monkeypatch.chdir(project)
    assert CliRunner().invoke(main, ["run", "--run-id", "r", "--quiet", "--no-charts"]).exit_code == 0
    run = project / "results" / "r"
    manifest = json.loads((run / "manifest.json").read_text())
    (run / "manifest.json").write_text(json.dumps({**manifest, "status": "interrupted"}))
    (run / LOCK_FILE).unlink()  # as copied without its dot files, or checked out from version control
    drift, sessions = (project / "chronologies" / n for n in ("memory-drift.yaml", "two-sessions.yaml"))
    if refusal == "changed":
        drift.write_text(drift.read_text() + "# edited\n")
    elif refusal == "swapped":
        text = drift.read_bytes()
        drift.write_bytes(sessions.read_bytes())
        sessions.write_bytes(text)
    else:
        monkeypatch.chdir(tmp_path)
    folder = run if refusal != "elsewhere" else Path("project/results/r")
    before = sorted(p.name for p in run.iterdir())
    result = CliRunner().invoke(main, ["run", "--resume", str(folder), "--quiet"])
    assert result.exit_code == 2 and "--resume" in result.stderr, result.output
    assert sorted(p.name for p in run.iterdir()) == before and LOCK_FILE not in before


def test_a_lock_file_replaced_between_open_and_lock_is_locked_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real, replaced = fcntl.flock, []

    def flock(fd: int, operation: int) -> None:
        if not replaced:  # a refused process removes the file it made; another makes a new one
            replaced.append(fd)
            (tmp_path / LOCK_FILE).unlink()
            (tmp_path / LOCK_FILE).write_text("")
        real(fd, operation)

    (tmp_path / LOCK_FILE).write_text("")
    monkeypatch.setattr(fcntl, "flock", flock)
    with RunLock(tmp_path, "resume") as held:
        assert held._fd is not None and os.fstat(held._fd).st_ino == os.stat(tmp_path / LOCK_FILE).st_ino
        assert json.loads((tmp_path / LOCK_FILE).read_text())["purpose"] == "resume"
