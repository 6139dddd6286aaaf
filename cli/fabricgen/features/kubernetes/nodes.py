"""How the generated objects and the schedulers find their nodes: ``kubernetes/label-nodes.sh``, the one script
that labels nodes from the plan, gives every node of a selected profile its profile's name under
:data:`PROFILE_LABEL`, every pod port on a fabric with per-leaf pod ranges its leaf (:func:`leaf_label`: the leaf's
nv-ipam pool and network attachment select on it) and every scheduled node its place in the fabric (the scheduler's
topology labels)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import Any

from fabricgen.core.artifacts import Artifact
from fabricgen.core.naming import DEVICE_NAME, IDENTIFIER, checked
from fabricgen.core.templating import render_template
from fabricgen.features.kubernetes.build import pod_network_name, pod_ports, pod_profiles
from fabricgen.features.scheduler.kubernetes import planned_labels as topology_labels
from fabricgen.model.cluster import Fabric
from fabricgen.model.sriov import Sriov
from fabricgen.model.topology import Topology

PROFILE_LABEL = "fabricgen.dev/node-profile"


def leaf_label(network: str) -> str:
    """The label naming the leaf a node's port of pod network ``network`` is cabled to (``storage-port0`` ->
    ``fabricgen.dev/storage-port0-leaf``)."""
    return f"fabricgen.dev/{network}-leaf"


def per_leaf(topology: Topology, fabric: Fabric) -> bool:
    """A fabric whose pods take addresses per leaf: routed, with a pod range on each leaf (the address plan gives
    them where pods take the ports: Ethernet VFs, or PFs moved in by host-device)."""
    plan = topology.addresses.get(fabric.name)
    return plan is not None and bool(plan.pods)


def pod_leaves(topology: Topology, fabric: Fabric) -> dict[str, dict[str, str]]:
    """Per node (cluster order), the leaf of each of its pod ports by pod network name, on a fabric with per-leaf pod
    ranges (empty on any other): the cabling's node-leaf links of the pod profiles' pod ports."""
    if not per_leaf(topology, fabric):
        return {}
    ports = {name: set(pod_ports(fabric, profile)) for name, profile in pod_profiles(fabric, topology.cluster.nodes)}
    profile_of = {n.name: n.profile.name for n in topology.cluster.nodes}
    found: dict[str, dict[str, str]] = {}
    for link in topology.fabric(fabric.name).links:
        if link.tier == "node-leaf" and link.nic is not None and link.nic in ports.get(profile_of[link.a.device], ()):
            found.setdefault(link.a.device, {})[pod_network_name(fabric, Sriov.slot(link.nic))] = link.z.device
    return {n.name: dict(sorted(found[n.name].items())) for n in topology.cluster.nodes if n.name in found}


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
    """Every labelled node's labels by key, in cluster order: its profile (if some object selects it), its pod
    ports' leaves (fabrics with per-leaf pod ranges), then its topology labels (if it is scheduled)."""
    profiles = selected_profiles(topology)
    topology_of = topology_labels(topology)
    k8s = topology.cluster.kubernetes
    leaves = [pod_leaves(topology, ft.fabric) for ft in topology.fabrics
              if k8s is not None and ft.fabric.name in k8s.fabrics]
    out: dict[str, dict[str, str]] = {}
    for node in topology.cluster.nodes:
        labels = ({PROFILE_LABEL: checked(IDENTIFIER, node.profile.name, "profile name")}
                  if node.profile.name in profiles else {})
        for fabric in leaves:
            labels |= {leaf_label(net): checked(DEVICE_NAME, leaf, "leaf name")
                       for net, leaf in fabric.get(node.name, {}).items()}
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
