"""Run ids and results directories: one safe path segment, claimed once, held by one process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from harness.base.errors import InputError, RunInUse
from harness.base.locking import RunLock
from harness.results.rundir import MAX_RUN_ID, check_run_id, claim, default_run_id


@pytest.mark.parametrize("run_id", ["t", "2026-12-03.a_b", "a" * MAX_RUN_ID, default_run_id()])
def test_a_safe_run_id_is_accepted(run_id: str) -> None:
    check_run_id(run_id)


@pytest.mark.parametrize(
    "run_id", ["abc\n", "abc\r", "../escape", "a/b", ".hidden", "-x", "", "é", "a b", "a" * (MAX_RUN_ID + 1), "a" * 300]
)
def test_a_run_id_that_is_not_one_safe_path_segment_is_refused(run_id: str) -> None:
    with pytest.raises(InputError, match="--run-id"):
        check_run_id(run_id)


def test_default_ids_claimed_in_the_same_second_differ(tmp_path: Path) -> None:
    ids = {claim(tmp_path, None)[0] for _ in range(20)}
    assert len(ids) == 20 and all(i[:8].isdigit() for i in ids)


def test_an_explicit_id_is_claimed_once(tmp_path: Path) -> None:
    assert claim(tmp_path, "x") == ("x", tmp_path / "x")
    with pytest.raises(InputError, match="already exists"):
        claim(tmp_path, "x")


def test_a_claim_refuses_an_out_that_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(InputError, match="--out"):
        claim(tmp_path / "file", "x")


def test_another_thread_is_refused_the_lock_and_told_the_holder(tmp_path: Path) -> None:
    refused: list[BaseException] = []

    def other() -> None:
        try:
            with RunLock(tmp_path, "resume"):
                pass
        except RunInUse as exc:
            refused.append(exc)

    with RunLock(tmp_path, "run"):
        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
    assert len(refused) == 1 and f"in use by process {os.getpid()} (harness run since " in str(refused[0])
    with RunLock(tmp_path, "resume"):  # released: free again
        pass


def test_the_holding_thread_may_lock_again_and_holds_until_the_outer_release(tmp_path: Path) -> None:
    with RunLock(tmp_path, "run"):
        with RunLock(tmp_path, "run"):
            pass
        assert json.loads((tmp_path / ".lock").read_text())["pid"] == os.getpid()  # still held
    assert (tmp_path / ".lock").read_text() == ""


@pytest.mark.slow  # another process holds the lock
def test_a_lock_held_by_another_process_is_refused_until_it_ends(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
        import sys, time
        from pathlib import Path
        from harness.base.locking import RunLock
        with RunLock(Path({str(tmp_path)!r}), "resume"):
            print("held", flush=True)
            sys.stdin.readline()
        """),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with pytest.raises(RunInUse, match=rf"in use by process {holder.pid} \(harness resume since "):
            RunLock(tmp_path, "run").__enter__()
    finally:
        holder.communicate("\n", timeout=10)
    with RunLock(tmp_path, "run"):
        pass


@pytest.mark.parametrize("run_id", ["index", "README", "Index", "readme"])
def test_an_id_naming_the_reports_folders_own_files_is_refused(run_id: str) -> None:
    with pytest.raises(
        InputError, match=rf"--run-id '{run_id}' is reserved: its report would be the reports folder's own"
    ):
        check_run_id(run_id)
