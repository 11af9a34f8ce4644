"""Reading a user's input file: a regular file only, and no more than a size limit.

`open()` on a FIFO named `x.yaml` waits for a writer that may never come, and `/dev/zero`
never ends; so the file is opened without blocking, checked to be a regular file before a
byte is read, and read up to one byte past the limit, never further.
"""

from __future__ import annotations

import os
import stat

__all__ = ["MAX_FILE_BYTES", "FileRefused", "read_regular_file"]

MAX_FILE_BYTES = 1024 * 1024  # 1 MiB: about 50 times the 201-turn long-conversation chronology

_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class FileRefused(Exception):
    """The file is not one the harness reads; the message says why and what to do."""


def read_regular_file(path: str, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of `path`; `FileRefused` unless it is a regular file of at most `limit` bytes.

    `FileNotFoundError` and other `OSError`s pass through, for the caller to word.
    """
    # O_NONBLOCK: opening a FIFO for reading returns at once instead of waiting for a writer.
    descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(mode):
            kind = next((name for test, name in _KINDS if test(mode)), "a special file")
            raise FileRefused(f"{kind}, not a regular file; give a .yaml file")
        with os.fdopen(descriptor, "rb", closefd=False) as stream:
            data = stream.read(limit + 1)
    finally:
        os.close(descriptor)
    if len(data) > limit:
        raise FileRefused(f"larger than {limit:,} bytes, the limit for a chronology; split it into several files")
    return data
