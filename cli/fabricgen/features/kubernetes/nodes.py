"""How the generated objects find their nodes: every node carries its node profile's name under
:data:`PROFILE_LABEL`, applied by ``kubernetes/label-nodes.sh`` from the plan."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import Any

from fabricgen.core.artifacts import Artifact
from fabricgen.core.naming import DEVICE_NAME, IDENTIFIER, checked
from fabricgen.core.templating import render_template
from fabricgen.features.kubernetes.build import pod_profiles
from fabricgen.model.topology import Topology

PROFILE_LABEL = "fabricgen.dev/node-profile"


def profile_affinity(profiles: Sequence[str]) -> dict[str, Any]:
    """A pod affinity to the nodes of ``profiles`` (a DaemonSet runs only there)."""
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": PROFILE_LABEL, "operator": "In", "values": list(profiles)}]}]}}}


def selected_profiles(topology: Topology) -> set[str]:
    """The node profiles some generated object selects: the pod networks', the workload's, the NVMe cache's."""
    cluster, k8s = topology.cluster, topology.cluster.kubernetes
    profiles = {n.profile.name for n in cluster.nodes if n.profile.local_nvme is not None}
    if k8s is not None:
        profiles |= {name for ft in topology.fabrics if ft.fabric.name in k8s.fabrics
                     for name, _ in pod_profiles(ft.fabric, cluster.nodes)}
        profiles |= {k8s.workload.profile} if k8s.workload is not None else set()
    return profiles


def render(topology: Topology) -> list[Artifact]:
    """``kubernetes/label-nodes.sh``: labels every node of a selected profile with its profile's name."""
    profiles = selected_profiles(topology)
    if not profiles:
        return []
    nodes = [(checked(DEVICE_NAME, n.name, "node name"), checked(IDENTIFIER, n.profile.name, "profile name"))
             for n in topology.cluster.nodes if n.profile.name in profiles]
    return [Artifact("kubernetes/label-nodes.sh", render_template(
        "kubernetes/label-nodes.sh.j2", cluster=checked(DEVICE_NAME, topology.cluster.metadata.name, "cluster name"),
        label=PROFILE_LABEL, source=PurePosixPath(topology.cluster.source).name, nodes=nodes), 0o755)]
