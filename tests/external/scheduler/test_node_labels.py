"""label-nodes.sh (the one node-labelling script: profile and topology labels) through its consumers: shellcheck
passes it, and it runs against the real kubectl (offline, through tests/data/scheduler/fake-kubectl, which keeps
nodes as files and lets kubectl evaluate the script's JSONPath and parse and apply its label arguments): the first
run labels every node present with the plan's values and exits 3 naming the absent one, a second run changes
nothing, --dry-run changes nothing, and the absent node, once it joins, is the only one labelled next time."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import yaml

from fabricgen.features.kubernetes import nodes as labelling
from fabricgen.pipeline import compile_spec, render_spec
from tests.conftest import INVENTORIES, REPO, require_tool

FAKE = REPO / "tests" / "data" / "scheduler" / "fake-kubectl"
SCRIPT = "kubernetes/label-nodes.sh"


def _node(directory: Path, name: str) -> None:
    (directory / f"{name}.yaml").write_text(yaml.safe_dump(
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}}}))


def _labels(directory: Path) -> dict[str, dict[str, str]]:
    out = {}
    for path in sorted(directory.glob("*.yaml")):
        doc = yaml.safe_load(path.read_text())
        out[doc["metadata"]["name"]] = doc["metadata"]["labels"]
    return out


def test_shellcheck_passes(tmp_path: Path) -> None:
    shellcheck = require_tool("shellcheck")
    for spec in ("lab-1su", "h100-4su"):
        files = {a.path: a for a in render_spec(compile_spec(INVENTORIES / f"{spec}.yaml"), ["k8s-nodes"])}
        script = tmp_path / f"{spec}.sh"
        script.write_bytes(files[SCRIPT].content)
        assert files[SCRIPT].mode == 0o755
        done = subprocess.run([shellcheck, "-x", str(script)], capture_output=True, text=True)
        assert done.returncode == 0, done.stdout


def test_labels_applied_once_through_kubectl(tmp_path: Path) -> None:
    kubectl = require_tool("kubectl")
    compiled = compile_spec(INVENTORIES / "lab-1su.yaml")
    files = {a.path: a for a in render_spec(compiled, ["k8s-nodes"])}
    script = tmp_path / "label-nodes.sh"
    script.write_bytes(files[SCRIPT].content)
    planned = labelling.planned_labels(compiled.topology)
    nodes = tmp_path / "nodes"
    nodes.mkdir()
    for name in sorted(planned)[:-1]:
        _node(nodes, name)
    absent = sorted(planned)[-1]
    env = {**os.environ, "KUBECTL": str(FAKE), "REAL_KUBECTL": kubectl, "FAKE_KUBE": str(tmp_path)}
    calls = tmp_path / "calls"

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["bash", str(script), *args], env=env, capture_output=True, text=True, timeout=120)

    dry = run("--dry-run")
    assert dry.returncode == 3 and not calls.exists(), dry.stderr
    assert all(labels == {"kubernetes.io/hostname": name} for name, labels in _labels(nodes).items())

    first = run()
    assert first.returncode == 3, first.stderr
    assert f"not in the cluster, not labelled: {absent}" in first.stdout
    assert f"{len(planned) - 1} node(s) labelled" in first.stdout
    for name, labels in _labels(nodes).items():
        assert labels == {"kubernetes.io/hostname": name, **planned[name]}
    assert len(calls.read_text().splitlines()) == len(planned) - 1

    second = run()
    assert second.returncode == 3 and "nothing to change" in second.stdout
    assert len(calls.read_text().splitlines()) == len(planned) - 1

    _node(nodes, absent)
    third = run()
    assert third.returncode == 0, third.stdout + third.stderr
    assert "1 node(s) labelled" in third.stdout
    assert _labels(nodes)[absent] == {"kubernetes.io/hostname": absent, **planned[absent]}
    assert calls.read_text().splitlines()[-1].startswith("--overwrite ")
