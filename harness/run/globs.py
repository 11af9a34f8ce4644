"""A batch file's chronology globs (`chronologies/**/*.yaml`), expanded within bounds.

The syntax is the standard library's `glob` with `recursive=True`: `*`, `?` and `[...]` within
one name (a name starting with `.` only when the pattern's does), `**` as a whole name for any
number of folders below. The walk differs where a pattern could otherwise reach the whole disk:

- a recursive pattern (`**`) searches only below the batch file's folder or the folder the
  harness runs in (`/**/*.yaml` is refused, not walked);
- a glob never looks into `/proc`, `/sys` or `/dev` (however it gets there), and `**` does not
  follow a link to a folder (a link to a parent would have it walk forever);
- a glob looks at no more than `MAX_ENTRIES` directory entries and matches no more than
  `MAX_MATCHES` paths; past either it stops and says which.

Each refusal is a `GlobRefused` whose message names the bound and what to do.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path

from harness.base.errors import InputError

__all__ = ["MAX_ENTRIES", "MAX_MATCHES", "SPECIAL_FOLDERS", "GlobRefused", "expand_glob", "has_magic"]

MAX_ENTRIES = 100_000  # directory entries one glob looks at: a project's tree holds far fewer
MAX_MATCHES = 10_000  # paths one glob matches: each is a chronology to load
SPECIAL_FOLDERS = ("/proc", "/sys", "/dev")  # the kernel's and devices' trees: no chronology lives there

_MAGIC = re.compile(r"[*?[]")  # as the standard library's glob decides


class GlobRefused(InputError):
    """A glob that would search too far or too much; the message says which bound and what to do."""


def has_magic(pattern: str) -> bool:
    """Whether `pattern` is a glob rather than a path."""
    return _MAGIC.search(pattern) is not None


def expand_glob(pattern: str, roots: Sequence[Path]) -> list[str]:
    """The paths `pattern` matches, sorted; a recursive one only below one of `roots` (each a folder)."""
    parts = Path(pattern).parts
    first = next((i for i, part in enumerate(parts) if has_magic(part)), len(parts))
    base = os.path.join(*parts[:first]) if first else ""
    _check_base(pattern, base, parts[first:], roots)
    folders_only = pattern.endswith("/")  # `a/*/`: the folders that match, named with a slash
    found = _Walk(pattern).matches(base, parts[first:], folders_only)
    kept = (path for path in found if path and not _special(os.path.realpath(path)))  # not through a link either
    return sorted(os.path.join(path, "") if folders_only else path for path in kept)


def _check_base(pattern: str, base: str, rest: Sequence[str], roots: Sequence[Path]) -> None:
    real = os.path.realpath(base or ".")
    if _special(real):
        raise GlobRefused(f"{pattern}: a glob never looks into {', '.join(SPECIAL_FOLDERS)}; name chronology files")
    if "**" in rest and not any(_below(real, os.path.realpath(root)) for root in roots):
        shown = " or ".join(str(root) for root in roots)
        raise GlobRefused(
            f"{pattern}: a recursive glob (**) searches only below the batch file's folder or the folder "
            f"the harness runs in ({shown}); start it at a folder below them, or list the files in a .txt list"
        )


def _below(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _special(real: str) -> bool:
    return any(_below(real, folder) for folder in SPECIAL_FOLDERS)


class _Walk:
    """One expansion: the entries looked at and the paths matched so far, each within its bound."""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self.entries = 0
        self.found = 0

    def matches(self, base: str, rest: Sequence[str], folders_only: bool = False) -> Iterator[str]:
        """Paths below `base` matching the names `rest`, one name per folder level (folders only
        at every level but the last, and at the last too with `folders_only`)."""
        current = [base]
        for level, name in enumerate(rest):
            last = level == len(rest) - 1 and not folders_only
            current = [path for folder in current for path in self._level(folder, name, last)]
        for path in current:
            self.found += 1
            if self.found > MAX_MATCHES:
                raise GlobRefused(
                    f"{self.pattern}: matches more than {MAX_MATCHES:,} paths; narrow it, or split the batch"
                )
            yield path

    def _level(self, folder: str, name: str, last: bool) -> Iterator[str]:
        """What one name of the pattern matches in `folder`: folders only, unless it is the last."""
        if name == "**":
            yield from self._recursive(folder, last)
        elif not has_magic(name):
            path = os.path.join(folder, name)
            if os.path.lexists(path) if last else os.path.isdir(path):
                yield path
        else:
            for entry in self._scan(folder):
                if _matches(entry.name, name) and (last or _is_dir(entry, follow=True)):
                    yield os.path.join(folder, entry.name)

    def _recursive(self, folder: str, last: bool) -> Iterator[str]:
        """`**`: the folder itself and every folder below it, and every file too when it is the
        last name; hidden names left out, links to folders not followed (a link to a parent would
        never end). Depth first, on a stack: a deep tree needs no deep recursion."""
        if folder and not os.path.isdir(folder):
            return
        if folder or not last:
            yield os.path.join(folder, "") if last else folder
        stack = [folder]
        while stack:
            current = stack.pop()
            for entry in self._scan(current):
                if entry.name.startswith("."):
                    continue
                path = os.path.join(current, entry.name)
                if _is_dir(entry, follow=False):
                    stack.append(path)
                    yield path
                elif last:
                    yield path

    def _scan(self, folder: str) -> list[os.DirEntry[str]]:
        """The entries of `folder`, counted against `MAX_ENTRIES`; none for what is no readable
        folder, or a special one."""
        if _special(os.path.realpath(folder or ".")):
            return []
        try:
            with os.scandir(folder or ".") as scan:
                entries = []
                for entry in scan:
                    self.entries += 1
                    if self.entries > MAX_ENTRIES:
                        raise GlobRefused(
                            f"{self.pattern}: looked at more than {MAX_ENTRIES:,} directory entries; start it "
                            "at a folder closer to the files, or name them in a .txt list"
                        )
                    entries.append(entry)
                return entries
        except (NotADirectoryError, FileNotFoundError, PermissionError):
            return []


def _matches(name: str, pattern: str) -> bool:
    """One name against one name of the pattern, as glob matches it: hidden only when asked for."""
    if name.startswith(".") and not pattern.startswith("."):
        return False
    return fnmatch.fnmatchcase(name, pattern)


def _is_dir(entry: os.DirEntry[str], follow: bool) -> bool:
    try:
        return entry.is_dir(follow_symlinks=follow)
    except OSError:
        return False
