"""Target ``k8s-topology``: the scheduler's tree as Kubernetes node labels and a Kueue ``Topology`` and
``ResourceFlavor`` over them (topology-aware scheduling). The labels are applied by the one node-labelling script
of the plan, ``kubernetes/label-nodes.sh`` (:mod:`fabricgen.features.kubernetes.nodes`), from
:func:`planned_labels`.

Label keys are the ones the ecosystem converged on where one exists: ``kubernetes.io/hostname`` (the kubelet's,
never set here) and NVIDIA Topograph's fabric tiers, closest switch first (``fabric.topograph.run/tier-0`` the
leaf group, ``tier-1`` the spine group or pod, ``tier-2`` the core), so KAI Scheduler, Kueue and pod affinity rules
written for Topograph's discovery read fabricgen's plan unchanged. Racks have no converged key:
``fabricgen.dev/rack``; ``fabricgen.dev/topology`` names the fabric the tiers describe (the ResourceFlavor selects
its nodes by it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import yaml

from fabricgen.core.artifacts import Artifact
from fabricgen.core.templating import render_template
from fabricgen.features.scheduler.plan import SchedulingTree, scheduled_fabric, scheduling_tree
from fabricgen.model.topology import Topology

HOSTNAME = "kubernetes.io/hostname"
TIER = "fabric.topograph.run/tier-{}"
RACK = "fabricgen.dev/rack"
FABRIC = "fabricgen.dev/topology"
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")  # Kubernetes: at most 63 characters


@dataclass(frozen=True)
class NodeLabels:
    name: str
    values: tuple[str, ...]  # in the order of :func:`label_keys`


def tier_values(tree: SchedulingTree) -> dict[str, tuple[str, ...]]:
    """Each scheduled node's fabric tiers, closest first: its leaf group, the group's spine group, the core."""
    pod_of = {g.name: (p.name,) for p in tree.pods for g in p.groups}
    core = (tree.root,) if tree.core else ()
    return {n: (g.name, *pod_of.get(g.name, ()), *core) for g in tree.groups for n in g.nodes}


def label_keys(tree: SchedulingTree) -> tuple[str, ...]:
    depth = 1 + bool(tree.pods) + bool(tree.core)
    return (FABRIC, *(TIER.format(i) for i in range(depth)), RACK)


def racks_nest(topology: Topology, tree: SchedulingTree) -> bool:
    """Whether every rack's scheduled nodes sit in one leaf group, so a rack is a topology level below it."""
    group_of = {n: g.name for g in tree.groups for n in g.nodes}
    seen: dict[str, str] = {}
    for node in topology.cluster.nodes:
        if node.name in group_of and seen.setdefault(node.rack.name, group_of[node.name]) != group_of[node.name]:
            return False
    return True


def node_labels(topology: Topology, tree: SchedulingTree) -> list[NodeLabels]:
    tiers = tier_values(tree)
    return [NodeLabels(n.name, (tree.fabric, *tiers[n.name], n.rack.name))
            for n in topology.cluster.nodes if n.name in tiers]


def planned_labels(topology: Topology) -> dict[str, dict[str, str]]:
    """Each scheduled node's topology labels by key (empty without a scheduled fabric)."""
    ft = scheduled_fabric(topology)
    if ft is None:
        return {}
    tree = topology.derived(scheduling_tree, ft)
    keys = label_keys(tree)
    return {n.name: dict(zip(keys, n.values, strict=True)) for n in node_labels(topology, tree)}


def levels(topology: Topology, tree: SchedulingTree) -> list[str]:
    """Kueue's levels, outermost first, ``kubernetes.io/hostname`` last (the CRD allows it only there)."""
    keys = label_keys(tree)
    tiers = list(reversed(keys[1:-1]))
    return [*tiers, *([RACK] if racks_nest(topology, tree) else []), HOSTNAME]


def _kueue(topology: Topology, tree: SchedulingTree) -> str:
    documents = [
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Topology", "metadata": {"name": tree.fabric},
         "spec": {"levels": [{"nodeLabel": key} for key in levels(topology, tree)]}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": f"{tree.fabric}-tas"},
         "spec": {"nodeLabels": {FABRIC: tree.fabric}, "topologyName": tree.fabric}},
    ]
    return yaml.safe_dump_all(documents, sort_keys=False, explicit_start=True, width=1 << 16)


def render(topology: Topology) -> list[Artifact]:
    ft = scheduled_fabric(topology)
    if ft is None:
        return []
    tree = topology.derived(scheduling_tree, ft)
    if not tree.groups:
        return []
    common = {"fabric": tree.fabric, "kind": str(tree.kind), "source": topology.cluster.source}
    return [Artifact("scheduler/kubernetes/kueue.yaml",
                     render_template("k8s-topology/kueue.yaml.j2", body=_kueue(topology, tree),
                                     rack=racks_nest(topology, tree), **common))]
