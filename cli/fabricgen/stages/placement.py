"""Switch placement, the step of compile that gives every switch its rack and U (README "Cabling rules").

Top-of-rack leaves take the top U of their own rack. Every other switch goes where its fabric's ``placement`` for
that tier says or, by default, into the free network rack nearest its home (the median rack of the devices cabled
below it), fewer rows away first, then fewer racks along the row. Tiers are placed leaf, spine, core, fabric by
fabric: a spine's home is known once its leaves stand.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

from fabricgen.core.errors import SpecError, SpecIssue
from fabricgen.model.cluster import Cluster, Tier, TierPlacement
from fabricgen.model.nodes import Rack
from fabricgen.model.topology import LEAF_SPINE, NODE_LEAF, SPINE_CORE, FabricTopology
from fabricgen.stages.racks import RackSpace


def place_switches(cluster: Cluster, compiled: Sequence[FabricTopology]) -> tuple[FabricTopology, ...]:
    """Give every switch a rack and U: top-of-rack leaves at the top of their rack, then each tier of each
    fabric (in spec order) in its placement racks or, by default, the network rows."""
    facility = cluster.facility
    space = RackSpace(facility, ((n.rack.name, n.u, n.profile.height_u) for n in cluster.nodes))
    racks = {r.name: r for r in facility.racks}
    network = tuple(r for r in facility.racks if r.kind == "network")
    per_network_rack: Counter[str] = Counter()
    issues: list[SpecIssue] = []
    slots: dict[str, tuple[str, int]] = {}
    for ft in compiled:
        for sw in ft.switches:
            if sw.rack is not None:
                u = space.claim_top(racks[sw.rack], sw.model.height_u)
                if u is None:
                    issues.append(SpecIssue(ft.fabric.position, f"fabrics.{ft.fabric.name}.topology",
                                            f"rack {sw.rack} has no free {sw.model.height_u}U at its top for "
                                            f"{sw.name}", "leave the top of each rack free: lower per_rack"))
                else:
                    slots[sw.name] = (sw.rack, u)
    nearby = _NearestNetworkRack(network, space, facility.switches_per_network_rack, per_network_rack)
    located = {n.name: n.rack for n in cluster.nodes}
    for ft in compiled:
        for tier in Tier:
            tier_switches = [s for s in ft.switches if s.tier is tier and s.rack is None]
            if not tier_switches:
                continue
            explicit = ft.fabric.placement.get(tier)
            height = tier_switches[0].model.height_u
            if explicit is None:
                homes = _homes(ft, located, tier)
                got = [slot for sw in tier_switches if (slot := nearby.take(homes.get(sw.name), height))]
            else:
                where = explicit or TierPlacement(network, facility.switches_per_network_rack, 1)
                got = space.fill(where.racks, len(tier_switches), height, where.per_rack, where.start_u,
                                 None if explicit else per_network_rack)
            if len(got) < len(tier_switches):
                load = "" if explicit is not None else _network_load(compiled, slots, network,
                                                                     facility.switches_per_network_rack)
                issues.append(_no_room(ft, tier, len(tier_switches), len(got), explicit is not None, bool(network),
                                       load))
                continue
            for sw, (rack, u) in zip(tier_switches, got, strict=True):
                slots[sw.name] = (rack.name, u)
                located[sw.name] = rack
    if issues:
        raise SpecError(issues)
    return tuple(replace(ft, switches=tuple(replace(sw, rack=slots[sw.name][0], u=slots[sw.name][1])
                                            for sw in ft.switches)) for ft in compiled)


def _homes(ft: FabricTopology, located: dict[str, Rack], tier: Tier) -> dict[str, Rack]:
    """Each switch's home: the median of the racks the devices cabled below it stand in, already placed (nodes
    under leaves, leaves under spines, spines under cores). The median of the racks, not of the devices: a node
    added to or removed from a rack its leaf already serves moves no switch (the median node did: removing a
    16k-GPU cluster's last node moved its scalable unit's leaves a rack, re-running ~860 spine cables), and on
    racks filled alike the two are the same rack. One pass over the links."""
    below: dict[str, dict[str, Rack]] = {}
    lower_tier = {Tier.LEAF: NODE_LEAF, Tier.SPINE: LEAF_SPINE, Tier.CORE: SPINE_CORE}[tier]
    for link in ft.links:
        if link.tier == lower_tier and link.a.device in located:
            rack = located[link.a.device]
            below.setdefault(link.z.device, {})[rack.name] = rack
    homes = {}
    for name, racks in below.items():
        ordered = sorted(racks.values(), key=lambda r: (r.row_index, r.index))
        homes[name] = ordered[len(ordered) // 2]
    return homes


class _NearestNetworkRack:
    """Default placement: the free network rack nearest a switch's home (fewer rows away first, then fewer
    racks along the row, ties to the lower index), so runs stay short on large floors. Racks that turned out
    full leave the search, and the nearest rack in a row is found by bisection: the cost stays per switch."""

    def __init__(self, network: Sequence[Rack], space: RackSpace, per_rack: int, used: Counter[str]) -> None:
        self.rows: dict[int, list[Rack]] = {}
        for rack in sorted(network, key=lambda r: (r.row_index, r.index)):
            self.rows.setdefault(rack.row_index, []).append(rack)
        self.indexes = {row: [r.index for r in racks] for row, racks in self.rows.items()}
        self.space, self.per_rack, self.used = space, per_rack, used

    def _nearest(self, row: int, index: int) -> int:
        """Position of the rack nearest ``index`` in a row's remaining racks (the lower one on a tie)."""
        indexes = self.indexes[row]
        right = bisect.bisect_left(indexes, index)
        if right == len(indexes) or (right > 0 and index - indexes[right - 1] <= indexes[right] - index):
            return right - 1
        return right

    def take(self, home: Rack | None, height: int) -> tuple[Rack, int] | None:
        row, index = (home.row_index, home.index) if home else (0, 1)
        for row_index in sorted(self.rows, key=lambda r: (abs(r - row), r)):
            racks = self.rows[row_index]
            while racks:
                position = self._nearest(row_index, index)
                got = self.space.fill([racks[position]], 1, height, self.per_rack, 1, self.used)
                if got:
                    return got[0]
                del racks[position], self.indexes[row_index][position]
        return None


def _network_load(compiled: Sequence[FabricTopology], slots: dict[str, tuple[str, int]], network: Sequence[Rack],
                  per_rack: int) -> str:
    """What fills the network racks so far, per fabric: the cause a full network row hides (field review: 128 DGX
    of h100-4su made a fifth SU's QM9700s, and the OOB spines, placed after them, were told only that they do not
    fit)."""
    names = {r.name for r in network}
    held = Counter(ft.fabric.name for ft in compiled for sw in ft.switches
                   if sw.name in slots and slots[sw.name][0] in names)
    taken = ", ".join(f"{fabric} {count}" for fabric, count in held.items())
    return (f": the network racks ({len(network)} x {per_rack} switches) hold {sum(held.values())} already "
            f"({taken})" if held else "")


def _no_room(ft: FabricTopology, tier: Tier, wanted: int, placed: int, explicit: bool, network: bool,
             load: str) -> SpecIssue:
    where = f"fabrics.{ft.fabric.name}.placement.{tier.value}" if explicit else f"fabrics.{ft.fabric.name}"
    hint = ("add racks to the placement or raise its per_rack" if explicit else
            "add a row with kind: network, raise facility.switches_per_network_rack, or give fabrics."
            f"{ft.fabric.name}.placement.{tier.value}")
    if not explicit and not network:
        message = f"no rack for the {wanted} {tier.value} switches: the facility has no row with kind: network"
    else:
        message = f"only {placed} of {wanted} {tier.value} switches fit in their racks{load}"
    return SpecIssue(ft.fabric.position, where, message, hint)
