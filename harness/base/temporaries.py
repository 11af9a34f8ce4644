"""Temporaries: the files and folders a command writes before renaming them into place, named so
that a later command can tell them from the user's files, and clean up after a command killed
mid-write.

Every temporary the harness makes inside a folder it writes (a file written whole, beside its
target; an import's staging folder; a report's staged item pages) is named
`.harness-tmp-<pid>-<16 hex digits>.<what>`: the common prefix says it is the harness's, the
process id says whose, the random digits make the name unguessable (a link planted at a
predictable name is never written through). A command ended normally removes its own; a command
killed mid-write (SIGKILL, a power cut) cannot. The next command that owns the folder (`report`
for the reports folder and a report's own folder, `import` for `--out`, `run --resume` for the
results folder) calls `sweep`, which removes a temporary whose process is gone, or which has not
changed for `STALE_AFTER` (a process id can be reused by an unrelated process), and says so. A
temporary of a process still running, recently changed, is another command's work in progress:
it is never touched.
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import shutil
import stat
import time
from pathlib import Path

from harness.base.text import visible

__all__ = ["PREFIX", "STALE_AFTER", "is_temporary", "sweep", "temporary_folder", "temporary_stem"]

PREFIX = ".harness-tmp-"
# A temporary lives as long as the command that writes it: milliseconds for a file written whole,
# the length of an import or a report for a staging folder (changed as each item is staged).
# One unchanged for a day is left behind, even if a process of that id runs (a reused id).
STALE_AFTER = 24 * 60 * 60.0  # seconds
SHOWN = 5  # temporaries named one by one in the notes; the rest are counted
_NAME = re.compile(rf"{re.escape(PREFIX)}([0-9]{{1,10}})-[0-9a-f]{{16}}\.")
_DRAWS = 100  # names tried before giving up (each one already taken is a planted name)


def temporary_stem(pid: int | None = None) -> str:
    """`.harness-tmp-<pid>-<hex>`: the start of a fresh temporary's name (this process's by default)."""
    return f"{PREFIX}{os.getpid() if pid is None else pid}-{secrets.token_hex(8)}"


def is_temporary(name: str) -> bool:
    """Whether `name` is a temporary's name of the harness's."""
    return _NAME.match(name) is not None


def temporary_folder(parent: Path, what: str) -> Path:
    """A new empty folder `parent/.harness-tmp-<pid>-<hex>.<what>` (mode 0700, as `mkdtemp` makes
    it), never an existing one nor through a link planted at its name."""
    for _ in range(_DRAWS):
        folder = parent / f"{temporary_stem()}.{what}"
        try:
            folder.mkdir(mode=0o700)
            return folder
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, f"no free temporary name after {_DRAWS} tries", str(parent))


def sweep(folder: Path, now: float | None = None) -> list[str]:
    """Remove the temporaries in `folder` that no running command owns (see the module's
    docstring); return the notes that say what was removed (none when nothing was). A folder
    that is missing, or is not a folder, holds none."""
    now = time.time() if now is None else now
    try:
        entries = list(os.scandir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return []
    removed: list[tuple[str, int]] = []
    for entry in entries:
        found = _NAME.match(entry.name)
        if found is None:
            continue
        pid = int(found[1])
        try:
            changed = entry.stat(follow_symlinks=False).st_mtime
        except FileNotFoundError:
            continue  # removed meanwhile (its command finished, or another sweep)
        if _running(pid) and now - changed < STALE_AFTER:
            continue  # another command's work in progress
        if _remove(entry):
            removed.append((entry.name, pid))
    return _notes(folder, removed)


def _running(pid: int) -> bool:
    """Whether a process of id `pid` exists (this one included; another user's counts too)."""
    if pid <= 0:  # kill(0) and kill(-1) would ask about a group: never a temporary's owner
        return False
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)  # signal 0: sent nowhere, only checked
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # a process of another user
    return True


def _remove(entry: os.DirEntry[str]) -> bool:
    """Remove a temporary: a folder with what is in it, anything else by its name (a link planted
    there is removed, never followed). False when it could not be removed."""
    try:
        if stat.S_ISDIR(entry.stat(follow_symlinks=False).st_mode):
            shutil.rmtree(entry.path)  # never follows a link inside
        else:
            os.unlink(entry.path)
    except FileNotFoundError:
        return False  # another sweep got there first
    except OSError:
        return False  # not ours to remove after all (another user's folder, say): left as it is
    return True


def _notes(folder: Path, removed: list[tuple[str, int]]) -> list[str]:
    if not removed:
        return []
    removed.sort()
    shown = ", ".join(f"{visible(name[:80])} (process {pid})" for name, pid in removed[:SHOWN])
    more = f" and {len(removed) - SHOWN} more" if len(removed) > SHOWN else ""
    count = "a temporary" if len(removed) == 1 else f"{len(removed)} temporaries"
    return [
        f"note: {visible(str(folder))}: removed {count} left by a harness command that stopped mid-write "
        f"(its process is no longer running, or the temporary was unchanged for a day): {shown}{more}"
    ]
