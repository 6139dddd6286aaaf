"""Target ``slurm``: the scheduler's tree as Slurm reads it, in each form Slurm has had.

- ``topology.conf`` for topology/tree (every Slurm since 2.x; proven with Debian's 22.05 slurmctld): one
  ``SwitchName`` per leaf group with its ``Nodes``, one per spine group with its ``Switches``, the core above;
- ``topology-block.conf`` for topology/block (Slurm >= 24.05, which replaced 23.11's BlockLevels with
  ``BlockSizes``): one ``BlockName`` per leaf group, pod by pod, and the ``BlockSizes`` :func:`block_sizes` derives;
- ``topology.yaml`` (Slurm >= 25.05, read instead of topology.conf when present): both, the tree the cluster
  default, the block topology for partitions that name it;
- ``slurm.conf.topology``: the slurm.conf lines that select the plugin.
"""

from __future__ import annotations

from collections.abc import Sequence

import yaml

from fabricgen.core.artifacts import Artifact
from fabricgen.core.templating import render_template
from fabricgen.features.scheduler.hostlist import hostlist
from fabricgen.features.scheduler.plan import LeafGroup, SchedulingTree, scheduled_fabric, scheduling_tree
from fabricgen.model.topology import Topology


def blocks(tree: SchedulingTree) -> tuple[LeafGroup, ...]:
    """Slurm's blocks in file order: leaf groups pod by pod, so the blocks Slurm aggregates (consecutive runs of a
    power of two) stay within one spine group."""
    if not tree.pods:
        return tree.groups
    return tuple(g for pod in tree.pods for g in pod.groups)


def aggregation_limit(tree: SchedulingTree) -> int:
    """The most blocks one aggregated block may join without leaving a spine group: the largest power of two that
    every full pod's block count is a multiple of (the last pod may be partial) and the largest pod holds."""
    counts = [len(pod.groups) for pod in tree.pods] or [len(tree.groups)]
    limit = 1
    while limit * 2 <= max(counts) and all(c % (limit * 2) == 0 for c in counts[:-1]):
        limit *= 2
    return limit


def block_sizes(tree: SchedulingTree, pinned: Sequence[int] = ()) -> tuple[int, ...]:
    """``BlockSizes``: the spec's, else the smallest block's node count (Slurm plans every block as that many
    nodes: each must hold at least the base size) doubled up to :func:`aggregation_limit` blocks."""
    if pinned:
        return tuple(pinned)
    base = min((len(b.nodes) for b in blocks(tree)), default=1)
    sizes, level = [], 1
    while level <= aggregation_limit(tree):
        sizes.append(base * level)
        level *= 2
    return tuple(sizes)


def short_blocks(tree: SchedulingTree, base: int) -> tuple[int, tuple[str, ...]]:
    """The largest block's node count when it exceeds the base, and the blocks smaller than it: Slurm counts a
    job in whole base blocks (``ROUNDUP(nodes, base)``, eval_nodes_block.c), so a job of a full larger block asks
    for two and is only kept within the next level's aggregated block."""
    sizes = [len(b.nodes) for b in blocks(tree)]
    largest = max(sizes, default=0)
    return (largest, tuple(b.name for b in blocks(tree) if len(b.nodes) < largest)) if largest > base else (0, ())


def _switch_lines(tree: SchedulingTree) -> list[tuple[str, str, str]]:
    """(SwitchName, Nodes= or Switches= with its hostlist, what it stands for) from the leaves up."""
    lines = [(g.name, f"Nodes={hostlist(g.nodes)}", f"leaves {hostlist(g.leaves)}") for g in tree.groups]
    lines += [(p.name, f"Switches={hostlist(g.name for g in p.groups)}", f"spines {hostlist(p.spines)}")
              for p in tree.pods]
    if tree.core:
        lines.append((tree.root, f"Switches={hostlist(p.name for p in tree.pods)}", f"core {hostlist(tree.core)}"))
    return lines


def _yaml(tree: SchedulingTree, sizes: Sequence[int]) -> str:
    switches = [{"switch": g.name, "nodes": hostlist(g.nodes)} for g in tree.groups]
    switches += [{"switch": p.name, "children": hostlist(g.name for g in p.groups)} for p in tree.pods]
    if tree.core:
        switches.append({"switch": tree.root, "children": hostlist(p.name for p in tree.pods)})
    document = [
        {"topology": f"{tree.fabric}-tree", "cluster_default": True, "tree": {"switches": switches}},
        {"topology": f"{tree.fabric}-block", "cluster_default": False,
         "block": {"block_sizes": list(sizes),
                   "blocks": [{"block": b.name, "nodes": hostlist(b.nodes)} for b in blocks(tree)]}},
    ]
    return yaml.safe_dump(document, sort_keys=False, explicit_start=True, width=1 << 16)


def render(topology: Topology) -> list[Artifact]:
    ft = scheduled_fabric(topology)
    scheduler = topology.cluster.scheduler
    if ft is None or scheduler is None:
        return []
    tree = topology.derived(scheduling_tree, ft)
    if not tree.groups:
        return []
    sizes = block_sizes(tree, scheduler.block_sizes)
    largest, short = short_blocks(tree, sizes[0])
    common = {"fabric": tree.fabric, "kind": str(tree.kind), "source": topology.cluster.source}
    return [
        Artifact("scheduler/slurm/topology.conf",
                 render_template("slurm/topology.conf.j2", switches=_switch_lines(tree), **common)),
        Artifact("scheduler/slurm/topology-block.conf",
                 render_template("slurm/topology-block.conf.j2", sizes=",".join(map(str, sizes)),
                                 blocks=[(b.name, hostlist(b.nodes), hostlist(b.leaves)) for b in blocks(tree)],
                                 base=sizes[0], largest=largest, short=", ".join(short),
                                 spans=-(-largest // sizes[0]) * sizes[0], **common)),
        Artifact("scheduler/slurm/topology.yaml",
                 render_template("slurm/topology.yaml.j2", body=_yaml(tree, sizes), **common)),
        Artifact("scheduler/slurm/slurm.conf.topology", render_template("slurm/slurm.conf.topology.j2", **common)),
    ]
