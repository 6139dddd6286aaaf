"""The crash-safe half of apply: the journal written at its commit point, the exclusive apply lock, and
recovery, which every plan and apply runs first: it finishes an apply that died after the commit point
(roll-forward: deletions, renames, the lock file last) or drops the staging residue of one that died before.
Every roll-forward step is idempotent.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fabricgen.core.artifacts import is_safe_relative_path
from fabricgen.core.errors import OutputError
from fabricgen.outdir.lock import LOCK_FILE, STATE_DIR, LockEntry, parse_lock

FLOCK_FILE = "apply.lock"
JOURNAL_FILE = "journal.json"
JOURNAL_FORMAT = 1
STAGING_PREFIX = "staging-"
_TMP_PREFIX = "tmp-"
_STAGING_NAME = re.compile(r"^staging-[A-Za-z0-9_]+$")


@dataclass(frozen=True)
class Journal:
    """Everything roll-forward needs, so that a later run can finish without the plan or the artifacts."""

    staging: str
    writes: tuple[LockEntry, ...]
    deletions: tuple[str, ...]
    lock_bytes: bytes

    def to_bytes(self) -> bytes:
        doc = {
            "deletions": list(self.deletions),
            "journal_version": JOURNAL_FORMAT,
            "lock": self.lock_bytes.decode("ascii"),
            "staging": self.staging,
            "writes": [{"mode": f"{e.mode:04o}", "path": e.path, "sha256": e.sha256} for e in self.writes],
        }
        return (json.dumps(doc, indent=2, sort_keys=True) + "\n").encode("ascii")

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
        if doc["journal_version"] != JOURNAL_FORMAT:
            raise ValueError(f"unknown journal_version {doc['journal_version']!r}")
        staging, lock = doc["staging"], doc["lock"]
        if not isinstance(staging, str) or not _STAGING_NAME.fullmatch(staging) or not isinstance(lock, str):
            raise TypeError("staging and lock must be strings, staging a staging directory name")
        deletions = tuple(doc["deletions"])
        writes = tuple(LockEntry(w["path"], w["sha256"], int(w["mode"], 8)) for w in doc["writes"])
        for path in deletions + tuple(w.path for w in writes):
            if not isinstance(path, str) or not is_safe_relative_path(path):
                raise ValueError(f"unsafe path {path!r}")
        return cls(staging=staging, writes=writes, deletions=deletions, lock_bytes=lock.encode("ascii"))


def recover(out_dir: Path) -> bool:
    """Finish an apply that died after its commit point; drop residue of one that died before it.

    Writes nothing (and takes no lock) when there is nothing to recover, so plans stay read-only.

    Returns:
        True when an interrupted apply was finished.
    """
    if not _has_leftovers(out_dir / STATE_DIR):
        return False
    with exclusive_lock(out_dir):
        return recover_locked(out_dir)


@contextmanager
def exclusive_lock(out_dir: Path) -> Iterator[None]:
    """flock OUT/.fabricgen/apply.lock without waiting: a second apply fails fast instead of queueing behind
    a first one whose outcome it has not planned for. The file is never deleted (that would race lockers)."""
    path = out_dir / STATE_DIR / FLOCK_FILE
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        raise OutputError(f"cannot open {path}: {exc}") from exc
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            raise OutputError(f"another fabricgen apply is running on {out_dir}") from exc
        yield
    finally:
        os.close(fd)


def _has_leftovers(state_dir: Path) -> bool:
    try:
        names = os.listdir(state_dir)  # noqa: PTH208 - one cheap call on the hot path of every plan
    except (FileNotFoundError, NotADirectoryError):
        return False
    return any(n == JOURNAL_FILE or n.startswith((STAGING_PREFIX, _TMP_PREFIX)) for n in names)


def recover_locked(out_dir: Path) -> bool:
    state_dir = out_dir / STATE_DIR
    journal_path = state_dir / JOURNAL_FILE
    try:
        data: bytes | None = journal_path.read_bytes()
    except FileNotFoundError:
        data = None
    except OSError as exc:
        raise OutputError(f"cannot read {journal_path}: {exc}") from exc
    if data is not None:
        finish(out_dir, Journal.parse(data, str(journal_path)))
    try:
        discard_residue(state_dir)
    except OSError as exc:
        raise OutputError(f"cannot clean up {state_dir}: {exc}") from exc
    return data is not None


def discard_residue(state_dir: Path) -> None:
    """Remove staging directories and temp files no journal refers to; the tree never saw them."""
    with suppress(FileNotFoundError):
        for child in state_dir.iterdir():
            if not child.name.startswith((STAGING_PREFIX, _TMP_PREFIX)):
                continue
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child)
            else:
                child.unlink()


def write_file(path: Path, content: bytes, mode: int) -> None:
    """Exclusive create, explicit chmod (the umask must not decide an artifact's mode), fsync."""
    with path.open("xb") as handle:
        handle.write(content)
        handle.flush()
        os.fchmod(handle.fileno(), mode)
        os.fsync(handle.fileno())


def write_atomically(path: Path, data: bytes, temp_dir: Path) -> None:
    """Temp file in OUT/.fabricgen (same file system), fsync, os.replace, fsync the directory."""
    fd, temp_name = tempfile.mkstemp(prefix=_TMP_PREFIX, dir=temp_dir)
    temp = Path(temp_name)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fchmod(handle.fileno(), 0o644)
        os.fsync(handle.fileno())
    temp.replace(path)
    fsync_dir(path.parent)


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def finish(out_dir: Path, journal: Journal) -> bool:
    """Steps 4 and 5, safe to repeat from any point. Returns whether the lock file was (re)written."""
    state_dir = out_dir / STATE_DIR
    try:
        lock_written = _roll_forward(out_dir, journal)
        (state_dir / JOURNAL_FILE).unlink()
        fsync_dir(state_dir)
        shutil.rmtree(state_dir / journal.staging, ignore_errors=True)
    except OSError as exc:
        raise OutputError(
            f"apply to {out_dir} was interrupted after its commit point ({exc}); "
            "the next fabricgen plan or apply finishes it"
        ) from exc
    return lock_written


def _roll_forward(out_dir: Path, journal: Journal) -> bool:
    # Deletions first: a deleted file "a" may be where the directory of a new "a/b" goes, and deleting "a/b"
    # may empty the directory "a" a new file replaces.
    for rel in journal.deletions:
        _delete(out_dir, rel)
    staging = out_dir / STATE_DIR / journal.staging
    touched = {out_dir}
    for entry in journal.writes:
        _move_into_place(staging, out_dir, entry.path)
        touched.add((out_dir / entry.path).parent)
    for directory in sorted(touched):
        fsync_dir(directory)
    return _write_lock(out_dir, journal.lock_bytes)


def _delete(out_dir: Path, rel: str) -> None:
    """Unlink one lock-listed file if still there, then the directories that deletion emptied (never OUT)."""
    target = out_dir / rel
    try:
        st = target.lstat()
    except (FileNotFoundError, NotADirectoryError):
        st = None
    if st is not None and not stat.S_ISDIR(st.st_mode):
        target.unlink()
    parts = rel.split("/")
    for depth in range(len(parts) - 1, 0, -1):
        try:
            (out_dir / "/".join(parts[:depth])).rmdir()
        except FileNotFoundError:
            continue  # removed by the run this one is finishing; its parents may still be left
        except OSError as exc:
            if exc.errno in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR):
                break
            raise


def _move_into_place(staging: Path, out_dir: Path, rel: str) -> None:
    """Rename a staged file over its target; a missing staged file means an earlier run already moved it."""
    source, target = staging / rel, out_dir / rel
    if source.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        source.replace(target)
    elif not target.exists():
        raise OutputError(
            f"cannot finish the interrupted apply of {out_dir}: the staged copy of {rel} is gone; "
            f"delete {out_dir / STATE_DIR / JOURNAL_FILE} and run fabricgen apply again"
        )


def _write_lock(out_dir: Path, data: bytes) -> bool:
    path = out_dir / LOCK_FILE
    with suppress(FileNotFoundError):
        if path.read_bytes() == data:
            return False
    write_atomically(path, data, out_dir / STATE_DIR)
    return True
