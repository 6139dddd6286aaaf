"""OUT/.fabricgen/last-run.json: what the last apply knew, so a later plan can trust a stat instead of reading
every byte, and say what it said last time (the warnings) without compiling.

- ``files``: each managed file's size, mtime_ns, ctime_ns and inode as last seen, with the sha256 of the bytes
  seen then. A file whose lstat still shows all four is not read again; any other is hashed. An entry is only
  kept for a file whose mtime is at least ``SETTLED_NS`` older than the moment its bytes were known (written by
  apply, or hashed by plan): an edit in the same timestamp tick as the bytes it replaced would otherwise keep
  every field (git's "racy clean" entries; 2 s also covers file systems with 1-2 s timestamps).
- ``inputs``, ``spec``, ``warnings``: the input digest the warnings belong to, the spec as it was named (the
  warnings' positions name it), and the warnings of that compile.
- ``renders``: each artifact a serializer keyed (:mod:`fabricgen.core.reuse`: a row's cable workbook and PDF),
  its render key and the sha256 of the bytes apply left at its path. The next plan or apply offers those bytes
  under that key when the file still hashes to that sha256 (:func:`prior_renders`), so a serializer whose input
  is unchanged is not run again. Optional in the file (format 1 as before: a file without it offers nothing).

Machine-local (inodes, times), so not in the lock, whose bytes are the same wherever the spec is applied. The
file is only an aid: it is rewritten whole, and any unreadable, malformed or foreign content reads as empty,
which makes plan hash every file and compile.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fabricgen.core.artifacts import is_safe_relative_path
from fabricgen.core.errors import Finding, OutputError, Severity, SourcePosition
from fabricgen.core.files import TooLargeError, read_bounded
from fabricgen.outdir.fs import MAX_STATE_BYTES, Tree, open_out, open_state, read_own_file, tree, write_atomically
from fabricgen.outdir.lock import STATE_DIR

LAST_RUN_FILE = "last-run.json"
LAST_RUN_FORMAT = 1
SETTLED_NS = 2_000_000_000


@dataclass(frozen=True)
class Known:
    """A managed file as last seen: what lstat showed and the sha256 of the bytes it held then."""

    size: int
    mtime_ns: int
    ctime_ns: int
    ino: int
    sha256: str

    def matches(self, st: os.stat_result) -> bool:
        return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino) == (
            self.size, self.mtime_ns, self.ctime_ns, self.ino)


def settled(st: os.stat_result, sha256: str, known_since_ns: int) -> Known | None:
    """The entry for a file whose bytes (``sha256``) were known at ``known_since_ns`` (time.time_ns()), or None
    while its mtime is too recent for a stat to tell a later edit apart."""
    if st.st_mtime_ns >= known_since_ns - SETTLED_NS:
        return None
    return Known(st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, sha256)


@dataclass(frozen=True)
class LastRun:
    """The content of last-run.json."""

    inputs: str = ""
    spec: str = ""
    warnings: tuple[Finding, ...] = ()
    files: Mapping[str, Known] = field(default_factory=dict)
    renders: Mapping[str, tuple[str, str]] = field(default_factory=dict)  # path -> (render key, sha256)

    def to_bytes(self) -> bytes:
        doc = {
            "format": LAST_RUN_FORMAT,
            "inputs": self.inputs,
            "spec": self.spec,
            "warnings": [_finding_json(f) for f in self.warnings],
            "files": {path: [k.size, k.mtime_ns, k.ctime_ns, k.ino, k.sha256]
                      for path, k in sorted(self.files.items())},
            "renders": {path: [key, sha256] for path, (key, sha256) in sorted(self.renders.items())},
        }
        return (json.dumps(doc, separators=(",", ":"), sort_keys=True) + "\n").encode()


def read_last_run(out_dir: Path) -> LastRun:
    """What the last apply recorded; empty when there is nothing usable (never an error: it is only an aid)."""
    try:
        out_fd = open_out(out_dir)
        if out_fd is None:
            return LastRun()
        try:
            state_fd = open_state(out_fd, out_dir, STATE_DIR)
            if state_fd is None:
                return LastRun()
            try:
                data = read_own_file(state_fd, LAST_RUN_FILE, out_dir / STATE_DIR / LAST_RUN_FILE)
            finally:
                os.close(state_fd)
        finally:
            os.close(out_fd)
        return LastRun() if data is None else _parse(json.loads(data))
    except (OSError, OutputError, ValueError, TypeError, KeyError):
        return LastRun()


def write_last_run(state_fd: int, last: LastRun, temp_prefix: str) -> None:
    """Replace last-run.json (in the state directory, under apply's lock), unless it already holds ``last``."""
    data = last.to_bytes()
    if len(data) > MAX_STATE_BYTES:
        return
    try:
        if read_own_file(state_fd, LAST_RUN_FILE, Path(LAST_RUN_FILE)) == data:
            return
    except OutputError:
        pass  # a symlink or unreadable file there is replaced by the rename below, never written through
    write_atomically(state_fd, LAST_RUN_FILE, data, state_fd, temp_prefix)


def _finding_json(f: Finding) -> dict[str, Any]:
    where = None if f.position is None else [f.position.file, f.position.line, f.position.column]
    return {"severity": f.severity.value, "check": f.check, "subject": f.subject, "message": f.message,
            "hint": f.hint, "position": where}


def _finding(doc: Any) -> Finding:
    where = doc["position"]
    position = None
    if where is not None:
        file, line, column = where
        if not (isinstance(file, str) and type(line) is int and type(column) is int):
            raise ValueError("bad position")
        position = SourcePosition(file, line, column)
    check, subject, message, hint = (doc[k] for k in ("check", "subject", "message", "hint"))
    if not all(isinstance(t, str) for t in (check, subject, message, hint)):
        raise ValueError("bad finding")
    return Finding(Severity(doc["severity"]), check, subject, message, hint, position)


def _parse(doc: Any) -> LastRun:
    if not isinstance(doc, dict) or doc.get("format") != LAST_RUN_FORMAT:
        return LastRun()
    if not (isinstance(doc["inputs"], str) and isinstance(doc["spec"], str) and isinstance(doc["files"], dict)):
        raise ValueError("bad last run")
    files = {}
    for path, (size, mtime_ns, ctime_ns, ino, sha256) in doc["files"].items():
        if not (isinstance(path, str) and isinstance(sha256, str)
                and all(type(v) is int for v in (size, mtime_ns, ctime_ns, ino))):
            raise ValueError("bad file entry")
        files[path] = Known(size, mtime_ns, ctime_ns, ino, sha256)
    renders = {}
    recorded = doc.get("renders", {})
    if not isinstance(recorded, dict):
        raise ValueError("bad renders")
    for path, (key, sha256) in recorded.items():
        if not (all(isinstance(v, str) for v in (path, key, sha256)) and is_safe_relative_path(path)):
            raise ValueError("bad render entry")
        renders[path] = (key, sha256)
    return LastRun(doc["inputs"], doc["spec"], tuple(_finding(f) for f in doc["warnings"]), files, renders)


def prior_renders(out_dir: Path) -> dict[str, bytes]:
    """The bytes of every file the last apply recorded a render key for (``renders``) that OUT still holds, by
    that key: read with every directory on the way opened without following a symlink, bounded, and kept only
    when they hash to the sha256 recorded with the key, so the bytes are exactly those serialized for it. Never
    an error: what cannot be read, or is not those bytes, is rendered again."""
    last = read_last_run(out_dir)
    offered: dict[str, bytes] = {}
    if not last.renders:
        return offered
    try:
        out_fd = open_out(out_dir)
    except OutputError:
        return offered
    if out_fd is None:
        return offered
    try:
        with tree(out_fd) as dirs:
            for path, (key, sha256) in last.renders.items():
                content = _read_managed(dirs, path)
                if content is not None and hashlib.sha256(content).hexdigest() == sha256:
                    offered[key] = content
    finally:
        os.close(out_fd)
    return offered


def _read_managed(dirs: Tree, path: str) -> bytes | None:
    """A regular file at ``path`` under OUT, or None (missing, behind or being a symlink, not regular, too large)."""
    parent, _, name = path.rpartition("/")
    try:
        fd = dirs.get(parent)
        if fd is None or not stat.S_ISREG(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
            return None
        return read_bounded(Path(name), MAX_STATE_BYTES, follow_symlinks=False, dir_fd=fd)
    except (OSError, TooLargeError):
        return None
