"""The crash-safe half of apply: the journal written at its commit point, the exclusive apply lock, and
recovery, which every plan and apply runs first: it finishes an apply that died after the commit point
(roll-forward: deletions, renames, the lock file last) or drops the staging residue of one that died before.
Every roll-forward step is idempotent, and works on descriptors relative to OUT (:mod:`fabricgen.outdir.fs`): a
symlink planted after the commit point is replaced or refused, never followed.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import re
import shutil
import stat
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fabricgen.core.artifacts import is_safe_relative_path
from fabricgen.core.errors import OutputError
from fabricgen.outdir.fs import (
    NOT_A_DIRECTORY,
    Tree,
    exists,
    in_parallel,
    open_out,
    open_state,
    read_own_file,
    tree,
    write_atomically,
)
from fabricgen.outdir.lock import LOCK_FILE, STATE_DIR, LockEntry, parse_lock

FLOCK_FILE = "apply.lock"
JOURNAL_FILE = "journal.json"
# 2: staged files flat, file i of ``writes`` at <staging>/<i>; 1 (still finished): staged under their own paths
JOURNAL_FORMAT = 2
_READABLE_FORMATS = (1, 2)
STAGING_PREFIX = "staging-"
TMP_PREFIX = "tmp-"
_STAGING_NAME = re.compile(r"^staging-[A-Za-z0-9_]+$")


@dataclass(frozen=True)
class Journal:
    """Everything roll-forward needs, so that a later run can finish without the plan or the artifacts."""

    staging: str
    writes: tuple[LockEntry, ...]
    deletions: tuple[str, ...]
    lock_bytes: bytes
    flat: bool = True  # False only for a format-1 journal an earlier fabricgen left, finished as it was written

    def staged(self, index: int) -> str:
        """Where write ``index`` waits, relative to the staging directory."""
        return str(index) if self.flat else self.writes[index].path

    def to_bytes(self) -> bytes:
        if not self.flat:
            raise ValueError("only a flat staging is journalled (format 1 is read, never written)")
        doc = {
            "deletions": list(self.deletions),
            "journal_version": JOURNAL_FORMAT,
            "lock": self.lock_bytes.decode("ascii"),
            "staging": self.staging,
            "writes": [{"mode": f"{e.mode:04o}", "path": e.path, "sha256": e.sha256} for e in self.writes],
        }
        # one line: json's indented form is its pure-Python encoder (~0.1 s for 6,000 writes); only apply reads it
        return (json.dumps(doc, sort_keys=True) + "\n").encode("ascii")

    @classmethod
    def parse(cls, data: bytes, source: str) -> Journal:
        """Parse strictly: the journal names paths to replace and delete, so nothing outside OUT may pass."""
        try:
            journal = cls._from_json(json.loads(data.decode("utf-8")))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise OutputError(
                f"{source}: corrupt apply journal ({exc}); the output directory may be half-applied: "
                "delete the journal and run fabricgen apply again"
            ) from exc
        parse_lock(journal.lock_bytes, f"{source} (embedded lock)")
        return journal

    @classmethod
    def _from_json(cls, doc: Any) -> Journal:
        if doc["journal_version"] not in _READABLE_FORMATS:
            raise ValueError(f"unknown journal_version {doc['journal_version']!r}")
        staging, lock = doc["staging"], doc["lock"]
        if not isinstance(staging, str) or not _STAGING_NAME.fullmatch(staging) or not isinstance(lock, str):
            raise TypeError("staging and lock must be strings, staging a staging directory name")
        deletions = tuple(doc["deletions"])
        writes = tuple(LockEntry(w["path"], w["sha256"], int(w["mode"], 8)) for w in doc["writes"])
        for path in deletions + tuple(w.path for w in writes):
            if not isinstance(path, str) or not is_safe_relative_path(path):
                raise ValueError(f"unsafe path {path!r}")
        return cls(staging=staging, writes=writes, deletions=deletions, lock_bytes=lock.encode("ascii"),
                   flat=doc["journal_version"] != 1)


@dataclass(frozen=True)
class State:
    """OUT and its state directory, both open: every step below works relative to these descriptors."""

    out_dir: Path
    out_fd: int
    state_fd: int

    @property
    def state_dir(self) -> Path:
        return self.out_dir / STATE_DIR


@contextmanager
def opened_state(out_dir: Path, *, create: bool) -> Iterator[State | None]:
    """OUT and OUT/.fabricgen opened (made when ``create``); None when either is missing. A state directory that is
    a symlink or a file is an OutputError, before anything is read, locked, written or deleted in it."""
    out_fd = open_out(out_dir, create=create)
    if out_fd is None:
        yield None
        return
    try:
        state_fd = open_state(out_fd, out_dir, STATE_DIR, create=create)
        if state_fd is None:
            yield None
            return
        try:
            yield State(out_dir, out_fd, state_fd)
        finally:
            os.close(state_fd)
    finally:
        os.close(out_fd)


def recover(out_dir: Path) -> bool:
    """Finish an apply that died after its commit point; drop residue of one that died before it.

    Writes nothing (and takes no lock) when there is nothing to recover, so plans stay read-only.

    Returns:
        True when an interrupted apply was finished.
    """
    with opened_state(out_dir, create=False) as state:
        if state is None or not _has_leftovers(state):
            return False
        with exclusive_lock(state):
            return recover_locked(state)


@contextmanager
def exclusive_lock(state: State) -> Iterator[None]:
    """flock OUT/.fabricgen/apply.lock without waiting: a second apply fails fast instead of queueing behind
    a first one whose outcome it has not planned for. The file is never deleted (that would race lockers)."""
    path = state.state_dir / FLOCK_FILE
    try:
        fd = os.open(FLOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=state.state_fd)
    except OSError as exc:
        raise OutputError(f"cannot open {path}: {exc}") from exc
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            raise OutputError(f"another fabricgen apply is running on {state.out_dir}") from exc
        yield
    finally:
        os.close(fd)


def needs_recovery(out_dir: Path) -> bool:
    """Whether an apply left a journal or residue in OUT (read only; any doubt counts as yes)."""
    try:
        with opened_state(out_dir, create=False) as state:
            return state is not None and _has_leftovers(state)
    except (OSError, OutputError):
        return True


def _has_leftovers(state: State) -> bool:
    names = os.listdir(state.state_fd)  # noqa: PTH208 - by descriptor; one cheap call on the hot path of every plan
    return any(n == JOURNAL_FILE or n.startswith((STAGING_PREFIX, TMP_PREFIX)) for n in names)


def recover_locked(state: State) -> bool:
    journal_path = state.state_dir / JOURNAL_FILE
    data = read_own_file(state.state_fd, JOURNAL_FILE, journal_path)
    if data is not None:
        finish(state, Journal.parse(data, str(journal_path)))
    try:
        discard_residue(state)
    except OSError as exc:
        raise OutputError(f"cannot clean up {state.state_dir}: {exc}") from exc
    return data is not None


def discard_residue(state: State) -> None:
    """Remove staging directories and temp files no journal refers to; the tree never saw them."""
    for entry in os.scandir(state.state_fd):
        if not entry.name.startswith((STAGING_PREFIX, TMP_PREFIX)):
            continue
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.name, dir_fd=state.state_fd)
        else:
            os.unlink(entry.name, dir_fd=state.state_fd)


def finish(state: State, journal: Journal) -> bool:
    """Steps 4 and 5, safe to repeat from any point. Returns whether the lock file was (re)written."""
    try:
        lock_written = _roll_forward(state, journal)
        os.unlink(JOURNAL_FILE, dir_fd=state.state_fd)
        os.fsync(state.state_fd)
        shutil.rmtree(journal.staging, ignore_errors=True, dir_fd=state.state_fd)
    except OSError as exc:
        raise OutputError(
            f"apply to {state.out_dir} was interrupted after its commit point ({exc}); "
            "the next fabricgen plan or apply finishes it"
        ) from exc
    return lock_written


def _roll_forward(state: State, journal: Journal) -> bool:
    with tree(state.out_fd) as out, tree(state.state_fd) as private:
        # Deletions first: a deleted file "a" may be where the directory of a new "a/b" goes, and deleting "a/b"
        # may empty the directory "a" a new file replaces.
        for rel in journal.deletions:
            _delete(out, rel)
        touched = {""}
        for index, entry in enumerate(journal.writes):
            _move_into_place(private, out, journal.staging, journal.staged(index), entry.path, state)
            touched.add(entry.path.rpartition("/")[0])
        opened = out.opened()
        in_parallel(os.fsync, [opened[rel_dir] for rel_dir in sorted(touched)])
    return _write_lock(state, journal.lock_bytes)


def _delete(out: Tree, rel: str) -> None:
    """Unlink one lock-listed file if still there, then the directories that deletion emptied (never OUT). A path
    that now leads through a symlink or a file holds nothing of fabricgen's inside OUT: it is left alone."""
    parent_rel, _, name = rel.rpartition("/")
    try:
        parent = out.get(parent_rel)
    except OSError as exc:
        if exc.errno in NOT_A_DIRECTORY:
            return
        raise
    if parent is not None:
        try:
            st = os.stat(name, dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            st = None
        if st is not None and not stat.S_ISDIR(st.st_mode):
            os.unlink(name, dir_fd=parent)  # a symlink here is unlinked itself, never what it points to
    parts = rel.split("/")
    for depth in range(len(parts) - 1, 0, -1):
        directory = "/".join(parts[:depth])
        up_rel, _, dir_name = directory.rpartition("/")
        try:
            up = out.get(up_rel)
        except OSError as exc:
            if exc.errno in NOT_A_DIRECTORY:
                break
            raise
        if up is None:
            continue  # removed by the run this one is finishing; its parents may still be left
        try:
            os.rmdir(dir_name, dir_fd=up)
        except FileNotFoundError:
            continue
        except OSError as exc:
            if exc.errno in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR):
                break
            raise
        out.forget(directory)


def _move_into_place(private: Tree, out: Tree, staging: str, staged: str, rel: str, state: State) -> None:
    """Rename the file staged at ``staged`` (in ``staging``) over its target ``rel``; a missing staged file means an
    earlier run already moved it. The target's directories are opened (or made) without following a symlink: one
    planted there is refused."""
    parent_rel, _, name = rel.rpartition("/")
    staged_parent, _, staged_name = staged.rpartition("/")
    try:
        source = private.get(f"{staging}/{staged_parent}" if staged_parent else staging)
    except OSError as exc:
        if exc.errno not in NOT_A_DIRECTORY:
            raise
        source = None
    if source is not None and exists(source, staged_name):
        try:
            target = out.get(parent_rel, create=True)
        except OSError as exc:
            if exc.errno in NOT_A_DIRECTORY:
                raise OutputError(
                    f"cannot finish the apply of {state.out_dir}: a path on the way to {rel} is a symlink or a file, "
                    "and fabricgen never writes through one; move it away and run fabricgen apply again") from exc
            raise
        assert target is not None
        os.replace(staged_name, name, src_dir_fd=source, dst_dir_fd=target)
        return
    try:
        target = out.get(parent_rel)
    except OSError:
        target = None
    if target is None or not exists(target, name):
        raise OutputError(
            f"cannot finish the interrupted apply of {state.out_dir}: the staged copy of {rel} is gone; "
            f"delete {state.state_dir / JOURNAL_FILE} and run fabricgen apply again"
        )


def _write_lock(state: State, data: bytes) -> bool:
    with suppress(OutputError):  # a lock that is a symlink, or unreadable, is replaced below
        if read_own_file(state.out_fd, LOCK_FILE, state.out_dir / LOCK_FILE) == data:
            return False
    write_atomically(state.out_fd, LOCK_FILE, data, state.state_fd, TMP_PREFIX)
    return True
