"""How the generated objects and the schedulers find their nodes: ``kubernetes/label-nodes.sh``, the one script
that labels nodes from the plan, gives every node of a selected profile its profile's name under
:data:`PROFILE_LABEL` and every scheduled node its place in the fabric (the scheduler's topology labels)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import Any

from fabricgen.core.artifacts import Artifact
from fabricgen.core.naming import DEVICE_NAME, IDENTIFIER, checked
from fabricgen.core.templating import render_template
from fabricgen.features.kubernetes.build import pod_profiles
from fabricgen.features.scheduler.kubernetes import planned_labels as topology_labels
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


def planned_labels(topology: Topology) -> dict[str, dict[str, str]]:
    """Every labelled node's labels by key, in cluster order: its profile (if some object selects it), then its
    topology labels (if it is scheduled)."""
    profiles = selected_profiles(topology)
    topology_of = topology_labels(topology)
    out: dict[str, dict[str, str]] = {}
    for node in topology.cluster.nodes:
        labels = ({PROFILE_LABEL: checked(IDENTIFIER, node.profile.name, "profile name")}
                  if node.profile.name in profiles else {})
        labels |= topology_of.get(node.name, {})
        if labels:
            out[node.name] = labels
    return out


def render(topology: Topology) -> list[Artifact]:
    """``kubernetes/label-nodes.sh``: labels every planned node with its profile and its place in the fabric."""
    planned = planned_labels(topology)
    if not planned:
        return []
    keys = list(dict.fromkeys(key for labels in planned.values() for key in labels))
    nodes = [(checked(DEVICE_NAME, name, "node name"), [f"{k}={v}" for k, v in labels.items()])
             for name, labels in planned.items()]
    return [Artifact("kubernetes/label-nodes.sh", render_template(
        "kubernetes/label-nodes.sh.j2", cluster=checked(DEVICE_NAME, topology.cluster.metadata.name, "cluster name"),
        keys=keys, source=PurePosixPath(topology.cluster.source).name, nodes=nodes), 0o755)]
