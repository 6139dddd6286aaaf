"""OUT as plan and apply touch it: every directory opened relative to OUT, never through a symlink.

OUT itself is opened once, as the user named it (it may be a symlink: that is their choice). Below it every
component is opened with O_NOFOLLOW relative to its parent's descriptor (openat), so a symlink planted anywhere in
the tree, before a run or between the commit point of an apply and its roll-forward, can neither redirect a write or
a delete outside OUT nor be replaced under a check. OUT/.fabricgen, the state directory, must be a real directory.
"""

from __future__ import annotations

import errno
import hashlib
import os
import secrets
import stat
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TypeVar

from fabricgen.core.errors import OutputError
from fabricgen.core.files import TooLargeError, read_bounded

_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
# Errors of a path component that is a symlink (ELOOP) or no directory (ENOTDIR): "something else is there".
NOT_A_DIRECTORY = (errno.ELOOP, errno.ENOTDIR)
# fabricgen's own files in OUT (lock, journal) are small; the bound keeps a planted device or pipe from hanging a run.
MAX_STATE_BYTES = 256 * 1024 * 1024
# fsync waits on the disk, not on the CPU, and ext4 commits concurrent fsyncs in one journal transaction: 1,500
# files of 20 kB fsynced one by one took 10 s on this machine's disk, from 8 threads 1.5 s (32 threads: 2.6 s).
SYNC_THREADS = 8
_Item = TypeVar("_Item")


class Tree:
    """The directories of one tree by relative path, opened lazily relative to the root, each with O_NOFOLLOW.

    ``get`` raises OSError (ELOOP or ENOTDIR) when a component is a symlink or a file; callers decide whether that
    means "not ours, skip" (a deletion) or "refuse" (a write).
    """

    def __init__(self, root_fd: int) -> None:
        self._fds: dict[str, int] = {"": root_fd}

    def get(self, rel_dir: str, *, create: bool = False) -> int | None:
        """The descriptor of ``rel_dir`` ("" is the root); None when it is missing and ``create`` is false."""
        if rel_dir in self._fds:
            return self._fds[rel_dir]
        parent_rel, _, name = rel_dir.rpartition("/")
        parent = self.get(parent_rel, create=create)
        if parent is None:
            return None
        try:
            fd = os.open(name, _DIRECTORY, dir_fd=parent)
        except FileNotFoundError:
            if not create:
                return None
            with suppress(FileExistsError):  # a concurrent run made it; the open below checks what it is
                os.mkdir(name, dir_fd=parent)
            fd = os.open(name, _DIRECTORY, dir_fd=parent)
        self._fds[rel_dir] = fd
        return fd

    def forget(self, rel_dir: str) -> None:
        """Drop a removed directory (and what lay beneath it): a new one of that name is a new directory."""
        for rel in [r for r in self._fds if r and (r == rel_dir or r.startswith(rel_dir + "/"))]:
            os.close(self._fds.pop(rel))

    def opened(self) -> dict[str, int]:
        return dict(self._fds)

    def close(self) -> None:
        """Close every descriptor this tree opened (the root belongs to the caller)."""
        for rel, fd in self._fds.items():
            if rel:
                os.close(fd)
        self._fds = {"": self._fds[""]}


@contextmanager
def tree(root_fd: int) -> Iterator[Tree]:
    opened = Tree(root_fd)
    try:
        yield opened
    finally:
        opened.close()


def open_out(out_dir: Path, *, create: bool = False) -> int | None:
    """A descriptor of OUT (None when it does not exist and ``create`` is false)."""
    if create:
        try:
            out_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OutputError(f"cannot create the output directory {out_dir}: {exc}") from exc
    try:
        return os.open(out_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        if out_dir.exists() or out_dir.is_symlink():
            raise OutputError(f"output directory {out_dir} exists and is not a directory") from None
        return None
    except OSError as exc:
        raise OutputError(f"cannot open the output directory {out_dir}: {exc}") from exc


def open_state(out_fd: int, out_dir: Path, name: str, *, create: bool = False) -> int | None:
    """The state directory OUT/``name`` (None when absent and ``create`` is false); refused when it is a symlink
    or not a directory: fabricgen creates, locks and deletes in it, and must not do so anywhere else."""
    where = out_dir / name
    try:
        st = os.stat(name, dir_fd=out_fd, follow_symlinks=False)
    except FileNotFoundError:
        if not create:
            return None
        try:
            os.mkdir(name, dir_fd=out_fd)
        except FileExistsError:
            pass
        except OSError as exc:
            raise OutputError(f"cannot create {where}: {exc}") from exc
        st = os.stat(name, dir_fd=out_fd, follow_symlinks=False)
    if stat.S_ISLNK(st.st_mode):
        raise OutputError(f"{where} is a symlink; fabricgen keeps its private state there and never follows a "
                          "symlink out of the output directory: remove it")
    if not stat.S_ISDIR(st.st_mode):
        raise OutputError(f"{where} is not a directory; fabricgen keeps its private state there: move it away")
    try:
        return os.open(name, _DIRECTORY, dir_fd=out_fd)
    except OSError as exc:
        raise OutputError(f"cannot open {where}: {exc}") from exc


def read_own_file(dir_fd: int, name: str, where: Path) -> bytes | None:
    """One of fabricgen's own files (lock, journal) if present: bounded, never through a symlink or from a pipe."""
    try:
        return read_bounded(Path(name), MAX_STATE_BYTES, follow_symlinks=False, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    except TooLargeError as exc:
        raise OutputError(exc.describe(str(where))) from exc
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OutputError(f"{where} is a symlink; fabricgen never follows one in the output directory: "
                              "remove it") from exc
        raise OutputError(f"cannot read {where}: {exc.strerror or exc}") from exc


def exists(dir_fd: int, name: str) -> bool:
    """Whether anything (a symlink too) is at ``name`` in the directory."""
    try:
        os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True


def in_parallel(job: Callable[[_Item], object], items: Iterable[_Item]) -> None:
    """Run ``job`` on every item from SYNC_THREADS threads; return once all have ended, then raise the first error
    (in item order), so a caller that cleans up after a failure never races a write still under way."""
    work = list(items)
    if len(work) < 2:
        for item in work:
            job(item)
        return
    with ThreadPoolExecutor(max_workers=min(SYNC_THREADS, len(work))) as pool:
        futures = [pool.submit(job, item) for item in work]
    for future in futures:
        future.result()


def write_new(dir_fd: int, name: str, content: bytes, mode: int) -> None:
    """Exclusive create (never through a symlink), explicit chmod (the umask must not decide a mode), fsync."""
    fd = os.open(name, _NEW_FILE, 0o600, dir_fd=dir_fd)
    with os.fdopen(fd, "wb") as handle:
        handle.write(content)
        handle.flush()
        os.fchmod(handle.fileno(), mode)
        os.fsync(handle.fileno())


def write_atomically(dir_fd: int, name: str, data: bytes, temp_dir_fd: int, temp_prefix: str) -> None:
    """A temp file in the state directory (same file system), fsync, one rename over ``name``, fsync the directory.
    The rename replaces whatever is at ``name`` (a planted symlink too) and never writes through it."""
    temp = new_name(temp_dir_fd, temp_prefix, directory=False)
    write_new(temp_dir_fd, temp, data, 0o644)
    os.replace(temp, name, src_dir_fd=temp_dir_fd, dst_dir_fd=dir_fd)
    os.fsync(dir_fd)


def new_name(dir_fd: int, prefix: str, *, directory: bool) -> str:
    """A fresh random name in the directory; with ``directory``, the directory is made (mode 0700) and named."""
    while True:
        name = prefix + secrets.token_hex(8)
        if not directory:
            if not exists(dir_fd, name):
                return name
            continue
        try:
            os.mkdir(name, 0o700, dir_fd=dir_fd)
        except FileExistsError:
            continue
        return name


def file_digest(path: Path) -> str | None:
    """sha256 of a regular file, streamed (a huge file in OUT costs no memory); None when the file is not regular
    once opened (never a symlink, never a pipe)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return hashlib.file_digest(handle, "sha256").hexdigest()


def read_regular(path: Path, limit: int) -> bytes | None:
    """A regular file's bytes up to ``limit``; None when it is not a regular file once opened (a symlink, a pipe),
    is gone, or is larger than ``limit``."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = handle.read(limit + 1)
    return data if len(data) <= limit else None
