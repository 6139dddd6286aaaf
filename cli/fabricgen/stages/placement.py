"""Switch placement, the step of compile that gives every switch its rack and U (README "Cabling rules").

Top-of-rack leaves take the top U of their own rack. Every other switch goes where its fabric's ``placement`` for
that tier says or, by default, into the network racks: each leaf and spine tier has one slot range, at the same U
in every network rack, sized for the tier's share of the racks (:func:`_ranges`), and each switch takes the lowest
free slot of its range in the network rack nearest its home (the median rack of the devices cabled below it), fewer
rows away first, then fewer racks along the row. A leaf's or spine's rack and U so depend on its own tier only: a
switch added to or removed from another tier (a new scalable unit's leaves, a storage leaf) moves no other switch.
A core tier has no range: its switches are cabled to spines all over the floor and share few homes, so they stack
above the ranges of the racks nearest those homes (spread one range slot per rack, bench's 65,536-GPU spec's
cores stood over the whole floor and spine-core runs passed 100 m). Tiers are placed leaf, spine, core, fabric
by fabric: a spine's home is known once its leaves stand.
"""

from __future__ import annotations

import bisect
import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from fabricgen.core.errors import SpecError, SpecIssue
from fabricgen.model.cluster import Cluster, Tier, TopologyKind
from fabricgen.model.nodes import Rack
from fabricgen.model.topology import LEAF_SPINE, NODE_LEAF, SPINE_CORE, FabricTopology
from fabricgen.stages.racks import RackSpace


@dataclass(frozen=True)
class SlotRange:
    """The U a (fabric, tier) holds in every network rack: ``slots`` switches of ``height`` U from ``first_u``."""

    fabric: str
    tier: Tier
    first_u: int
    height: int
    slots: int

    @property
    def last_u(self) -> int:
        return self.first_u + self.slots * self.height - 1


def place_switches(cluster: Cluster, compiled: Sequence[FabricTopology]) -> tuple[FabricTopology, ...]:
    """Give every switch a rack and U: top-of-rack leaves at the top of their rack, then each tier of each
    fabric (in spec order) in its placement racks or, by default, its slot range of the network racks."""
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
    ranges = _ranges(compiled, network, space)
    overflow = _range_overflow(compiled, ranges, network, facility.rack_units)
    if overflow is not None:
        raise SpecError([*issues, overflow])
    for rack in network:  # explicit placements into the network racks stack above the slot ranges
        space.reserve_below(rack.name, max((r.last_u + 1 for r in ranges.values()), default=1))
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
                where = ranges.get((ft.fabric.name, tier))
                got = [slot for sw in tier_switches if (slot := nearby.place(homes.get(sw.name), where, height))]
            else:
                got = space.fill(explicit.racks, len(tier_switches), height, explicit.per_rack, explicit.start_u)
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


def _ranges(compiled: Sequence[FabricTopology], network: Sequence[Rack],
            space: RackSpace) -> dict[tuple[str, Tier], SlotRange]:
    """One slot range per leaf or spine tier placed by default, stacked from the network racks' lowest free U: the
    leaf tiers first, then the spine tiers (whose counts follow the leaves'), fabric by fabric in spec order; the
    core tiers stack above them near their homes (module docstring). A range holds the tier's per-rack share,
    its switches spread over the network racks: a rail-optimized leaf tier's in whole SUs, for
    ``topology.max_scalable_units`` SUs where the spec plans more than it built (an SU's leaves stand together,
    and SUs added up to the plan widen no range); a spine tier's in switches, ceil(switches / network racks).
    So a switch more or less in one tier moves no switch of another tier unless its tier's share changes."""
    first = max((space.next_u[r.name] for r in network), default=1)
    ranges: dict[tuple[str, Tier], SlotRange] = {}
    for tier in Tier:
        for ft in compiled:
            tier_switches = [s for s in ft.switches if s.tier is tier and s.rack is None]
            if tier is Tier.CORE or not tier_switches or tier in ft.fabric.placement or not network:
                continue
            if tier is Tier.LEAF and ft.fabric.topology.kind is TopologyKind.RAIL_OPTIMIZED and ft.rails:
                planned = max(ft.fabric.topology.max_scalable_units or 0, ft.scalable_units)
                count = ft.rails * math.ceil(planned / len(network))
            else:
                count = math.ceil(len(tier_switches) / len(network))
            height = tier_switches[0].model.height_u
            ranges[(ft.fabric.name, tier)] = SlotRange(ft.fabric.name, tier, first, height, count)
            first += count * height
    return ranges


def _range_overflow(compiled: Sequence[FabricTopology], ranges: dict[tuple[str, Tier], SlotRange],
                    network: Sequence[Rack], rack_units: int) -> SpecIssue | None:
    """The slot ranges reaching past the network racks' top: which tiers take how much, and what to change."""
    crossing = next((r for r in ranges.values() if r.last_u > rack_units), None)
    if crossing is None:
        return None
    fabric = next(ft.fabric for ft in compiled if ft.fabric.name == crossing.fabric)
    top = max(r.last_u for r in ranges.values())
    taken = ", ".join(f"{r.fabric} {r.tier.value} U{r.first_u}-U{r.last_u} ({r.slots} x {r.height}U)"
                      for r in ranges.values())
    racks = f"each of the {len(network)} network racks" if len(network) > 1 else "the network rack"
    return SpecIssue(fabric.position, f"fabrics.{fabric.name}",
                     f"the network racks' slot ranges reach U{top}, past their {rack_units}U: {taken}, at the same U "
                     f"in {racks}",
                     "add network racks (rows[].kind: network), raise facility.rack_units, lower "
                     f"topology.max_scalable_units, or give fabrics.{fabric.name}.placement.{crossing.tier.value} "
                     "racks of its own")


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
    """Default placement: the network rack nearest a switch's home (fewer rows away first, then fewer racks along
    the row, ties to the lower index) with a free slot in the switch's range, or room above the ranges, under
    the rack's switch budget, so runs stay short on large floors. Racks that turned out full leave that search,
    and the nearest rack in a row is found by bisection: the cost stays per switch."""

    def __init__(self, network: Sequence[Rack], space: RackSpace, per_rack: int, used: Counter[str]) -> None:
        self.rows: dict[int, list[Rack]] = {}
        for rack in sorted(network, key=lambda r: (r.row_index, r.index)):
            self.rows.setdefault(rack.row_index, []).append(rack)
        self.space, self.per_rack, self.used = space, per_rack, used
        self.searched: dict[tuple[str, str], tuple[dict[int, list[Rack]], dict[int, list[int]]]] = {}
        self.taken: Counter[tuple[str, str, Tier]] = Counter()  # (rack, fabric, tier) -> slots taken

    def _open_racks(self, key: tuple[str, str]) -> tuple[dict[int, list[Rack]], dict[int, list[int]]]:
        """The racks still open to one search (a range, or stacking a height), per row, and their indexes."""
        if key not in self.searched:
            rows = {row: list(racks) for row, racks in self.rows.items()}
            self.searched[key] = rows, {row: [r.index for r in racks] for row, racks in rows.items()}
        return self.searched[key]

    @staticmethod
    def _nearest(indexes: list[int], index: int) -> int:
        """Position of the rack nearest ``index`` in a row's remaining racks (the lower one on a tie)."""
        right = bisect.bisect_left(indexes, index)
        if right == len(indexes) or (right > 0 and index - indexes[right - 1] <= indexes[right] - index):
            return right - 1
        return right

    def _first_fit(self, home: Rack | None, key: tuple[str, str],
                   fit: Callable[[Rack], int | None]) -> tuple[Rack, int] | None:
        """The nearest rack ``fit`` gives a U in; a rack it refuses leaves this search for good (its budget and
        its U only ever fill up)."""
        row, index = (home.row_index, home.index) if home else (0, 1)
        rows, indexes = self._open_racks(key)
        for row_index in sorted(rows, key=lambda r: (abs(r - row), r)):
            racks = rows[row_index]
            while racks:
                position = self._nearest(indexes[row_index], index)
                u = fit(racks[position])
                if u is not None:
                    return racks[position], u
                del racks[position], indexes[row_index][position]
        return None

    def place(self, home: Rack | None, where: SlotRange | None, height: int) -> tuple[Rack, int] | None:
        """A switch's rack and U: the lowest free slot of its range in the nearest rack that has one, or, with no
        range or every rack's share of it taken, stacked above the ranges of the nearest rack with room."""
        return (where is not None and self._in_range(home, where)) or self._stacked(home, height)

    def _in_range(self, home: Rack | None, where: SlotRange) -> tuple[Rack, int] | None:
        def fit(rack: Rack) -> int | None:
            slot = self.taken[(rack.name, where.fabric, where.tier)]
            if slot >= where.slots or self.used[rack.name] >= self.per_rack:
                return None
            self.taken[(rack.name, where.fabric, where.tier)] += 1
            self.used[rack.name] += 1
            return where.first_u + slot * where.height
        return self._first_fit(home, (where.fabric, where.tier.value), fit)

    def _stacked(self, home: Rack | None, height: int) -> tuple[Rack, int] | None:
        """Stacked in placement order, as every switch was before the ranges: such a switch can move when one
        placed before it comes or goes."""
        def fit(rack: Rack) -> int | None:
            got = self.space.fill([rack], 1, height, self.per_rack, 1, self.used)
            return got[0][1] if got else None
        return self._first_fit(home, ("stacked", str(height)), fit)


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
