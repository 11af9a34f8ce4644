"""Files: reading a user's input within limits, and writing the harness's own files safely.

Reading. `open()` on a FIFO named `x.yaml` waits for a writer that may never come, and
`/dev/zero` never ends; so an input file is opened without blocking, checked to be a regular
file before a byte is read, and read up to one byte past the limit, never further.

Writing. What a user names is followed: an input file may be a link to a regular file, and the
folders given to `--out`, `--reports`, `--cache-dir` and `--resume` may be links (a results
folder on another disk). What the harness creates inside those folders never is: the lock, the
results files and the manifest, reports, charts and their folder, `index.md`, the response
cache. Each is opened with `O_NOFOLLOW`, without blocking, and checked to be a regular file
with no other name (a hard link) before a byte is written; a link, a FIFO, a device, a socket
or a folder in its place is refused (`UnsafeFile`: one line, exit status 2) and left as it is.
What the harness reads back as its own (results files, the manifest, the response cache) is held
to the same rule: a hard link there is another file of the user's (`/etc/passwd`, another run's
`calls.jsonl`), which a resume or the cache would write through, or a report present as this run's.
A file replaced whole (the manifest, a report, a chart, the index, a rewritten record file) is
written to a temporary file in the same folder, under a name drawn at random (and naming this
process: `harness.base.temporaries`, which cleans up after a kill) and created with
`O_EXCL | O_NOFOLLOW` (as `tempfile.mkstemp` does, but with the mode a plain `open` gives:
mkstemp's 0600 would hide results from a group that shares them), then renamed over it; a
rename replaces a name and never follows one.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from harness.base.errors import InputError
from harness.base.temporaries import temporary_stem

__all__ = [
    "MAX_FILE_BYTES",
    "FileRefused",
    "UnsafeFile",
    "append_to",
    "check_own_file",
    "create_new",
    "open_lock",
    "own_folder",
    "read_own_file",
    "read_regular_chunks",
    "read_regular_file",
    "replacing",
    "temporary_name",
    "write_atomic",
    "write_new",
]

MAX_FILE_BYTES = 1024 * 1024  # 1 MiB: about 50 times the 201-turn long-conversation chronology

_KINDS = (
    (stat.S_ISLNK, "a symbolic link"),
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
# O_NONBLOCK: opening a FIFO returns at once (or fails) instead of waiting for its other end.
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_NOFOLLOW = os.O_NOFOLLOW
_MODE = 0o666  # as `open()` creates a file: the umask decides
HARD_LINK = "a file that has another name (a hard link)"
TARGET_CHARS = 100  # of the target's name in its temporary's: the whole stays within a file name's 255 bytes
_DRAWS = 100  # temporary names tried before giving up (each one already taken is a planted name)


class FileRefused(Exception):
    """The file is not one the harness reads; the message says why and what to do."""


class UnsafeFile(InputError):
    """Where the harness keeps a file (or folder) of its own, something else is: a link, a special
    file, a file with another name. It is left as it is; the message names it and what to do."""


def kind_of_mode(mode: int) -> str:
    """`a named pipe (FIFO)`, `a symbolic link`, ...: what a file of this mode is, for messages."""
    if stat.S_ISREG(mode):
        return "a regular file"
    return next((name for test, name in _KINDS if test(mode)), "a special file")


def read_regular_file(path: str, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of `path`; `FileRefused` unless it is a regular file of at most `limit` bytes.

    A link a user gives is followed (its target must be a regular file). `FileNotFoundError`
    and other `OSError`s pass through, for the caller to word.
    """
    descriptor = os.open(path, os.O_RDONLY | _NONBLOCK | _CLOEXEC)
    try:
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(mode):
            raise FileRefused(f"{kind_of_mode(mode)}, not a regular file; give a .yaml file")
        data = _read_up_to(descriptor, limit + 1)
    finally:
        os.close(descriptor)
    if len(data) > limit:
        raise FileRefused(f"larger than {limit:,} bytes, the limit for a chronology; split it into several files")
    return data


def read_regular_chunks(path: str, limit: int, size: int) -> Iterator[bytes]:
    """The bytes of `path` in pieces of at most `size` bytes, as `read_regular_file` checks them
    (a regular file, of at most `limit` bytes), for an input too large to hold whole."""
    descriptor = os.open(path, os.O_RDONLY | _NONBLOCK | _CLOEXEC)
    with os.fdopen(descriptor, "rb") as stream:
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(mode):
            raise FileRefused(f"{kind_of_mode(mode)}, not a regular file")
        total = 0
        while piece := stream.read(min(size, limit + 1 - total)):
            total += len(piece)
            if total > limit:
                raise FileRefused(f"larger than {limit:,} bytes")
            yield piece


def read_own_file(path: Path, limit: int) -> bytes:
    """Up to `limit` bytes of a file the harness wrote, read without following a link;
    `FileRefused` for a link or anything but a regular file (a FIFO is never waited on)."""
    try:
        descriptor = os.open(path, os.O_RDONLY | _NONBLOCK | _NOFOLLOW | _CLOEXEC)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK):  # EMLINK: what some BSDs say for O_NOFOLLOW
            raise FileRefused("a symbolic link") from None
        raise
    try:
        found = os.fstat(descriptor)
        if not stat.S_ISREG(found.st_mode):
            raise FileRefused(kind_of_mode(found.st_mode))
        if found.st_nlink > 1:
            raise FileRefused(HARD_LINK)
        return _read_up_to(descriptor, limit)
    finally:
        os.close(descriptor)


def _read_up_to(descriptor: int, limit: int) -> bytes:
    with os.fdopen(descriptor, "rb", closefd=False) as stream:
        return stream.read(limit)


def _refused(path: Path, what: str, folder: bool = False) -> UnsafeFile:
    own = "a folder of its own" if folder else "a file of its own"
    if what == HARD_LINK:  # removing this name leaves the other file whole; a copy breaks the link too
        return UnsafeFile(
            f"{path}: {what}, where the harness keeps {own}, so writing here would write there too; "
            f"give it a copy of its own (cp it to another name, then mv that over {path.name}) or remove it "
            "(the harness never writes or reads its files through a link, and leaves this one as it is)"
        )
    return UnsafeFile(
        f"{path}: {what}, where the harness keeps {own}; remove it (the harness never writes through "
        "a link or into a special file, and leaves this one as it is)"
    )


def _open_own(path: Path, flags: int) -> int:
    """A descriptor of `path`, a regular file of the harness's with no other name (created when
    `flags` say so), opened without following a link or waiting on a FIFO; else `UnsafeFile`."""
    try:
        descriptor = os.open(path, flags | _NOFOLLOW | _NONBLOCK | _CLOEXEC, _MODE)
    except OSError as exc:
        # ELOOP: a link (O_NOFOLLOW). ENXIO: a FIFO without a reader, or a socket.
        # EISDIR: a folder. EWOULDBLOCK: a FIFO or device that would block.
        if exc.errno in (errno.ELOOP, errno.EMLINK, errno.ENXIO, errno.EISDIR, errno.EWOULDBLOCK):
            raise _refused(path, _kind_at(path)) from None
        raise
    try:
        found = os.fstat(descriptor)
        if not stat.S_ISREG(found.st_mode):
            raise _refused(path, kind_of_mode(found.st_mode))
        if found.st_nlink > 1:
            raise _refused(path, HARD_LINK)
        fcntl.fcntl(descriptor, fcntl.F_SETFL, fcntl.fcntl(descriptor, fcntl.F_GETFL) & ~_NONBLOCK)
    except BaseException:
        os.close(descriptor)
        raise
    return descriptor


def _kind_at(path: Path) -> str:
    try:
        return kind_of_mode(os.lstat(path).st_mode)
    except OSError:
        return "not a regular file"


def append_to(path: Path, newline: str | None = None, binary: bool = False) -> IO[Any]:
    """`path` opened to append UTF-8 text (bytes when `binary`; created when missing);
    `UnsafeFile` unless it is a regular file of the harness's own (see the module's docstring)."""
    descriptor = _open_own(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    if binary:
        return os.fdopen(descriptor, "ab")
    return os.fdopen(descriptor, "a", encoding="utf-8", newline=newline)


def open_lock(path: Path) -> int:
    """A read-write descriptor of the lock file `path` (created when missing), for `flock`."""
    return _open_own(path, os.O_RDWR | os.O_CREAT)


def create_new(path: Path, binary: bool = False, newline: str | None = None) -> IO[Any]:
    """`path` created for UTF-8 text (bytes when `binary`); `FileExistsError` when anything is
    there, a link included (`O_EXCL` never follows one)."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, _MODE)
    if binary:
        return os.fdopen(descriptor, "wb")
    return os.fdopen(descriptor, "w", encoding="utf-8", newline=newline)


def check_own_file(path: Path) -> None:
    """`UnsafeFile` unless `path` is missing or a regular file with no other name (never followed,
    never opened): for a file that another library opens (the response cache's SQLite file) or that
    the harness reads back as its own (a results file)."""
    try:
        found = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISREG(found.st_mode):
        raise _refused(path, kind_of_mode(found.st_mode))
    if found.st_nlink > 1:
        raise _refused(path, HARD_LINK)


def own_folder(path: Path) -> Path:
    """`path`, a folder the harness makes for itself (a report's charts), created when missing;
    `UnsafeFile` when a link or anything but a folder is there. Returns `path`."""
    with contextlib.suppress(FileExistsError):
        path.mkdir(parents=True)
    mode = os.lstat(path).st_mode
    if not stat.S_ISDIR(mode):
        raise _refused(path, kind_of_mode(mode), folder=True)
    return path


def temporary_name(path: Path) -> Path:
    """A name beside `path` for the temporary that replaces it: `.harness-tmp-<pid>-<hex>.<name>.tmp`,
    drawn at random (64 bits), naming this process so that `harness.base.temporaries.sweep` can
    remove it once the process is gone (a kill mid-write leaves it)."""
    return path.with_name(f"{temporary_stem()}.{path.name[:TARGET_CHARS]}.tmp")


@contextlib.contextmanager
def replacing(path: Path, binary: bool = False) -> Iterator[IO[Any]]:
    """Write `path` whole: a temporary file beside it (a fresh name, created exclusively, never
    through a link) is handed out (UTF-8 text, or bytes when `binary`) and renamed over `path`
    once the block ends; if the block fails, the temporary is removed and `path` left as it was.
    `UnsafeFile` when `path` is there and is not a regular file."""
    check_own_file(path)
    descriptor, temporary = _create_temporary(path)
    try:
        with os.fdopen(descriptor, "wb" if binary else "w", encoding=None if binary else "utf-8") as handle:
            yield handle
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _create_temporary(path: Path) -> tuple[int, Path]:
    for _ in range(_DRAWS):
        temporary = temporary_name(path)
        try:
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
            return os.open(temporary, flags, _MODE), temporary
        except FileExistsError:
            continue  # taken (by a planted link, say): draw another
    raise FileExistsError(errno.EEXIST, f"no free temporary name after {_DRAWS} tries", str(path.parent))


def write_atomic(path: Path, data: str | bytes) -> None:
    """Replace `path` with `data` (text as UTF-8), never half-written (see `replacing`)."""
    with replacing(path, binary=isinstance(data, bytes)) as handle:
        handle.write(data)


_NO_HARD_LINKS = (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP)  # a file system without hard links (FAT, some FUSE)


def write_new(path: Path, data: str | bytes) -> None:
    """Create `path` holding `data` (text as UTF-8) whole, only where nothing is: a temporary is
    written beside it, then linked at `path` (a link never replaces, never follows a link there),
    then removed. `FileExistsError` when something took the name meanwhile (another command
    writing the same path); `path` is then left as it is. For an output the command checked was
    free when it started, which a slow command (a rejudge asking a judge for minutes) may find taken."""
    descriptor, temporary = _create_temporary(path)
    try:
        with os.fdopen(
            descriptor, "wb" if isinstance(data, bytes) else "w", encoding=None if isinstance(data, bytes) else "utf-8"
        ) as handle:
            handle.write(data)
        try:
            os.link(temporary, path)
        except OSError as exc:
            if exc.errno not in _NO_HARD_LINKS:
                raise
            if os.path.lexists(path):  # no hard links here: the last look, then the rename
                raise FileExistsError(errno.EEXIST, "exists", str(path)) from None
            os.rename(temporary, path)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
