"""Where the harness may write a file a command makes for the user (a report, a comparison,
rejudged verdicts): one rule for every command.

- **Never inside a results folder.** A folder holding `manifest.json`, or any folder below one,
  is a run's: only `harness run` (and `--resume`, `merge`) writes there, and a file of another
  command put over one of its records loses the run. Refused even with `--force`; the path is
  judged where it really is (links resolved), so a link elsewhere that leads into a run is refused
  too.
- **Never over a file the harness did not write for this kind of output, unless `--force`.** A
  file already at the path is replaced only when `ours(path)` says the harness wrote it as this
  command's output (a report recognises its own first line); any other file (a chronology, a
  user's notes, another command's output) is refused, and `--force` replaces it. Without `ours`
  every existing file needs `--force`.

Nothing is written when a path is refused (exit status 2).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from harness.base.errors import InputError
from harness.base.text import visible

__all__ = ["check_output", "results_folder_of"]

MANIFEST = "manifest.json"  # what makes a folder a run's (harness.results.reader reads it first)


def results_folder_of(path: Path) -> Path | None:
    """The results folder `path` would lie in (the nearest folder above it holding the run's
    manifest), or None. `path` need not exist; links are resolved."""
    real = path.resolve()
    for folder in real.parents:
        if (folder / MANIFEST).is_file():
            return folder
    return None


def check_output(path: Path, option: str, force: bool, ours: Callable[[Path], bool] | None = None) -> None:
    """Refuse to write `path` (named by `option`, e.g. `--out`) unless the rule above allows it."""
    shown = visible(str(path))
    run = results_folder_of(path)
    if run is not None:
        raise InputError(
            f"{option} {shown}: it lies in the results folder {visible(str(run))}, which only `harness run` "
            "writes; give a path outside every results folder"
        )
    if not force and path.is_file() and not (ours is not None and ours(path)):
        what = "already exists" if ours is None else "already exists and was not written by the harness"
        raise InputError(f"{option} {shown} {what}; give another path, or replace it with --force")
