"""What the Kubernetes tests share (tests/unit/features/kubernetes, tests/external/kubernetes): the RoCE compute
spec, its three attachment modes, and the manifests rendered from a spec."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from fabricgen.model.topology import Topology
from fabricgen.pipeline import compile_spec, render_spec
from tests.conftest import REPO

# A RoCE compute fabric with Kubernetes pod networks, and the three ways its pods attach (the spec text each adds).
ROCE = REPO / "tests" / "data" / "kubernetes" / "roce-compute.yaml"
MODES = {
    "operator": "",
    "multus-sriov": "  operator: none\n  cni: sriov\n",
    "multus-host-device": "  operator: none\n  cni: host-device\n  fabrics: [compute]\n",
}
# host-device moves the PFs themselves into pods: the fabric has no VFs (the case a cluster without SR-IOV runs)
WITHOUT_SRIOV = {"multus-host-device"}
SRIOV_SECTION = re.compile(r"^    sriov:\n(?:      .*\n)+", re.MULTILINE)


HELM_VALUES = "kubernetes/network/network-operator-values.yaml"  # Helm values, not a Kubernetes object


def documents(artifacts: dict[str, bytes]) -> list[dict[str, Any]]:
    """Every Kubernetes object of the kubernetes/ artifacts (every YAML document but the Helm values), in path
    order."""
    return [d for path, content in sorted(artifacts.items()) if path.startswith("kubernetes/") and path != HELM_VALUES
            for d in yaml.safe_load_all(content) if d is not None]


def manifests(spec: Path, mode: str, tmp_path: Path) -> tuple[Topology, dict[str, bytes]]:
    """The spec in one of the MODES, compiled, and its kubernetes and k8s-workloads targets rendered."""
    text = spec.read_text().replace("kubernetes:\n", "kubernetes:\n" + MODES[mode], 1)
    if mode in WITHOUT_SRIOV:
        text, dropped = SRIOV_SECTION.subn("", text)
        assert dropped, f"{spec.name} has no sriov section to drop"
    path = tmp_path / spec.name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    compiled = compile_spec(path)
    return compiled.topology, {a.path: a.content for a in render_spec(compiled, ["kubernetes", "k8s-workloads"])}
