"""plan and apply without compiling when the inputs and OUT are those of the last apply (README "plan and apply"):
the same report as the full path, and the full path whenever anything differs (an edit in OUT, a deleted file,
the spec, a file it names, fabricgen's own files or version, the record of the last run)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import fabricgen.cli
from fabricgen.cli import app
from fabricgen.core import inputs
from fabricgen.features.infiniband.view import ib_fabric
from fabricgen.outdir import lastrun, plan
from fabricgen.outdir.journal import STAGING_PREFIX
from fabricgen.outdir.lastrun import LAST_RUN_FILE
from fabricgen.outdir.lock import LOCK_FILE, STATE_DIR
from fabricgen.pipeline import compile_spec
from tests.conftest import INVENTORIES

LAB = INVENTORIES / "lab-1su.yaml"
runner = CliRunner()


@pytest.fixture
def compiles(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Path]]:
    """The specs the CLI compiled (through its one compile-render-compare path), in order."""
    calls: list[Path] = []
    full = fabricgen.cli._plan

    def counted(spec: Path, out: Path | None) -> Any:
        calls.append(spec)
        return full(spec, out)

    monkeypatch.setattr(fabricgen.cli, "_plan", counted)
    yield calls


def run(*args: str) -> Any:
    result = runner.invoke(app, list(args))
    assert result.exit_code in (0, 2), result.output
    return result


def applied(spec: Path, out: Path) -> None:
    assert runner.invoke(app, ["apply", str(spec), "-o", str(out), "--yes"]).exit_code == 0


def test_no_change_plan_and_apply_report_the_full_path_without_compiling(tmp_path: Path,
                                                                          compiles: list[Path]) -> None:
    out = tmp_path / "out"
    applied(LAB, out)
    full_text = run("plan", str(LAB), "-o", str(out), "--full").output
    full_json = json.loads(run("plan", str(LAB), "-o", str(out), "--full", "--json").stdout)
    compiles.clear()

    text = run("plan", str(LAB), "-o", str(out), "--detailed-exitcode")
    as_json = json.loads(run("plan", str(LAB), "-o", str(out), "--json").stdout)
    lock, mtimes = (out / LOCK_FILE).read_bytes(), {p: p.stat().st_mtime_ns for p in out.rglob("*")}
    again = run("apply", str(LAB), "-o", str(out), "--yes")

    assert compiles == []
    assert text.exit_code == 0 and text.output == full_text and "No changes" in text.output
    assert "warning: [dual-homing]" in text.output  # the last compile's warnings, said again
    assert as_json == full_json
    assert "No changes" in again.output and "Applied" not in again.output
    assert (out / LOCK_FILE).read_bytes() == lock
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*") if STATE_DIR not in p.parts} == {
        p: m for p, m in mtimes.items() if STATE_DIR not in p.parts}


def _edit_file(out: Path, spec: Path) -> Path:
    (out / "topology" / "summary.yaml").write_text("# hand edit\n")
    return spec


def _delete_file(out: Path, spec: Path) -> Path:
    (out / "topology" / "summary.yaml").unlink()
    return spec


def _edit_spec(out: Path, spec: Path) -> Path:
    spec.write_text(spec.read_text() + "# a comment changes the bytes, so the digest\n")
    return spec


def _other_code(out: Path, spec: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A catalog, NOS data file, template or module of fabricgen changed: its fingerprint differs."""
    monkeypatch.setattr(inputs, "code_fingerprint", lambda: "0" * 64)
    return spec


def _other_version(out: Path, spec: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(fabricgen.cli, "__version__", "9.9.9")
    return spec


def _garbled_last_run(out: Path, spec: Path) -> Path:
    (out / STATE_DIR / LAST_RUN_FILE).write_text("{not json")
    return spec


def _staging_residue(out: Path, spec: Path) -> Path:
    """An apply killed before its commit point: the full path removes the residue (after compiling)."""
    (out / STATE_DIR / f"{STAGING_PREFIX}0123456789abcdef").mkdir()
    return spec


def _spec_named_otherwise(out: Path, spec: Path) -> Path:
    """The warnings name the spec as given; named another way, they are compiled again."""
    return Path(os.path.relpath(spec))


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (_edit_file, "edited by hand since the last apply"),
        (_delete_file, "deleted by hand since the last apply"),
        (_edit_spec, "to update"),  # the sheets print the spec digest
        (_other_code, "No changes. The lock file will be refreshed"),
        (_other_version, "No changes. The lock file will be refreshed"),
        (_garbled_last_run, "No changes"),
        (_staging_residue, "No changes"),
        (_spec_named_otherwise, "No changes"),
    ],
)
def test_anything_changed_takes_the_full_path(tmp_path: Path, compiles: list[Path], monkeypatch: pytest.MonkeyPatch,
                                              change: Callable[..., Path], expected: str) -> None:
    spec, out = tmp_path / "lab-1su.yaml", tmp_path / "out"
    spec.write_text(LAB.read_text())
    applied(spec, out)
    compiles.clear()
    args = (out, spec, monkeypatch) if change in (_other_code, _other_version) else (out, spec)
    spec = change(*args)

    result = run("plan", str(spec), "-o", str(out))

    assert compiles == [spec]
    assert expected in result.output
    assert result.output == run("plan", str(spec), "-o", str(out), "--full").output
    assert not any(p.name.startswith(STAGING_PREFIX) for p in (out / STATE_DIR).iterdir())


def test_a_changed_guid_inventory_is_an_input(tmp_path: Path, compiles: list[Path]) -> None:
    compiled = compile_spec(LAB)
    ib = ib_fabric(compiled.topology, compiled.topology.fabric("compute"))
    rows = ["device,rdma_dev,node_guid,port_guid"]
    for i, node in enumerate(ib.nodes):
        device, _, dev = node.description.partition(" ")
        rows.append(f"{device},{dev},0x{0xE41D2D0300000000 + 16 * i:016x},0x{0xE41D2D0300000000 + 16 * i + 1:016x}")
    inventory = tmp_path / "site" / "guids.csv"
    inventory.parent.mkdir()
    inventory.write_text("\n".join(rows) + "\n")
    spec, out = tmp_path / "site" / "site.yaml", tmp_path / "out"
    spec.write_text(LAB.read_text().replace("guids: simulated", "guids: {file: guids.csv}"))
    applied(spec, out)
    assert json.loads((out / LOCK_FILE).read_text())["inputs"]["named_files"] == ["guids.csv"]
    compiles.clear()
    assert "No changes" in run("plan", str(spec), "-o", str(out)).output and compiles == []

    inventory.write_text(inventory.read_text().replace("0xe41d2d0300000000", "0xe41d2d03000000ff", 1))
    changed = run("plan", str(spec), "-o", str(out), "--detailed-exitcode")

    assert compiles == [spec]
    assert changed.exit_code == 2 and "infiniband/compute/topology.net" in changed.output


def test_a_trusted_stat_is_not_read_and_a_same_size_edit_is_still_drift(
        tmp_path: Path, compiles: list[Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lastrun, "SETTLED_NS", 0)  # the files were written just now; trust them at once
    out = tmp_path / "out"
    applied(LAB, out)
    recorded = json.loads((out / STATE_DIR / LAST_RUN_FILE).read_text())["files"]
    assert set(recorded) == set(json.loads((out / LOCK_FILE).read_text())["files"])
    compiles.clear()
    real_digest = plan.file_digest

    def unread(path: Path) -> str | None:
        raise AssertionError(f"{path} was read although its stat matched")

    monkeypatch.setattr(plan, "file_digest", unread)
    assert "No changes" in run("plan", str(LAB), "-o", str(out)).output and compiles == []

    monkeypatch.setattr(plan, "file_digest", real_digest)
    edited = out / "topology" / "summary.yaml"
    text = edited.read_text()
    edited.write_text(text.replace("a", "b", 1) if "a" in text else text.replace("e", "f", 1))  # same size
    result = run("plan", str(LAB), "-o", str(out))

    assert compiles == [LAB]
    assert "topology/summary.yaml  (drift; " in result.output


def test_a_symlink_on_the_way_is_refused_as_by_the_full_path(tmp_path: Path, compiles: list[Path]) -> None:
    out = tmp_path / "out"
    applied(LAB, out)
    moved = tmp_path / "elsewhere"
    (out / "topology").rename(moved)
    (out / "topology").symlink_to(moved)
    compiles.clear()

    result = runner.invoke(app, ["plan", str(LAB), "-o", str(out)])

    assert result.exit_code == 1 and "symlink" in result.output and compiles == [LAB]


def test_the_fingerprint_covers_data_and_templates(tmp_path: Path) -> None:
    package, templates = tmp_path / "fabricgen", tmp_path / "templates"
    (package / "data" / "catalog").mkdir(parents=True)
    (templates / "eos").mkdir(parents=True)
    (package / "data" / "catalog" / "switches.yaml").write_text("SN5600: {ports: 64}\n")
    (templates / "eos" / "leaf.cfg.j2").write_text("hostname {{ name }}\n")
    (package / "__pycache__").mkdir()
    before = inputs.tree_fingerprint([package, templates], ["3.11"])

    (package / "__pycache__" / "x.pyc").write_bytes(b"bytecode")
    assert inputs.tree_fingerprint([package, templates], ["3.11"]) == before
    (templates / "eos" / "leaf.cfg.j2").write_text("hostname {{ name }}!\n")
    after_template = inputs.tree_fingerprint([package, templates], ["3.11"])
    (package / "data" / "catalog" / "switches.yaml").write_text("SN5600: {ports: 32}\n")
    after_catalog = inputs.tree_fingerprint([package, templates], ["3.11"])

    assert len({before, after_template, after_catalog, inputs.tree_fingerprint([package, templates], ["3.12"])}) == 4
