"""Temporaries: named with the harness's prefix and their process, removed by the next command
that owns the folder once their process is gone (a kill mid-write), never while it runs."""

from __future__ import annotations

import os
import time
from pathlib import Path

from harness.base.files import replacing, temporary_name
from harness.base.temporaries import STALE_AFTER, is_temporary, sweep, temporary_folder, temporary_stem

GONE = 2**22 + 1  # above Linux's largest pid_max: no process ever has this id


def left_by(pid: int, folder: Path, what: str = "manifest.json.tmp") -> Path:
    """A temporary as a command of process `pid` killed mid-write leaves it."""
    path = folder / f"{temporary_stem(pid)}.{what}"
    path.write_text("half a manifest")
    return path


def test_every_temporary_names_the_harness_and_its_process(tmp_path: Path) -> None:
    assert is_temporary(temporary_name(tmp_path / "manifest.json").name)
    assert temporary_name(tmp_path / "manifest.json").name.startswith(f".harness-tmp-{os.getpid()}-")
    staged = temporary_folder(tmp_path, "import")
    assert staged.is_dir() and staged.name.startswith(f".harness-tmp-{os.getpid()}-") and is_temporary(staged.name)
    assert not is_temporary(".harness-cache") and not is_temporary(".manifest.json.tmp")


def test_a_temporary_whose_process_is_gone_is_removed_and_said(tmp_path: Path) -> None:
    left = left_by(GONE, tmp_path)
    staged = tmp_path / f"{temporary_stem(GONE)}.import"
    staged.mkdir()
    (staged / "a.yaml").write_text("turns: []\n")
    (tmp_path / "mine.yaml").write_text("the user's\n")
    notes = sweep(tmp_path)
    assert not left.exists() and not staged.exists()
    assert os.listdir(tmp_path) == ["mine.yaml"]
    assert len(notes) == 1 and notes[0].startswith(f"note: {tmp_path}: removed 2 temporaries left by a harness")
    assert f"(process {GONE})" in notes[0]
    assert sweep(tmp_path) == []  # nothing left to say


def test_a_running_commands_temporary_is_left_alone(tmp_path: Path) -> None:
    mine = left_by(os.getpid(), tmp_path)  # this process: a command writing now
    parents = left_by(os.getppid(), tmp_path, "report.md.tmp")  # another running process
    assert sweep(tmp_path) == []
    assert mine.read_text() == parents.read_text() == "half a manifest"


def test_a_temporary_unchanged_for_a_day_is_removed_even_if_its_process_id_runs(tmp_path: Path) -> None:
    old = left_by(os.getppid(), tmp_path)  # the id may be another process's by now
    then = time.time() - STALE_AFTER - 60
    os.utime(old, (then, then))
    assert len(sweep(tmp_path)) == 1 and not old.exists()


def test_a_link_named_as_a_temporary_is_removed_and_its_target_left_whole(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep").write_text("the user's\n")
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / f"{temporary_stem(GONE)}.import").symlink_to(victim)
    assert len(sweep(folder)) == 1
    assert os.listdir(folder) == [] and (victim / "keep").read_text() == "the user's\n"


def test_many_temporaries_are_said_in_one_line(tmp_path: Path) -> None:
    for _ in range(12):
        left_by(GONE, tmp_path)
    (note,) = sweep(tmp_path)
    assert "removed 12 temporaries" in note and note.endswith("and 7 more") and "\n" not in note


def test_a_missing_folder_holds_no_temporary(tmp_path: Path) -> None:
    assert sweep(tmp_path / "nowhere") == []


def test_a_write_that_ends_leaves_no_temporary(tmp_path: Path) -> None:
    with replacing(tmp_path / "manifest.json") as handle:
        (written,) = [p for p in tmp_path.iterdir() if is_temporary(p.name)]  # named while it is written
        handle.write("{}")
    assert os.listdir(tmp_path) == ["manifest.json"] and not written.exists()
