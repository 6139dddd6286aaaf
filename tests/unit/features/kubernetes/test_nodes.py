"""label-nodes.sh against a stub kubectl: every planned node of a selected profile gets its profile label, a second
run changes nothing, a node the cluster lacks is reported (exit 1) while the others are still labelled, and --dry-run
changes nothing. shellcheck checks the script in tests/external/kubernetes/test_nodes.py."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from fabricgen.features.kubernetes import nodes
from fabricgen.pipeline import compile_spec
from tests.conftest import INVENTORIES, REPO
from tests.helpers.fake_host import ScriptHost, write

STUB = REPO / "tests" / "data" / "fake-kubectl" / "kubectl"


@pytest.fixture(scope="module")
def script() -> bytes:
    (artifact,) = nodes.render(compile_spec(INVENTORIES / "h100-4su.yaml").topology)
    assert artifact.path == "kubernetes/label-nodes.sh" and artifact.mode == 0o755
    return artifact.content


def _cluster(tmp_path: Path, script: bytes, names: list[str]) -> ScriptHost:
    for name in names:
        write(tmp_path / "state" / "nodes" / name, "")
    shutil.copy(STUB, tmp_path / "kubectl")
    (tmp_path / "label-nodes.sh").write_bytes(script)
    return ScriptHost(tmp_path, tmp_path / "label-nodes.sh",
                      {**os.environ, "KUBECTL": str(tmp_path / "kubectl"), "STUB_STATE": str(tmp_path / "state")})


def test_labels_every_planned_dgx_node_once(tmp_path: Path, script: bytes) -> None:
    gpus = [f"gpu{n:03d}" for n in range(1, 128)]
    cluster = _cluster(tmp_path, script, [*gpus, "ufm01", "cpu-login01"])
    first = cluster.run()
    assert first.returncode == 0, first.stderr
    assert first.stdout.endswith("label-nodes: 127 nodes labelled\n")
    assert all((tmp_path / "state" / "nodes" / g).read_text() == "dgx-h100\n" for g in gpus)
    assert (tmp_path / "state" / "nodes" / "ufm01").read_text() == "\n", "UFM runs no pods: not selected"
    calls = len(cluster.calls)
    again = cluster.run()
    assert again.stdout == "label-nodes: nothing to change: every node found carries its profile\n"
    assert not [c for c in cluster.calls[calls:] if " label " in c]


def test_a_missing_node_is_reported_and_the_others_labelled(tmp_path: Path, script: bytes) -> None:
    cluster = _cluster(tmp_path, script, [f"gpu{n:03d}" for n in range(1, 128) if n != 7])
    write(tmp_path / "state" / "nodes" / "gpu002", "hgx-old")
    done = cluster.run()
    assert done.returncode == 1
    assert "label-nodes: error: not in the cluster: gpu007" in done.stderr
    assert "node gpu002: fabricgen.dev/node-profile=dgx-h100 (was hgx-old)" in done.stdout
    assert (tmp_path / "state" / "nodes" / "gpu128").exists() is False
    assert (tmp_path / "state" / "nodes" / "gpu127").read_text() == "dgx-h100\n"


def test_dry_run_changes_nothing(tmp_path: Path, script: bytes) -> None:
    cluster = _cluster(tmp_path, script, ["gpu001"])
    before = cluster.snapshot()
    done = cluster.run("--dry-run")
    assert "would node gpu001: fabricgen.dev/node-profile=dgx-h100 (was unset): " in done.stdout
    assert cluster.snapshot() == before and not [c for c in cluster.calls if " label " in c]
