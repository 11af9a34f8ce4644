"""Where the harness may write a file a command makes for the user (a report, a comparison,
rejudged verdicts): one rule for every command.

- **Never inside a results folder, nor over one.** A folder holding `manifest.json`, or any
  folder below one, is a run's: only `harness run` (and `--resume`, `merge`) writes there, and a file of another
  command put over one of its records loses the run. Refused even with `--force`; the path is
  judged where it really is (links resolved), so a link elsewhere that leads into a run is refused
  too. A report's own folder (`<reports>/<run-id>`, its charts and pages) is judged the same way:
  `--reports results` would make it the run's folder itself.
- **Never over a folder or a special file.** A path naming a folder, a device or a named pipe is
  not a file to write; it is refused as such (never with advice to remove it: the user's folder
  or `/dev/null` is no leftover).
- **Never over a file the harness did not write for this kind of output, unless `--force`.** A
  file already at the path is replaced only when `ours(path)` says the harness wrote it as this
  command's output (a report recognises its own first line); any other file (a chronology, a
  user's notes, another command's output) is refused, and `--force` replaces it. Without `ours`
  every existing file needs `--force`.

Nothing is written when a path is refused (exit status 2). A path checked free when the command
started is written with `write_output`, which never replaces a file that appeared there meanwhile
(two rejudges into one `--out`: the second to finish replaced the first's verdicts).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from harness.base.errors import InputError
from harness.base.files import FileRefused, kind_of_mode, read_own_file, write_atomic, write_new
from harness.base.text import visible

__all__ = ["check_output", "check_outside_runs", "results_folder_of", "starts_as", "write_output"]

MANIFEST = "manifest.json"  # what makes a folder a run's (harness.results.reader reads it first)


def results_folder_of(path: Path) -> Path | None:
    """The results folder `path` is or would lie in (`path` itself, or the nearest folder above
    it, holding the run's manifest), or None. `path` need not exist; links are resolved."""
    real = path.resolve()
    for folder in (real, *real.parents):
        try:
            if (folder / MANIFEST).is_file():
                return folder
        except OSError:  # a name too long (ENAMETOOLONG), a folder this user cannot search: no run there
            continue
    return None


REPLACE = "give another path, or replace it with --force"


def check_outside_runs(path: Path, option: str) -> None:
    """Refuse `path` (a file or a folder a command would write) when it is a results folder or lies
    in one, whatever `--force` says."""
    run = results_folder_of(path)
    if run is not None:
        raise InputError(
            f"{option} {visible(str(path))}: it lies in the results folder {visible(str(run))}, which only "
            "`harness run` writes; give a path outside every results folder"
        )


def check_output(
    path: Path, option: str, force: bool, ours: Callable[[Path], bool] | None = None, remedy: str = REPLACE
) -> None:
    """Refuse to write `path` (named by `option`, e.g. `--out`) unless the rule above allows it;
    `remedy` ends the refusal of an existing file (what to do instead)."""
    shown = visible(str(path))
    check_outside_runs(path, option)
    if path.exists() and not path.is_symlink() and not path.is_file():
        raise InputError(
            f"{option} {shown}: {kind_of_mode(path.stat().st_mode)}, not a file; give the path of the file to write"
        )
    # a link is left to the writer, which refuses to write through one (harness.base.files)
    if not force and path.is_file() and not path.is_symlink() and not (ours is not None and ours(path)):
        what = "already exists" if ours is None else "already exists and was not written by the harness"
        raise InputError(f"{option} {shown} {what}; {remedy}")


HEAD_BYTES = 64 * 1024  # how much of an existing file `starts_as` reads: its first lines, never the whole


def starts_as(path: Path, head: str) -> bool:
    """Whether the file at `path` starts with `head` (the harness's own first line(s) of this kind
    of output, e.g. a report's title): how a command knows the file there is its own earlier output.
    A link or anything but a regular file is never the harness's."""
    try:
        found = read_own_file(path, max(HEAD_BYTES, len(head.encode("utf-8"))))
    except (FileRefused, OSError):
        return False
    return found.decode("utf-8", errors="replace").startswith(head)


def write_output(path: Path, data: str | bytes, option: str, force: bool) -> None:
    """Write the output `check_output` allowed (without `ours`) when the command started: with
    `force`, replacing what is there; without it, only where nothing is yet, so a file another
    command wrote there meanwhile is refused (exit 2), not replaced."""
    if force:
        write_atomic(path, data)
        return
    try:
        write_new(path, data)
    except FileExistsError:
        raise InputError(
            f"{option} {visible(str(path))}: a file appeared there while this command ran (another command "
            f"writing the same path); nothing was written over it: {REPLACE}"
        ) from None
