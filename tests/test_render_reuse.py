"""plan and apply take a row's cable workbook and PDF from OUT where the last apply serialized the same input
(core/reuse.py): the output is byte for byte a fresh apply's, a row whose sheets change is serialized again, and a
file in OUT that is not the bytes recorded for its key (edited, replaced by a symlink) is never taken."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

import fabricgen.core.inputs
from fabricgen.cli import app
from fabricgen.features.cabling import printout, workbook
from fabricgen.features.cabling.handoff import RowSheets
from fabricgen.outdir.lastrun import LAST_RUN_FILE, prior_renders, read_last_run
from fabricgen.outdir.lock import STATE_DIR
from tests.conftest import INVENTORIES

LAB = INVENTORIES / "lab-1su.yaml"
ROW_FILES = ["cabling/rows/L.pdf", "cabling/rows/L.xlsx", "cabling/rows/M.pdf", "cabling/rows/M.xlsx"]
runner = CliRunner()


@pytest.fixture
def serialized(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The row files serialized (not taken from OUT), as their paths."""
    calls: list[str] = []

    def counting(suffix: str, serialize: Callable[[RowSheets, str], bytes]) -> Callable[[RowSheets, str], bytes]:
        def wrapper(sheets: RowSheets, head: str) -> bytes:
            calls.append(f"cabling/rows/{sheets.row}.{suffix}")
            return serialize(sheets, head)
        return wrapper

    monkeypatch.setattr(workbook, "row_workbook", counting("xlsx", workbook.row_workbook))
    monkeypatch.setattr(printout, "row_pdf", counting("pdf", printout.row_pdf))
    yield calls


def _apply(spec: Path, out: Path) -> None:
    result = runner.invoke(app, ["apply", str(spec), "-o", str(out), "--yes"])
    assert result.exit_code == 0, result.output


def _tree(out: Path) -> dict[str, bytes]:
    """OUT's files but fabricgen's machine-local state (last-run.json's inodes and times)."""
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*"))
            if p.is_file() and STATE_DIR not in p.relative_to(out).parts}


def _fresh(spec: Path, tmp_path: Path) -> dict[str, bytes]:
    out = tmp_path / "fresh"
    _apply(spec, out)
    return _tree(out)


def test_apply_records_each_row_files_key_with_the_bytes_it_left(tmp_path: Path) -> None:
    out = tmp_path / "out"
    _apply(LAB, out)
    renders = read_last_run(out).renders
    assert sorted(renders) == ROW_FILES
    assert all(hashlib.sha256((out / path).read_bytes()).hexdigest() == sha for path, (_, sha) in renders.items())
    assert sorted(prior_renders(out)) == sorted(key for key, _ in renders.values())


def test_a_change_that_leaves_the_sheets_reuses_every_row_file(tmp_path: Path, serialized: list[str]) -> None:
    out, spec = tmp_path / "out", tmp_path / "lab.yaml"
    spec.write_text(LAB.read_text())
    _apply(spec, out)
    assert sorted(serialized) == ROW_FILES
    serialized.clear()
    spec.write_text(LAB.read_text() + "# a comment: a new spec digest, the same sheets\n")
    _apply(spec, out)
    assert serialized == []
    assert _tree(out) == _fresh(spec, tmp_path)


def test_a_node_fewer_serializes_the_rows_whose_sheets_change_and_matches_a_fresh_apply(
        tmp_path: Path, serialized: list[str]) -> None:
    out, spec = tmp_path / "out", tmp_path / "lab.yaml"
    spec.write_text(LAB.read_text())
    _apply(spec, out)
    before = _tree(out)
    serialized.clear()
    text = LAB.read_text()
    spec.write_text(text.replace("    count: 8\n", "    count: 7\n")
                    .replace("{name: hgx08, priority: 14}", "{name: hgx07, priority: 14}"))
    _apply(spec, out)
    changed = sorted(path for path in ROW_FILES if _tree(out)[path] != before[path])
    assert changed and sorted(serialized) == changed
    serialized.clear()
    assert _tree(out) == _fresh(spec, tmp_path)


@pytest.mark.parametrize("tamper", ["edit", "symlink"])
def test_a_row_file_that_is_not_its_recorded_bytes_is_rendered_again(tmp_path: Path, serialized: list[str],
                                                                      tamper: str) -> None:
    out = tmp_path / "out"
    _apply(LAB, out)
    good = (out / "cabling/rows/L.pdf").read_bytes()
    target = out / "cabling/rows/L.pdf"
    target.unlink()
    if tamper == "edit":
        target.write_bytes(good[:-10] + b"tampered\n\n")
    else:  # the right bytes, outside OUT: never read through a symlink
        (tmp_path / "elsewhere.pdf").write_bytes(good)
        target.symlink_to(tmp_path / "elsewhere.pdf")
    serialized.clear()
    assert "cabling/rows/L.pdf" not in {p for p, (k, _) in read_last_run(out).renders.items()
                                         if k in prior_renders(out)}
    result = runner.invoke(app, ["apply", str(LAB), "-o", str(out), "--yes", "--force"])
    assert result.exit_code == 0, result.output
    assert serialized == ["cabling/rows/L.pdf"]
    assert not target.is_symlink() and target.read_bytes() == good


def test_other_code_takes_no_row_file(tmp_path: Path, serialized: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    _apply(LAB, out)
    serialized.clear()
    monkeypatch.setattr(fabricgen.core.inputs, "code_fingerprint", lambda: "0" * 64)
    _apply(LAB, out)
    assert sorted(serialized) == ROW_FILES


def test_a_last_run_file_without_renders_offers_nothing(tmp_path: Path, serialized: list[str]) -> None:
    """As an earlier fabricgen wrote it: read as before, no reuse, and the next apply records the keys."""
    out = tmp_path / "out"
    _apply(LAB, out)
    state = out / STATE_DIR / LAST_RUN_FILE
    doc = json.loads(state.read_text())
    del doc["renders"]
    state.write_text(json.dumps(doc))
    assert read_last_run(out).inputs and prior_renders(out) == {}
    serialized.clear()
    result = runner.invoke(app, ["apply", str(LAB), "-o", str(out), "--yes", "--full"])
    assert result.exit_code == 0, result.output
    assert sorted(serialized) == ROW_FILES and sorted(read_last_run(out).renders) == ROW_FILES
