"""Folders the user names for output (`--out`, `--reports`, `--cache-dir`), checked before
anything is written: a run that cannot write its report must not start, and none is written into
a results folder (harness.results.outputs: only `harness run` writes there)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from harness.base.errors import InputError
from harness.base.text import path_shown
from harness.results.outputs import check_outside_runs


def check_writable_folder(path: Path, option: str) -> None:
    """Refuse a path that is a results folder or lies in one, is a file, lies under a file, or
    where this process cannot create files. Creates nothing: a missing folder is judged by the
    nearest folder above it."""
    check_outside_runs(path, option)  # `--out results/r` would nest a run (or a cache) in a run
    existing = nearest_existing(path)
    if not existing.is_dir():
        what = "is a file" if existing == path else f"lies under {existing}, which is a file"
        raise InputError(f"{option} {path}: {what}, not a folder; give a folder (it is created when missing)")
    try:
        with tempfile.TemporaryFile(dir=existing):  # the only sure test: root ignores modes, a read-only mount does not
            pass
    except OSError as exc:
        raise InputError(
            f"{option} {path_shown(path)}: cannot write in {path_shown(existing)} ({exc.strerror}); "
            "give a folder you can write to"
        ) from None


def nearest_existing(path: Path) -> Path:
    """`path`, or the nearest of its parents that exists."""
    for candidate in (path, *path.parents):
        if candidate.exists() or candidate.is_symlink():
            return candidate
    return Path.cwd()
