"""Run ids and the results directory a new run claims.

A run id is one safe path segment: it names `results/<run-id>/` and the report's files, so the
names of the reports folder's own files (`index`, `README`, in any case) are refused. The
directory is claimed with one `mkdir`, which the file system makes atomic: of two processes
claiming the same id, exactly one succeeds. A default id adds random hex digits to the UTC time,
so runs started in the same second claim different directories.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path

from harness.base.errors import InputError
from harness.base.locking import LOCK_FILE
from harness.base.text import path_shown
from harness.results.writer import FILES, MAX_RUN_ID, RUN_ID

__all__ = ["MAX_RUN_ID", "RESERVED_IDS", "check_run_id", "claim", "claimed", "default_run_id", "reserved"]

# A run's report is `<reports>/<run-id>.md`: these ids would name the reports folder's index (which
# the index then overwrites) or its README. Compared case-folded: some file systems ignore case.
RESERVED_IDS = ("index", "readme")


def reserved(run_id: str) -> bool:
    """Whether `run_id` would name one of the reports folder's own files."""
    return run_id.casefold() in RESERVED_IDS


def check_run_id(run_id: str) -> None:
    """Refuse an id that is not one safe path segment (no separator, no newline, not too long)."""
    if len(run_id) > MAX_RUN_ID:
        raise InputError(f"--run-id {run_id[:20]!r}... is {len(run_id)} characters; use at most {MAX_RUN_ID}")
    if not RUN_ID.fullmatch(run_id):
        raise InputError(
            f"--run-id {run_id!r}: start with a letter or digit, then use letters, digits, '.', '_' and '-' only"
        )
    if reserved(run_id):
        raise InputError(
            f"--run-id {run_id!r} is reserved: its report would be the reports folder's own {run_id}.md; choose another id"
        )


def default_run_id() -> str:
    """The UTC time to the second, then random hex digits: `20261203-081112-3f9a`."""
    return f"{datetime.now(UTC):%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"


def claim(out: Path, run_id: str | None) -> tuple[str, Path]:
    """Create `out/<run-id>/` (a new default id when None); an existing one is never reused."""
    if run_id is not None:
        check_run_id(run_id)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(
            f"--out {path_shown(out)}: cannot create the results folder ({exc.strerror}); give a folder you can write to"
        ) from None
    while True:
        chosen = run_id or default_run_id()
        directory = out / chosen
        try:
            os.mkdir(directory)
            return chosen, directory
        except FileExistsError:
            if run_id is not None:
                raise InputError(
                    f"{directory} already exists; choose another --run-id, or "
                    f"`harness run --resume {directory}` to finish it"
                ) from None
        except OSError as exc:
            raise InputError(
                f"--out {path_shown(out)}: cannot create {path_shown(directory)} ({exc.strerror}); give a folder you can write to"
            ) from None


@contextmanager
def claimed(out: Path, run_id: str | None) -> Iterator[tuple[str, Path]]:
    """`claim`, and give the directory back when the run fails before its manifest exists:
    bad input found late (a model that cannot open) leaves nothing behind."""
    chosen, directory = claim(out, run_id)
    try:
        yield chosen, directory
    except BaseException:
        if not (directory / "manifest.json").exists():
            for name in (LOCK_FILE, *FILES):
                (directory / name).unlink(missing_ok=True)
            with suppress(OSError):  # something else is in it: leave it to the user
                directory.rmdir()
        raise
