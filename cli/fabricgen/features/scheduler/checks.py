"""Checks of the schedulers' view: a fabric with nodes to place, names Slurm can tell apart, racks that are
Kubernetes label values, and block sizes Slurm
accepts (``src/plugins/topology/block/block_record.c``: each a power-of-two multiple of the first, the first at
most the smallest block's nodes, at most 16 levels)."""

from __future__ import annotations

from collections.abc import Iterator

from fabricgen.core.errors import Finding, Severity, SourcePosition
from fabricgen.features.scheduler.kubernetes import LABEL_VALUE, RACK
from fabricgen.features.scheduler.plan import scheduled_fabric, scheduling_tree
from fabricgen.features.scheduler.slurm import aggregation_limit, blocks
from fabricgen.model.topology import Topology

CHECK = "scheduler"
SIZES = "scheduler.slurm.block_sizes"
MAX_BLOCK_LEVELS = 16  # block_record.c: a level above 15 is an invalid BlockSizes value


def check(topology: Topology) -> Iterator[Finding]:
    scheduler = topology.cluster.scheduler
    ft = scheduled_fabric(topology)
    if scheduler is None or ft is None:
        return
    where = scheduler.position
    tree = topology.derived(scheduling_tree, ft)
    if not tree.groups:
        yield Finding(Severity.ERROR, CHECK, ft.fabric.name, "no compute node attaches to this fabric, so a "
                      "scheduler has nothing to place by it", "name the compute fabric in scheduler.fabric", where)
        return
    names = [g.name for g in tree.groups] + [p.name for p in tree.pods] + ([tree.root] if tree.core else [])
    nodes = set(tree.nodes)
    for name in sorted({n for n in names if names.count(n) > 1 or n in nodes}):
        yield Finding(Severity.ERROR, CHECK, name, "two switches of the scheduler's tree, or a switch and a node, "
                      "share this name", "rename the switch in the fabric's naming patterns", where)
    for node in topology.cluster.nodes:
        if node.name in nodes and (len(node.rack.name) > 63 or not LABEL_VALUE.fullmatch(node.rack.name)):
            yield Finding(Severity.ERROR, CHECK, node.rack.name, "this rack name is no Kubernetes label value "
                          f"({RACK} of {node.name})", "rack names of at most 63 letters, digits, '-', '_' or '.', "
                          "starting and ending with a letter or digit", where)
            break
    yield from _block_sizes(scheduler.block_sizes, min(len(b.nodes) for b in blocks(tree)),
                            aggregation_limit(tree), scheduler.block_sizes_position)


def _block_sizes(sizes: tuple[int, ...], smallest: int, limit: int, position: SourcePosition | None
                 ) -> Iterator[Finding]:
    if not sizes:
        return
    base = sizes[0]
    if base > smallest:
        yield Finding(Severity.ERROR, CHECK, SIZES, f"the base block size {base} exceeds the "
                      f"smallest block ({smallest} nodes); Slurm requires every block to hold it",
                      f"use at most {smallest}", position)
    for size in sizes[1:]:
        ratio = size // base
        if size % base or ratio & (ratio - 1) or ratio >= 1 << MAX_BLOCK_LEVELS:
            yield Finding(Severity.ERROR, CHECK, SIZES, f"{size} is not a power-of-two multiple "
                          f"(2 to {1 << (MAX_BLOCK_LEVELS - 1)}) of the base size {base}, as Slurm requires",
                          f"e.g. {base * 2}", position)
        elif ratio > limit:  # accepted by Slurm, but such a block is not one leaf-spine hop wide
            yield Finding(Severity.WARNING, CHECK, SIZES, f"a block of {size} nodes joins {ratio} "
                          f"blocks, but one spine group holds at most {limit}: its jobs cross the core or "
                          "the fabric has fewer blocks", "", position)
    if list(sizes) != sorted(set(sizes)):
        yield Finding(Severity.ERROR, CHECK, SIZES, "block sizes must increase",
                      "list them smallest first, each once", position)
