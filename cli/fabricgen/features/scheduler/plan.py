"""The switch tree a scheduler sees, from the compiled fabric: groups of nodes one leaf hop apart, the spine
groups joining them and the core above.

A scheduler's tree needs each node under one leaf switch. A rail-optimized node has one port on each of its
scalable unit's rail leaves, so the unit behaves as one switch: every pair of its nodes is one hop apart on every
rail, and nodes of two units meet only through the spines. Nodes are therefore grouped by the set of leaves their
ports reach (a rail-optimized SU; one leaf in a fat-tree, leaf-spine or top-of-rack fabric, where a node whose
ports straddle two leaves forms a group of its own), and leaf groups by the set of spines above them (one group in
two tiers; a pod in three, whose spine planes meet at the core). Spines of one group are interchangeable for
placement, so each group is one switch of the tree.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from fabricgen.model.cluster import TopologyKind
from fabricgen.model.topology import LEAF_SPINE, SPINE_CORE, FabricTopology, Topology


@dataclass(frozen=True)
class LeafGroup:
    """Nodes whose ports reach the same leaves: a leaf switch of the scheduler's tree (a block of Slurm's)."""

    name: str
    leaves: tuple[str, ...]
    nodes: tuple[str, ...]
    su: int | None = None


@dataclass(frozen=True)
class SpineGroup:
    """Leaf groups under the same spines (a two-tier fabric's spine tier, or one pod of three tiers)."""

    name: str
    spines: tuple[str, ...]
    groups: tuple[LeafGroup, ...]


@dataclass(frozen=True)
class SchedulingTree:
    """The fabric as a scheduler sees it; ``core`` is empty below three tiers, ``pods`` empty for a lone leaf."""

    fabric: str
    kind: TopologyKind
    groups: tuple[LeafGroup, ...]
    pods: tuple[SpineGroup, ...]
    core: tuple[str, ...]

    @property
    def root(self) -> str:
        """The top switch of the tree (the core in three tiers, the spine group in two, else the lone leaf)."""
        if self.core:
            return f"{self.fabric}-core"
        if self.pods:
            return self.pods[0].name
        return self.groups[0].name if self.groups else ""

    @property
    def nodes(self) -> tuple[str, ...]:
        return tuple(n for g in self.groups for n in g.nodes)


def scheduling_tree(topology: Topology, ft: FabricTopology) -> SchedulingTree:
    """The scheduler's tree of one fabric (compute nodes only: management nodes take no jobs); pure and O(links).

    Use through ``topology.derived(scheduling_tree, ft)`` so the checks and every renderer share one copy.
    """
    fabric = ft.fabric
    compute = [n.name for n in topology.cluster.nodes
               if n.group in fabric.node_groups and n.profile.role == "compute"]
    uplinks: dict[str, set[str]] = defaultdict(set)  # device -> the devices one tier above it
    for link in ft.links:
        uplinks[link.a.device].add(link.z.device)
    order = {s.name: i for i, s in enumerate(ft.switches)}
    by_leaves: dict[tuple[str, ...], list[str]] = {}
    for node in compute:
        if node in uplinks:
            by_leaves.setdefault(tuple(sorted(uplinks[node], key=order.__getitem__)), []).append(node)
    straddling = {leaves: i for i, leaves in enumerate((ls for ls in by_leaves if len(ls) > 1), 1)}
    su_of = {s.name: s.su for s in ft.switches}
    groups = tuple(_leaf_group(ft, su_of, leaves, nodes, straddling.get(leaves, 0))
                   for leaves, nodes in by_leaves.items())
    core = _above(ft, SPINE_CORE)
    return SchedulingTree(fabric.name, fabric.topology.kind, groups, _pods(ft, groups, uplinks, order),
                          tuple(s.name for s in ft.switches if s.name in core))


def _leaf_group(ft: FabricTopology, su_of: dict[str, int | None], leaves: tuple[str, ...], nodes: Sequence[str],
                index: int) -> LeafGroup:
    """A leaf group named for what it is: the leaf itself, the rail-optimized SU whose rail leaves it spans, or
    (ports straddling leaves) ``<fabric>-leafgroupNNN``, ``index`` counting such groups in node order."""
    sus = {su_of[leaf] for leaf in leaves}
    su = next(iter(sus)) if len(sus) == 1 else None
    if len(leaves) == 1:
        name = leaves[0]
    elif su is not None and ft.fabric.topology.kind is TopologyKind.RAIL_OPTIMIZED:
        name = f"{ft.fabric.name}-su{su:02d}"
    else:
        name = f"{ft.fabric.name}-leafgroup{index:03d}"
    return LeafGroup(name, leaves, tuple(nodes), su)


def _above(ft: FabricTopology, tier: str) -> set[str]:
    return {link.z.device for link in ft.links if link.tier == tier}


def _pods(ft: FabricTopology, groups: Sequence[LeafGroup], uplinks: dict[str, set[str]], order: dict[str, int]
          ) -> tuple[SpineGroup, ...]:
    if ft.tiers < 2 or not _above(ft, LEAF_SPINE):
        return ()
    by_spines: dict[tuple[str, ...], list[LeafGroup]] = {}
    for group in groups:
        above = set().union(*(uplinks[leaf] for leaf in group.leaves))
        by_spines.setdefault(tuple(sorted(above, key=order.__getitem__)), []).append(group)
    if len(by_spines) == 1 and ft.tiers == 2:
        ((spines, members),) = by_spines.items()
        return (SpineGroup(f"{ft.fabric.name}-spines", spines, tuple(members)),)
    return tuple(SpineGroup(f"{ft.fabric.name}-pod{i:02d}", spines, tuple(members))
                 for i, (spines, members) in enumerate(by_spines.items(), 1))


def scheduled_fabric(topology: Topology) -> FabricTopology | None:
    """The fabric the schedulers follow (the ``scheduler`` section's), or None when the cluster has none."""
    scheduler = topology.cluster.scheduler
    if scheduler is None:
        return None
    return next((ft for ft in topology.fabrics if ft.fabric.name == scheduler.fabric), None)

