"""Views of a compiled cable plan that the cabling tests (splitters, breakouts) share."""

from __future__ import annotations

from collections import defaultdict

from fabricgen.features.cabling.plan import bill_of_materials
from fabricgen.model.cabling import Cable
from fabricgen.model.topology import Topology


def host_cables(topology: Topology) -> list[Cable]:
    """The node-to-leaf cables: where host splitters and breakouts are."""
    return [c for c in topology.cables if c.tier == "node-leaf"]


def by_physical(cables: list[Cable]) -> dict[str, list[Cable]]:
    """Cables (one per logical link) grouped by the physical cable they are legs of."""
    groups: dict[str, list[Cable]] = defaultdict(list)
    for cable in cables:
        groups[cable.physical].append(cable)
    return groups


def bom_counts(topology: Topology) -> dict[str, int]:
    """The bill of materials as part -> count."""
    lines = bill_of_materials((s.model.name for f in topology.fabrics for s in f.switches), topology.cables)
    return {line.part: line.count for line in lines}
