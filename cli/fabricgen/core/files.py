"""The one way fabricgen reads an input file: bounded, whatever the file is.

A size check on ``st_size`` alone is bypassed by devices and pipes (``/dev/zero`` has size 0 and never ends), so
the reader stops at the limit itself. A FIFO is opened without blocking, so one nobody writes to reads as empty
instead of hanging the run; a process substitution (``<(...)``) still works, its writer is already there.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

_CHUNK = 1 << 20


class TooLargeError(Exception):
    """The file holds more than the limit; ``size`` is its size when known up front (a regular file)."""

    def __init__(self, limit: int, size: int | None) -> None:
        self.limit, self.size = limit, size
        super().__init__(f"more than {limit} bytes")

    def describe(self, what: str) -> str:
        """``spec is 17000000 bytes, above the 16777216 byte limit`` (or "more than" for a stream)."""
        if self.size is not None:
            return f"{what} is {self.size} bytes, above the {self.limit} byte limit"
        return f"{what} holds more than the {self.limit} byte limit"


def read_bounded(path: Path, limit: int, *, follow_symlinks: bool = True, dir_fd: int | None = None) -> bytes:
    """At most ``limit`` bytes of ``path``; raises :class:`TooLargeError` beyond it and OSError when it cannot be read.

    ``follow_symlinks=False`` refuses a symlink (ELOOP), for files fabricgen owns inside OUT.
    """
    flags = os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | (0 if follow_symlinks else os.O_NOFOLLOW)
    fd = os.open(path, flags, dir_fd=dir_fd)
    try:
        st = os.fstat(fd)
        if stat.S_ISREG(st.st_mode) and st.st_size > limit:
            raise TooLargeError(limit, st.st_size)
        os.set_blocking(fd, True)
        chunks: list[bytes] = []
        total = 0
        while chunk := os.read(fd, min(_CHUNK, limit + 1 - total)):
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise TooLargeError(limit, None)
        return b"".join(chunks)
    finally:
        os.close(fd)
