"""label-nodes.sh, the one script that labels nodes from the plan, against a stub kubectl: every planned node gets
its profile label (where a generated object selects the profile), its pod ports' leaves (fabrics with per-leaf pod
ranges) and its topology labels (where it is scheduled),
a second run changes nothing, a node the cluster lacks is reported (exit 3) while the others are still labelled, and
--dry-run changes nothing. shellcheck checks the script in tests/external/kubernetes/test_nodes.py, the real
kubectl runs it in tests/external/scheduler/test_node_labels.py."""

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
def planned() -> tuple[bytes, dict[str, dict[str, str]]]:
    topology = compile_spec(INVENTORIES / "h100-4su.yaml").topology
    (artifact,) = nodes.render(topology)
    assert artifact.path == "kubernetes/label-nodes.sh" and artifact.mode == 0o755
    return artifact.content, nodes.planned_labels(topology)


def _cluster(tmp_path: Path, script: bytes, names: list[str]) -> ScriptHost:
    for name in names:
        write(tmp_path / "state" / "nodes" / name, "")
    shutil.copy(STUB, tmp_path / "kubectl")
    (tmp_path / "label-nodes.sh").write_bytes(script)
    return ScriptHost(tmp_path, tmp_path / "label-nodes.sh",
                      {**os.environ, "KUBECTL": str(tmp_path / "kubectl"), "STUB_STATE": str(tmp_path / "state")})


def _labels(tmp_path: Path, name: str) -> dict[str, str]:
    lines = (tmp_path / "state" / "nodes" / name).read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if line)


def test_both_label_sets_are_planned() -> None:
    topology = compile_spec(INVENTORIES / "h100-4su.yaml").topology
    labels = nodes.planned_labels(topology)["gpu001"]
    # the storage ports' leaves: their nv-ipam pools and attachments select on them (per-leaf pod ranges)
    assert labels == {nodes.PROFILE_LABEL: "dgx-h100", "fabricgen.dev/storage-port0-leaf": "storage-leaf001",
                      "fabricgen.dev/storage-port1-leaf": "storage-leaf002", "fabricgen.dev/topology": "compute",
                      "fabric.topograph.run/tier-0": "compute-su01", "fabric.topograph.run/tier-1": "compute-spines",
                      "fabricgen.dev/rack": "A01"}
    assert "ufm01" not in nodes.planned_labels(topology), "UFM runs no pods and takes no jobs"


def test_labels_every_planned_dgx_node_once(tmp_path: Path, planned: tuple[bytes, dict[str, dict[str, str]]]) -> None:
    script, labels = planned
    gpus = [f"gpu{n:03d}" for n in range(1, 128)]
    cluster = _cluster(tmp_path, script, [*gpus, "ufm01", "cpu-login01"])
    first = cluster.run()
    assert first.returncode == 0, first.stderr
    assert first.stdout.endswith("label-nodes: 127 node(s) labelled\n")
    assert all(_labels(tmp_path, g) == labels[g] for g in gpus)
    assert _labels(tmp_path, "ufm01") == {}, "UFM runs no pods: not selected"
    calls = len(cluster.calls)
    again = cluster.run()
    assert again.stdout == "label-nodes: nothing to change: every node found carries its planned labels\n"
    assert not [c for c in cluster.calls[calls:] if " label " in c]


def test_a_missing_node_is_reported_and_the_others_labelled(
        tmp_path: Path, planned: tuple[bytes, dict[str, dict[str, str]]]) -> None:
    script, labels = planned
    cluster = _cluster(tmp_path, script, [f"gpu{n:03d}" for n in range(1, 128) if n != 7])
    write(tmp_path / "state" / "nodes" / "gpu002", "\n".join(f"{k}={v}" for k, v in labels["gpu002"].items()))
    write(tmp_path / "state" / "nodes" / "gpu003", "fabricgen.dev/node-profile=hgx-old\n")
    done = cluster.run()
    assert done.returncode == 3
    assert "label-nodes: not in the cluster, not labelled: gpu007" in done.stdout
    assert "label node gpu003" in done.stdout and "label node gpu002" not in done.stdout
    assert _labels(tmp_path, "gpu003") == labels["gpu003"]
    assert (tmp_path / "state" / "nodes" / "gpu128").exists() is False
    assert _labels(tmp_path, "gpu127") == labels["gpu127"]


def test_dry_run_changes_nothing(tmp_path: Path, planned: tuple[bytes, dict[str, dict[str, str]]]) -> None:
    cluster = _cluster(tmp_path, planned[0], ["gpu001"])
    before = cluster.snapshot()
    done = cluster.run("--dry-run")
    assert "would label node gpu001: " in done.stdout and "fabricgen.dev/node-profile=dgx-h100" in done.stdout
    assert cluster.snapshot() == before and not [c for c in cluster.calls if " label " in c]
