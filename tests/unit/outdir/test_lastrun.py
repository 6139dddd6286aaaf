"""OUT/.fabricgen/last-run.json is only an aid: whatever is there, a plan reads it as a fact or not at all."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fabricgen.core.errors import Finding, Severity, SourcePosition
from fabricgen.outdir.journal import TMP_PREFIX
from fabricgen.outdir.lastrun import LAST_RUN_FILE, Known, LastRun, read_last_run, settled, write_last_run
from fabricgen.outdir.lock import STATE_DIR

LAST = LastRun("ab" * 32, "spec.yaml",
               (Finding(Severity.WARNING, "dual-homing", "storage", "one port", "two ports",
                        SourcePosition("spec.yaml", 3, 5)),),
               {"a.txt": Known(1, 2, 3, 4, "cd" * 32)}, {"cabling/rows/A.pdf": ("ef" * 32, "cd" * 32)})


def _state(tmp_path: Path) -> Path:
    (tmp_path / STATE_DIR).mkdir(parents=True)
    return tmp_path / STATE_DIR


def test_round_trip(tmp_path: Path) -> None:
    state = _state(tmp_path)
    fd = os.open(state, os.O_RDONLY | os.O_DIRECTORY)
    try:
        write_last_run(fd, LAST, TMP_PREFIX)
    finally:
        os.close(fd)
    assert read_last_run(tmp_path) == LAST


@pytest.mark.parametrize("content", [
    b"", b"{", b"[]", b'{"format": 2}', b'{"format": 1}',
    b'{"format": 1, "inputs": 1, "spec": "", "warnings": [], "files": {}}',
    b'{"format": 1, "inputs": "", "spec": "", "warnings": [], "files": {"a": [1, 2, 3, "4", "x"]}}',
    b'{"format": 1, "inputs": "", "spec": "", "warnings": [{"severity": "fatal"}], "files": {}}',
    b'{"format": 1, "inputs": "", "spec": "", "warnings": [], "files": {}, "renders": {"a": ["k", 1]}}',
    b'{"format": 1, "inputs": "", "spec": "", "warnings": [], "files": {}, "renders": {"a": ["k"]}}',
    b'{"format": 1, "inputs": "", "spec": "", "warnings": [], "files": {}, "renders": []}',
    b'{"format": 1, "inputs": "", "spec": "", "warnings": [], "files": {}, "renders": {"../a": ["k", "s"]}}',
    b'{"format": 1, "inputs": "", "spec": "", "warnings": [], "files": {"a": [1, 2]}}',
    b"\xff\xfe",
])
def test_anything_else_reads_as_nothing_known(tmp_path: Path, content: bytes) -> None:
    (_state(tmp_path) / LAST_RUN_FILE).write_bytes(content)
    assert read_last_run(tmp_path) == LastRun()


def test_a_symlink_is_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside.json"
    outside.write_bytes(LAST.to_bytes())
    out = tmp_path / "out"
    state = _state(out)
    (state / LAST_RUN_FILE).symlink_to(outside)
    assert read_last_run(out) == LastRun()
    fd = os.open(state, os.O_RDONLY | os.O_DIRECTORY)
    try:
        write_last_run(fd, LastRun(), TMP_PREFIX)
    finally:
        os.close(fd)
    assert outside.read_bytes() == LAST.to_bytes() and not (state / LAST_RUN_FILE).is_symlink()


def test_a_recent_file_is_not_trusted_by_its_stat(tmp_path: Path) -> None:
    """Written less than SETTLED_NS before its bytes were known: an edit in the same tick would keep its stat."""
    path = tmp_path / "a.txt"
    path.write_text("a")
    st = path.stat()
    assert settled(st, "ab" * 32, st.st_mtime_ns + 1) is None
    assert settled(st, "ab" * 32, st.st_mtime_ns + 3_000_000_000) == Known(st.st_size, st.st_mtime_ns,
                                                                            st.st_ctime_ns, st.st_ino, "ab" * 32)
