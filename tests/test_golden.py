"""Golden files: the example inventories render exactly the committed trees (regenerate with --update-goldens
and review the diff), and rendering is byte-identical across processes with different hash seeds."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from fabricgen.pipeline import compile_spec, render_spec
from tests.conftest import INVENTORIES, REPO

GOLDEN = REPO / "tests" / "golden"
CASES = ["lab-1su", "h100-4su", "ref-256", "spectrumx-1su", "aws-p5-efa", "alicloud-erdma", "gcp-a3-tcpxo"]


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("case", CASES)
def test_golden_tree(case: str, update_goldens: bool) -> None:
    artifacts = render_spec(compile_spec(INVENTORIES / f"{case}.yaml"))
    rendered = {a.path: a.content for a in artifacts}
    expected_dir = GOLDEN / case
    if update_goldens:
        _rewrite(expected_dir, rendered)
    expected = _tree(expected_dir)
    assert sorted(rendered) == sorted(expected), "artifact set changed; run make golden and review"
    for path, content in rendered.items():
        same = _unzipped(content) == _unzipped(expected[path]) if path.endswith(".xlsx") else content == expected[path]
        assert same, f"{case}/{path} differs from its golden; run make golden and review"


def _rewrite(directory: Path, rendered: dict[str, bytes]) -> None:
    """Replace a golden tree with what was rendered (``--update-goldens``; review the diff)."""
    shutil.rmtree(directory, ignore_errors=True)
    for path, content in rendered.items():
        (directory / path).parent.mkdir(parents=True, exist_ok=True)
        (directory / path).write_bytes(content)


def _unzipped(content: bytes) -> dict[str, bytes]:
    """An XLSX compared by its parts: the deflate stream may differ across zlib builds, the XML may not."""
    with zipfile.ZipFile(io.BytesIO(content)) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


# The example's storage fabric in the other two switch dialects (EOS on Arista switches), and on SONiC with the
# dynamic buffer model, without and with a shared headroom pool (the traditional model runs each SKU's own
# buffers): only the switch configs are kept as goldens. Each case is one
# edit of the example: (text, replacement).
WATCHDOG = "action: drop}\n"
DIALECTS = {
    "h100-4su-eos": ("    switch: SN5600\n    nos: sonic\n", "    switch: {leaf: 7060DX5-64S, spine: 7060X6-64PE}\n"
                     "    nos: eos\n"),
    "h100-4su-nvue": ("    switch: SN5600\n    nos: sonic\n", "    switch: SN5600\n    nos: nvue\n"),
    "h100-4su-sonic-dynamic": (WATCHDOG, f"{WATCHDOG}      buffer_model: dynamic\n"),
    "h100-4su-sonic-shp": (WATCHDOG, f"{WATCHDOG}      buffer_model: dynamic\n"
                                     "      shared_headroom_pool: {over_subscribe_ratio: 2}\n"),
}


@pytest.mark.parametrize("case", sorted(DIALECTS))
def test_golden_switch_dialects(case: str, update_goldens: bool, tmp_path: Path) -> None:
    text, (old, new) = (INVENTORIES / "h100-4su.yaml").read_text(), DIALECTS[case]
    assert text.count(old) == 1, old
    spec = tmp_path / "h100-4su.yaml"
    spec.write_text(text.replace(old, new))
    rendered = {a.path: a.content for a in render_spec(compile_spec(spec)) if a.path.startswith("switches/")}
    expected_dir = GOLDEN / case
    if update_goldens:
        _rewrite(expected_dir, rendered)
    assert rendered == _tree(expected_dir), f"{case} differs from its golden; run make golden and review"


# No example inventory knows its GPUs' PCI addresses (no NVIDIA page lists a DGX H100's), so the NCCL topology
# file's golden comes from the lab cluster with the PCI tree of IBM Cloud's recorded H100 (tests/data/nccl): the
# node profile's files only.
NCCL_TOPOLOGY_SPEC = REPO / "tests" / "data" / "nccl" / "h100-vsi.yaml"


def test_golden_nccl_topology(update_goldens: bool) -> None:
    rendered = {a.path: a.content for a in render_spec(compile_spec(NCCL_TOPOLOGY_SPEC))
                if a.path.startswith("hosts/h100-vsi/nccl")}
    assert "hosts/h100-vsi/nccl-topo.xml" in rendered
    expected_dir = GOLDEN / "lab-1su-nccl-topology"
    if update_goldens:
        _rewrite(expected_dir, rendered)
    assert rendered == _tree(expected_dir), "the NCCL topology golden differs; run make golden and review"


def _apply(spec: Path, out: Path, seed: str) -> dict[str, bytes]:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    subprocess.run([sys.executable, "-m", "fabricgen", "apply", str(spec), "-o", str(out), "--yes"],
                   check=True, env=env, capture_output=True, cwd=out.parent)
    return {k: v for k, v in _tree(out).items() if not k.startswith(".fabricgen/")}


def test_byte_identical_across_processes(tmp_path: Path) -> None:
    spec = INVENTORIES / "h100-4su.yaml"
    first = _apply(spec, tmp_path / "a", "1")
    second = _apply(spec, tmp_path / "b", "2")
    assert first == second
    assert "fabricgen.lock.json" in first
    assert not any(str(tmp_path).encode() in content for content in first.values()), "absolute path leaked"


def test_h100_reference_counts() -> None:
    """The bundled 4-SU example reproduces NVIDIA's H100 SuperPOD compute fabric counts."""
    compute = compile_spec(INVENTORIES / "h100-4su.yaml").topology.fabric("compute")
    tiers = {t: len(compute.links_in(t)) for t in ("node-leaf", "leaf-spine")}
    assert (len(compute.switches_in(compute.switches[0].tier)), tiers) == (32, {"node-leaf": 1020,
                                                                                "leaf-spine": 1024})
    assert len([s for s in compute.switches if s.tier.value == "spine"]) == 16
