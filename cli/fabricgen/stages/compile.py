"""Stage 4, compile: Cluster -> Topology (switches, ports, links), pure, deterministic and O(links).

Shape rules (documented in the README, "Topology rules"):
- rail-optimized: nodes fill scalable units (SU) in spec order (consecutive management nodes on disjoint rails share
  a slot); one leaf per rail per SU; rail r of the node in SU slot s lands on leaf (SU, r), port s+1. Leaves exist
  for every rail of every SU, even a partial one.
- fat-tree / leaf-spine: each node's ports of the fabric's role are packed on leaves in node order; dual-homed
  (the storage default): leaves in pairs, a node's ports alternating between the two leaves of its pair; mlag: the
  same pairs, joined by a peer link of PEER_LINKS cables on the cages after the uplinks.
- top-of-rack: one leaf per rack holding attached nodes; the rack's ports land on it in node order.
- Leaf uplinks: ``topology.uplinks`` if given, else ceil(downlinks / oversubscription) (top-of-rack: 2).
- Two tiers: the fewest spines (at least 2 when there are 2+ leaves) such that every leaf sends the same number
  of links to every spine and no spine runs out of ports. Leaf uplink ports go spine by spine; spine downlink
  ports go leaf by leaf, leaves in (SU, rail) or creation order.
- Three tiers, when two cannot hold the leaves (or ``tiers: 3``): leaves are grouped into pods of at most half a
  spine's radix (rail-optimized: a pod holds one rail's leaves of consecutive SUs, as in NVIDIA's SuperPOD spine
  groups); each pod gets its own spines, non-blocking (spine uplinks = downlinks of a full pod); spine j of every
  pod joins core plane j, whose size is chosen by the same even-spread rule.
- Switch ports: downlinks take the lowest cages that run at the host speed, uplinks the next cages that run at
  the uplink speed; a cage with k logical ports gives names ``<cage>/1`` .. ``<cage>/k``. A leaf cage split at the
  host speed that no catalog medium serves host by host (an SN4700 QSFP-DD cage at 2 x 200G: a QSFP56 plug drives
  its first port only) takes one host, on ``<cage>/1``, and is one logical port.
- Spines (and cores) where the tiers' cages are split and no medium serves them link by link: the fewest that
  send each spine whole cages, so a lane-aligned cage pair rides one cable (see the cable plan).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from functools import cache

from fabricgen.core.errors import SpecError, SpecIssue
from fabricgen.core.gcpause import without_gc
from fabricgen.core.naming import DEVICE_NAME, expand
from fabricgen.features.registry import FEATURES
from fabricgen.model.cluster import Attachment, Cluster, Fabric, Tier, TopologyKind
from fabricgen.model.hardware import (
    SWITCH_SWITCH,
    Medium,
    SwitchModel,
    breakout,
    cage_of,
    pair_unit,
    port_name,
    single_port_groups,
    unserved_groups,
)
from fabricgen.model.nodes import Nic, Node
from fabricgen.model.topology import (
    LEAF_LEAF,
    LEAF_SPINE,
    NODE_LEAF,
    SPINE_CORE,
    FabricTopology,
    Link,
    Port,
    Switch,
    Topology,
)
from fabricgen.stages.placement import place_switches

# Cables of an MLAG pair's peer link: a bond of two, so one cable or cage lost keeps the pair joined (Cumulus
# Linux's MLAG requirements: "a direct connection between the two peer switches ... typically a bond for increased
# reliability and bandwidth", CumulusNetworks/docs Multi-Chassis-Link-Aggregation-MLAG.md).
PEER_LINKS = 2


# what a larger server block costs, said where one is asked for (field review, growth: 10 -> 12 re-patched 146 DGX
# cables without a word)
_REGROW = (": a larger block moves every compute port after it once, so size it for the servers the cluster will "
           "have")


class _InfeasibleError(Exception):
    """The fabric cannot be built as asked; the message says why and the hint what to change."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.hint = hint


# -- ports -----------------------------------------------------------------------------------------------------
Layout = tuple[tuple[tuple[int, str], ...], tuple[tuple[int, str], ...]]  # (number, name) of downlinks, uplinks


@cache
def _cages(ports: tuple[tuple[int, str], ...]) -> frozenset[int]:
    """The cages ``ports`` take."""
    return frozenset(cage_of(name) for _, name in ports)


@cache
def port_layout(
    model: SwitchModel, down_speed: str, down: int, up_speed: str, up: int, single: frozenset[str] = frozenset(),
    single_up: frozenset[str] = frozenset(),
) -> Layout:
    """Logical numbers and physical names of a switch's downlink then uplink ports (see module rules); a cage of
    a port group in ``single`` (``single_up``) gives one downlink (uplink), its first port: no medium plugs one
    link per port there."""
    downs: list[tuple[int, str]] = []
    ups: list[tuple[int, str]] = []
    number = 0
    for cage_number, group in model.cages():
        if len(downs) < down and group.per_cage(down_speed):
            target, speed = downs, down_speed
        elif len(downs) >= down and len(ups) < up and group.per_cage(up_speed):
            target, speed = ups, up_speed
        else:
            number += max(n for _, n in group.ports_per_cage)
            continue
        per_cage = group.per_cage(speed)
        wanted = down if target is downs else up
        usable = 1 if group.name in (single if target is downs else single_up) else per_cage
        for lane in range(1, usable + 1):  # a cage taking one host is one logical port
            number += 1
            if len(target) < wanted:
                target.append((number, port_name(cage_number, lane, per_cage)))
    if len(downs) < down or len(ups) < up:
        one = (f"; its cages split at {down_speed} take one host each, on their first port, as the catalog has no "
               f"splitter that plugs one link per port there" if single else "")
        raise _InfeasibleError(
            f"{model.name} cannot give {down} x {down_speed} downlinks and {up} x {up_speed} uplinks "
            f"(it has {model.logical_ports(down_speed)} ports at {down_speed}{one})",
            "lower the scalable unit, raise oversubscription, or pick a larger switch" + (
                ", or add such a splitter (catalog.media, with its part numbers)" if single else ""),
        )
    return tuple(downs), tuple(ups)


def _even_spread(leaves: int, uplinks: int, spine_ports: int, minimum: int, unit: int = 1) -> int | None:
    """Fewest spines such that each leaf sends uplinks/n links to each and no spine exceeds its ports; where
    cages split ``unit`` ways carry the links, the fewest that send each spine whole cages (a cage pair is one
    cable, both ends' ports on the same lanes) if any does."""
    fits = [n for n in range(max(1, minimum), uplinks + 1) if uplinks % n == 0 and leaves * uplinks // n <= spine_ports]
    return next((n for n in fits if (uplinks // n) % unit == 0), fits[0] if fits else None)


# -- per-fabric compiler ---------------------------------------------------------------------------------------
@dataclass
class _Leaf:
    switch: Switch
    hosts: list[tuple[Node, Nic, int]]  # (node, nic, downlink slot)


_PairSides = tuple[list[tuple[Node, Nic]], list[tuple[Node, Nic]]]  # a leaf pair's host ports, side by side


class _FabricCompiler:
    """Builds one fabric: leaves with their host links, then two or three switch tiers above them."""

    def __init__(self, cluster: Cluster, fabric: Fabric) -> None:
        self.cluster = cluster
        self.fabric = fabric
        self.spec = fabric.topology
        self.switches: list[Switch] = []
        self.links: list[Link] = []
        self.rails = 0
        self.scalable_units = 0
        # leaf cages no medium serves host by host take one host each
        self.single = single_port_groups(fabric.switches[Tier.LEAF], fabric.speed.name, cluster.media)
        self.spine_down: dict[str, frozenset[str]] = {}  # spines whose split cages take one leaf link each
        self.peer_links = PEER_LINKS if self.spec.attachment is Attachment.MLAG else 0  # beyond each leaf's uplinks
        self.cages: dict[str, tuple[frozenset[int], frozenset[int]]] = {}  # downlink, uplink cages (laid_out)

    def laid_out(self, switch: str, layout: Layout) -> Layout:
        """``layout``, the switch's downlinks and uplinks, noted as the cages they take (``Switch.downlink_cages``,
        ``uplink_cages``): what the free ports are kept for. A leaf is laid out with and without its peer link's
        ports and its uplink cages that take one link each: every cage one of its layouts uses counts."""
        downs, ups = layout
        down, up = self.cages.get(switch, (frozenset(), frozenset()))
        self.cages[switch] = (down | _cages(downs), up | _cages(ups))
        return layout

    def with_cages(self, sw: Switch) -> Switch:
        """The switch with the cages its layouts gave its downlinks and uplinks (:meth:`laid_out`)."""
        down, up = self.cages.get(sw.name, (frozenset(), frozenset()))
        return replace(sw, downlink_cages=down, uplink_cages=up)

    def lone_cages(self, lower: Tier, upper: Tier, per_pair: int) -> tuple[frozenset[str], frozenset[str]]:
        """The port groups of the lower tier's uplinks and the upper tier's downlinks that take one link per
        cage: those no medium serves link by link, when each switch pair's links do not fill whole cages (a
        cage-pair cable needs both ports to go to the same switch)."""
        if per_pair % self.pair_unit(lower, upper) == 0:
            return frozenset(), frozenset()
        media, uplink = self.cluster.media, self.fabric.uplink_speed.name

        def lone(tier: Tier) -> frozenset[str]:
            return frozenset(g.name for g in unserved_groups(self.fabric.switches[tier], uplink, SWITCH_SWITCH, media))

        return lone(lower), lone(upper)

    def pair_unit(self, lower: Tier, upper: Tier) -> int:
        """Links of one cage-pair cable between the two tiers (see _even_spread); 1 when the lower tier's uplink
        cages are not split (a breakout, not a cage pair, serves a split upper cage from them)."""
        media, uplink = self.cluster.media, self.fabric.uplink_speed.name
        below = pair_unit(self.fabric.switches[lower], uplink, media)
        return 1 if below == 1 else max(below, pair_unit(self.fabric.switches[upper], uplink, media))

    # names
    def name(self, tier: Tier, **values: int | str) -> str:
        return expand(self.fabric.naming[tier], {"fabric": self.fabric.name, **values})

    def attached(self) -> list[tuple[Node, tuple[Nic, ...]]]:
        groups = set(self.fabric.node_groups)
        role = self.fabric.role.nic_role
        return [(n, n.profile.nics(role)) for n in self.cluster.nodes if n.group in groups]

    def uplinks_for(self, down: int) -> int:
        if self.spec.uplinks is not None:
            return self.spec.uplinks
        if self.spec.kind is TopologyKind.TOP_OF_RACK:
            return 2
        return math.ceil(down / self.spec.oversubscription)

    # leaves
    def leaves(self) -> list[_Leaf]:
        kind = self.spec.kind
        if kind is TopologyKind.RAIL_OPTIMIZED:
            return self.rail_leaves()
        if kind is TopologyKind.TOP_OF_RACK:
            return self.rack_leaves()
        return self.packed_leaves()

    def make_leaf(self, index: int, down: int, **where: int | str) -> Switch:
        model = self.fabric.switches[Tier.LEAF]
        up = self.uplinks_for(down)
        port_layout(model, self.fabric.speed.name, down, self.fabric.uplink_speed.name, up + self.peer_links,
                    self.single)
        names = {"n": index, **where}
        if "rack" in names:
            names["rack"] = str(names["rack"]).lower()  # host names are lower-case; rack labels need not be
        return Switch(
            self.name(Tier.LEAF, **names),
            self.fabric.name,
            Tier.LEAF,
            model,
            index,
            down,
            up,
            su=where.get("su") if isinstance(where.get("su"), int) else None,  # type: ignore[arg-type]
            rail=where.get("rail") if isinstance(where.get("rail"), int) else None,  # type: ignore[arg-type]
            rack=str(where["rack"]) if "rack" in where else None,
        )

    def rail_leaves(self) -> list[_Leaf]:
        size = self.spec.scalable_unit
        attached = self.attached()
        self.rails = 1 + max((nic.rail or 0) for _, nics in attached for nic in nics)
        slots = self.slots(attached, size)
        self.scalable_units = math.ceil((max(slots) + 1 if slots else 0) / size)
        leaves = [
            _Leaf(self.make_leaf(su * self.rails + rail + 1, size, su=su + 1, rail=rail), [])
            for su in range(self.scalable_units)
            for rail in range(self.rails)
        ]
        for slot, (node, nics) in sorted(zip(slots, attached, strict=True), key=lambda pair: pair[0]):
            su = slot // size
            for nic in nics:
                leaves[su * self.rails + (nic.rail or 0)].hosts.append((node, nic, slot % size))
        return leaves

    @staticmethod
    def slots(attached: list[tuple[Node, tuple[Nic, ...]]], size: int) -> list[int]:
        """Each node's slot in the fabric's scalable units: compute nodes count up from the first slot in spec order,
        the others (UFM, storage servers: nodes the cluster's size does not change) down from the last slot of the
        last SU, so GPU nodes coming or going within that SU move no server's port, address or cable id (h100-4su:
        127 GPU nodes and the UFM pair make 4 SUs, the RA's 127 + UFM). A management node cabled to rails the one
        before it (also a management node) leaves free shares its slot, as NVIDIA's RA puts the UFM HA pair on the
        slot it reserves for UFM."""
        servers = [i for i, (node, _) in enumerate(attached) if node.profile.role != "compute"]
        shared: list[int] = []  # per server, how many slots from the top
        used: set[int] = set()
        for k, i in enumerate(servers):
            rails = {nic.rail or 0 for nic in attached[i][1]}
            before = attached[servers[k - 1]][0].profile.role if k else ""
            if k and attached[i][0].profile.role == "management" == before and not rails & used:
                used |= rails
                shared.append(shared[-1])
            else:
                used = rails
                shared.append(shared[-1] + 1 if shared else 0)
        compute = len(attached) - len(servers)
        top = math.ceil((compute + (shared[-1] + 1 if shared else 0)) / size) * size - 1
        out, up = [0] * len(attached), 0
        from_top = dict(zip(servers, shared, strict=True))
        for i in range(len(attached)):
            if i in from_top:
                out[i] = top - from_top[i]
            else:
                out[i], up = up, up + 1
        return out

    def packed_leaves(self) -> list[_Leaf]:
        model = self.fabric.switches[Tier.LEAF]
        per_leaf = self.hosts_per_leaf(model)
        if self.spec.attachment.paired:
            return self.paired_leaves(per_leaf)
        places = self.packed_places(per_leaf)
        leaves = [_Leaf(self.make_leaf(i + 1, per_leaf), []) for i in range(max(places, default=-1) // per_leaf + 1)]
        for place, (node, nic) in sorted(places.items()):
            leaves[place // per_leaf].hosts.append((node, nic, place % per_leaf))
        return leaves

    def packed_places(self, per_leaf: int) -> dict[int, tuple[Node, Nic]]:
        """Each host port's place on the packed leaves (leaf * per_leaf + port): compute nodes' ports fill the leaves
        from the first port of the first leaf, in spec order; the others' (storage servers, management nodes: what
        the cluster's size does not change) fill down from the last port of the first leaf, each node's ports in its
        NIC order, so GPU nodes coming or going never move a server's port, address or cable id; the block the
        servers keep (:meth:`server_block`) never moves a compute node's port while the servers fit it."""
        attached = [(node, nics) for node, nics in self.attached() if nics]
        compute = [(node, nics) for node, nics in attached if node.profile.role == "compute"]
        servers = [(node, nics) for node, nics in attached if node.profile.role != "compute"]

        def counted_down(place: int) -> int:  # a place's rank counted down from the first leaf's last port (and back)
            return place // per_leaf * per_leaf + per_leaf - 1 - place % per_leaf

        places: dict[int, tuple[Node, Nic]] = {}
        taken = 0  # server ports placed
        for node, nics in servers:
            for j, nic in enumerate(nics):  # the node's block, its first NIC on the lowest port
                places[counted_down(taken + len(nics) - 1 - j)] = (node, nic)
            taken += len(nics)
        reserved = self.server_block(taken, max((len(nics) for _, nics in compute), default=1))
        total = sum(len(nics) for _, nics in compute) + reserved
        free = (p for p in range(-(-total // per_leaf) * per_leaf) if counted_down(p) >= reserved)
        for node, nics in compute:
            for nic in nics:
                places[next(free)] = (node, nic)
        return places

    def server_block(self, taken: int, node_ports: int) -> int:
        """The host ports kept for the servers, counted down from the first leaf's last: ``server_ports`` as declared
        (a block of its own, so servers added within it move no compute port), else the ``taken`` the servers use,
        rounded up to a whole compute node's ``node_ports``, so the compute nodes keep the alignment they have
        without servers (a DGX's two in-band ports, its bond, on one leaf beside an odd server count)."""
        declared = self.spec.server_ports
        if declared is None:
            return -(-taken // node_ports) * node_ports
        if taken > declared:
            raise _InfeasibleError(f"the servers have {taken} ports on this fabric but server_ports keeps {declared}",
                                   f"raise server_ports to at least {-(-taken // node_ports) * node_ports}{_REGROW}")
        if declared % node_ports:
            below, above = declared // node_ports * node_ports, -(-declared // node_ports) * node_ports
            raise _InfeasibleError(f"server_ports {declared} is no multiple of a compute node's {node_ports} ports "
                                   "here, so a node's ports would be split over two leaves",
                                   f"use {above}" + (f" or {below}" if below >= taken else ""))
        return declared

    def paired_leaves(self, per_leaf: int) -> list[_Leaf]:
        """Dual-homed: leaves in pairs (2p+1, 2p+2); a node's ports alternate between the two sides of its pair,
        starting on the emptier one, so a node with two ports has one on each leaf; a node that does not fit the
        current pair starts the next one. Servers (storage, management) are placed first, from the first pair's last
        ports down, compute nodes then from its first ports up, so GPU nodes coming or going move no server. With
        ``server_ports``, the servers keep that many ports on each leaf of the first pair and compute nodes never
        take them, so servers added within the block move no compute port either."""
        attached = [(node, nics) for node, nics in self.attached() if nics]
        for node, nics in attached:
            if len(nics) > 2 * per_leaf:
                raise _InfeasibleError(f"node {node.name} has {len(nics)} ports but a leaf pair takes "
                                       f"{2 * per_leaf} hosts ports", "pick a larger leaf switch")
        tops: list[_PairSides] = []  # per pair and side: the servers' ports
        bottoms: list[_PairSides] = []  # and the compute nodes'
        declared = self.spec.server_ports

        def fill(nodes: list[tuple[Node, tuple[Nic, ...]]], into: list[_PairSides],
                 room: Callable[[int, int], int]) -> None:
            """Each node's ports into its pair's sides, ``room(pair, side)`` the ports a side has for ``into``."""
            p = 0
            for node, nics in nodes:
                while True:
                    if p == len(tops):
                        tops.append(([], []))
                        bottoms.append(([], []))
                    free = [room(p, side) - len(into[p][side]) for side in (0, 1)]
                    first = 0 if free[0] >= free[1] else 1
                    wanted = ((len(nics) + 1) // 2, len(nics) // 2)
                    if all(wanted[k] <= free[(first + k) % 2] for k in (0, 1)):
                        break
                    if declared is not None and into is tops:
                        servers = sum(len(c) for n, c in attached if n.profile.role != "compute")
                        raise _InfeasibleError(
                            f"the servers have {servers} ports on this fabric but server_ports keeps {declared} on "
                            "each leaf of the first pair",
                            f"raise server_ports to at least {-(-servers // 2)}{_REGROW}")
                    p += 1
                for i, nic in enumerate(nics):
                    into[p][(first + i) % 2].append((node, nic))

        def server_room(p: int, side: int) -> int:
            return per_leaf if declared is None else declared if p == 0 else 0

        def compute_room(p: int, side: int) -> int:
            return per_leaf - max(len(tops[p][side]), declared if declared is not None and p == 0 else 0)

        fill([(n, c) for n, c in attached if n.profile.role != "compute"], tops, server_room)
        fill([(n, c) for n, c in attached if n.profile.role == "compute"], bottoms, compute_room)
        return [_Leaf(self.make_leaf(2 * p + side + 1, per_leaf),
                      [(n, c, s) for s, (n, c) in enumerate(bottoms[p][side])]
                      + [(n, c, per_leaf - 1 - s) for s, (n, c) in reversed(list(enumerate(tops[p][side])))])
                for p in range(len(tops)) for side in (0, 1)]

    def hosts_per_leaf(self, model: SwitchModel) -> int:
        """Most host ports a leaf takes while keeping the requested uplinks or oversubscription.

        An even uplink count is preferred (it spreads over 2, 4, ... spines; an odd prime count such as 11 would
        force 11 spines), unless the uplink count was given explicitly. Fewer host ports never need more uplinks
        and leave the uplinks more cages, so the largest count that fits is found by bisection: a few port layouts,
        not one per candidate (which made the layout quadratic in the switch's ports).
        """
        speed, uplink = self.fabric.speed.name, self.fabric.uplink_speed.name

        def fits(down: int) -> bool:
            try:
                port_layout(model, speed, down, uplink, self.uplinks_for(down) + self.peer_links, self.single)
            except _InfeasibleError:
                return False
            return True

        low, high = 0, model.logical_ports(speed)  # fits(low) unless low is 0; nothing above high fits
        while low < high:
            middle = (low + high + 1) // 2
            low, high = (middle, high) if fits(middle) else (low, middle - 1)
        if not low:
            raise _InfeasibleError(
                f"{model.name} has no room for a host port plus its uplinks",
                "lower the uplink count or pick a larger switch",
            )
        for down in range(low, 0, -1):  # the parity of ceil(down / oversubscription) flips within 17 steps
            up = self.uplinks_for(down)
            if (up % 2 == 0 or up == 1 or self.spec.uplinks is not None) and fits(down):
                return down
        return low

    def rack_leaves(self) -> list[_Leaf]:
        by_rack: dict[str, list[tuple[Node, Nic]]] = {}
        for node, nics in self.attached():
            by_rack.setdefault(node.rack.name, []).extend((node, nic) for nic in nics)
        order = [r.name for r in self.cluster.facility.racks if r.name in by_rack]
        return [
            _Leaf(
                self.make_leaf(i + 1, len(by_rack[rack]), rack=rack),
                [(n, c, s) for s, (n, c) in enumerate(by_rack[rack])],
            )
            for i, rack in enumerate(order)
        ]

    # host links
    def with_server_block(self, leaves: list[_Leaf]) -> list[_Leaf]:
        """The leaves, the first (each of the first pair, dual-homed) carrying the ports a declared
        ``server_ports`` keeps for servers: its last host ports, where :meth:`packed_places` and
        :meth:`paired_leaves` count the servers down from, so the free ports and ``explain`` name the block the
        compute nodes never take."""
        declared = self.spec.server_ports
        if declared is None or not leaves:
            return leaves
        first = leaves[:2] if self.spec.attachment.paired else leaves[:1]
        for leaf in first:
            sw = leaf.switch
            downs, _ = port_layout(sw.model, self.fabric.speed.name, sw.down_ports, self.fabric.uplink_speed.name,
                                   sw.up_ports, self.single)
            leaf.switch = replace(sw, server_block=tuple(Port(sw.name, number, name)
                                                         for number, name in downs[len(downs) - declared:]))
        return leaves

    def host_links(self, leaves: Sequence[_Leaf]) -> Iterator[Link]:
        speed = self.fabric.speed.name
        for leaf in leaves:
            sw = leaf.switch
            downs, _ = self.laid_out(sw.name, port_layout(sw.model, speed, sw.down_ports, self.fabric.uplink_speed.name,
                                                          sw.up_ports, self.single))
            for node, nic, slot in leaf.hosts:
                number, port_name = downs[slot]
                yield Link(
                    self.fabric.name,
                    NODE_LEAF,
                    Port(node.name, nic.index + 1, nic.port),
                    Port(sw.name, number, port_name),
                    speed,
                    nic.rail if sw.rail is not None else None,
                    sw.su,
                    nic,
                )

    def peer_link(self, leaves: Sequence[_Leaf]) -> Iterator[Link]:
        """MLAG: each pair's peer link, its cables on both leaves' uplink-speed cages after the uplinks, port k of
        one leaf to port k of the other."""
        if not self.peer_links:
            return
        speed, uplink = self.fabric.speed.name, self.fabric.uplink_speed.name
        used = {(end.device, end.number) for link in self.links for end in (link.a, link.z)}
        for a, z in zip(leaves[0::2], leaves[1::2], strict=True):
            ends = [self.laid_out(sw.name, port_layout(sw.model, speed, sw.down_ports, uplink,
                                                       sw.up_ports + self.peer_links, self.single))[1][sw.up_ports:]
                    for sw in (a.switch, z.switch)]
            taken = [name for sw, ports in zip((a.switch, z.switch), ends, strict=True) for number, name in ports
                     if (sw.name, number) in used]
            if taken:  # uplinks on cages that take one link each moved past the ports the layout reserved
                raise _InfeasibleError(f"the peer link of {a.switch.name} and {z.switch.name} finds port(s) "
                                       f"{', '.join(taken)} taken by uplinks", "set topology.uplinks to fill whole "
                                       "cages, or pick a leaf with more uplink cages")
            for (a_number, a_name), (z_number, z_name) in zip(*ends, strict=True):
                yield Link(self.fabric.name, LEAF_LEAF, Port(a.switch.name, a_number, a_name),
                           Port(z.switch.name, z_number, z_name), uplink)

    # upper tiers
    def compile(self) -> FabricTopology:
        leaves = self.with_server_block(self.leaves())
        self.switches.extend(leaf.switch for leaf in leaves)
        self.links.extend(self.host_links(leaves))
        tiers = self.upper_tiers([leaf.switch for leaf in leaves])
        self.links.extend(self.peer_link(leaves))
        host_ports = sum(len(leaf.hosts) for leaf in leaves)
        pods = len({s.pod for s in self.switches if s.pod is not None})
        return FabricTopology(
            self.fabric,
            tiers,
            tuple(self.with_cages(sw) for sw in self.switches),
            tuple(self.links),
            host_ports,
            self.scalable_units,
            self.rails,
            pods,
        )

    def upper_tiers(self, leaves: list[Switch]) -> int:
        asked = self.spec.tiers
        if len(leaves) <= 1 and asked == "auto":
            return 1
        spine_model = self.fabric.switches[Tier.SPINE]
        uplink = self.fabric.uplink_speed.name
        up = max(leaf.up_ports for leaf in leaves)
        unit = self.pair_unit(Tier.LEAF, Tier.SPINE)
        spine_ports = spine_model.logical_ports(uplink)
        spines = _even_spread(len(leaves), up, spine_ports, 2 if len(leaves) > 1 else 1, unit)
        if spines is not None and self.spine_slots(leaves, up // spines)[1] > spine_ports:
            spines = None  # the cages breakouts leave partly used at row ends do not fit under one spine tier
        if asked == "2" or (asked == "auto" and spines is not None):
            if spines is None and up < 2 <= len(leaves):
                raise _InfeasibleError(f"each leaf has {up} uplink, which cannot reach the 2 or more spines that "
                                       f"{len(leaves)} leaves need", "set topology.uplinks to 2 or more, or raise "
                                       "the scalable unit")
            if spines is None:
                raise _InfeasibleError(
                    f"{len(leaves)} leaves with {up} uplinks each do not fit under one spine tier "
                    f"of {spine_model.name}",
                    "use tiers: 3 (or auto) with kind fat-tree or rail-optimized",
                )
            self.connect_pod(leaves, spines, pod=None, first_index=1, full_leaves=len(leaves))
            return 2
        if self.spec.kind is TopologyKind.LEAF_SPINE:
            raise _InfeasibleError(
                f"{len(leaves)} leaves do not fit under one spine tier and {self.spec.kind.value} "
                "fabrics have at most two tiers",
                "use kind fat-tree, or a larger spine switch",
            )
        self.three_tiers(leaves, up)
        return 3

    def pods(self, leaves: list[Switch], spine_ports: int) -> list[list[Switch]]:
        per_pod_max = spine_ports // 2
        if self.spec.kind is TopologyKind.RAIL_OPTIMIZED:
            groups = [[leaf for leaf in leaves if leaf.rail == rail] for rail in range(self.rails)]
        else:
            groups = [leaves]
        pods: list[list[Switch]] = []
        for group in groups:
            count = math.ceil(len(group) / per_pod_max)
            while True:  # more, smaller pods while the cages breakouts leave partly used overfill a pod's spines
                size = math.ceil(len(group) / count)
                chunks = [group[i * size : (i + 1) * size] for i in range(count)]
                if size == 1 or all(self.spine_slots(chunk, 1)[1] <= per_pod_max for chunk in chunks):
                    break
                count += 1
            pods.extend(chunk for chunk in chunks if chunk)
        return pods

    def three_tiers(self, leaves: list[Switch], up: int) -> None:
        spine_model = self.fabric.switches[Tier.SPINE]
        core_model = self.fabric.switches[Tier.CORE]
        uplink = self.fabric.uplink_speed.name
        spine_ports = spine_model.logical_ports(uplink)
        pods = self.pods(leaves, spine_ports)
        full = max(len(p) for p in pods)
        unit = self.pair_unit(Tier.LEAF, Tier.SPINE)
        per_pod = _even_spread(full, up, spine_ports // 2, 2, unit)
        if per_pod is None and up < 2:
            raise _InfeasibleError(f"each leaf has {up} uplink, which cannot reach the 2 or more spines of its pod",
                                   "set topology.uplinks to 2 or more, or raise the scalable unit")
        if per_pod is None:
            raise _InfeasibleError(
                f"pods of {full} leaves with {up} uplinks do not fit {spine_model.name} spines",
                "pick a spine switch with more ports",
            )
        core_unit = self.pair_unit(Tier.SPINE, Tier.CORE)
        spine_up = full * up // per_pod
        if self.breakout() is not None:  # pods sized around partly used cages: whole cage pairs to the cores
            spine_up = -(-spine_up // core_unit) * core_unit
        planes: list[list[Switch]] = [[] for _ in range(per_pod)]
        for p, pod in enumerate(pods):
            for j, spine in enumerate(
                self.connect_pod(
                    pod, per_pod, pod=p + 1, first_index=p * per_pod + 1, full_leaves=full, spine_up=spine_up
                )
            ):
                planes[j].append(spine)
        cores_per_plane = _even_spread(len(pods), spine_up, core_model.logical_ports(uplink), 1, core_unit)
        if cores_per_plane is None:
            raise _InfeasibleError(
                f"{len(pods)} pods need more than one {core_model.name} core tier can hold",
                "the fabric is larger than three tiers of this switch allow",
            )
        for j, plane in enumerate(planes):
            self.connect_plane(plane, cores_per_plane, first_index=j * cores_per_plane + 1, spine_up=spine_up)

    def connect_pod(
        self,
        leaves: list[Switch],
        spines: int,
        pod: int | None,
        first_index: int,
        full_leaves: int,
        spine_up: int = 0,
    ) -> list[Switch]:
        """Add a pod's spines and its leaf-spine links; spines are sized for a full pod so it can grow."""
        model = self.fabric.switches[Tier.SPINE]
        uplink = self.fabric.uplink_speed.name
        per_spine = leaves[0].up_ports // spines
        starts, used = self.spine_slots(leaves, per_spine)
        down = max(full_leaves * per_spine, used)
        leaf_up, spine_down = self.lone_cages(Tier.LEAF, Tier.SPINE, per_spine)
        created = []
        for j in range(spines):
            index = first_index + j
            name = self.name(Tier.SPINE, n=index, pod=pod or 1)
            spine = Switch(name, self.fabric.name, Tier.SPINE, model, index, down, spine_up, pod=pod)
            created.append(spine)
            self.spine_down[spine.name] = spine_down
        self.switches.extend(created)
        for i, leaf in enumerate(leaves):
            _, leaf_ups = self.laid_out(leaf.name, port_layout(
                leaf.model, self.fabric.speed.name, leaf.down_ports, uplink, leaf.up_ports, self.single, leaf_up
            ))
            for j, spine in enumerate(created):
                spine_downs, _ = port_layout(model, uplink, down, uplink, spine_up, spine_down)
                for t in range(per_spine):
                    lp = leaf_ups[j * per_spine + t]
                    sp = spine_downs[starts[i] + t]
                    self.links.append(
                        Link(
                            self.fabric.name,
                            LEAF_SPINE,
                            Port(leaf.name, *lp),
                            Port(spine.name, *sp),
                            uplink,
                            leaf.rail,
                            leaf.su,
                        )
                    )
        for spine in created if leaves else ():  # after the leaves' layouts, whose error is the one to read
            self.laid_out(spine.name, port_layout(model, uplink, down, uplink, spine_up, spine_down))
        return created

    def breakout(self) -> Medium | None:
        """The breakout that serves the spines' split cages from the leaves' uplinks, if any."""
        return breakout(self.fabric.switches[Tier.LEAF], self.fabric.switches[Tier.SPINE],
                        self.fabric.uplink_speed.name, self.cluster.media)

    def spine_slots(self, leaves: list[Switch], per_spine: int) -> tuple[list[int], int]:
        """Where each leaf's links start among a spine's downlinks, and how many downlinks they take: leaf after
        leaf, except where a breakout serves the spine's cages from the leaves' uplinks. One breakout's legs lie in
        adjacent racks of one row within its fan-out, so a top-of-rack leaf in another row, or farther along the
        row from the cage's first leaf than the fan-out reaches, starts the next cage (leaving a cage partly used
        at each row's end)."""
        medium = self.breakout()
        racks = {r.name: r for r in self.cluster.facility.racks}
        width = self.cluster.facility.rack_width_m
        starts: list[int] = []
        cursor, first = 0, None
        for leaf in leaves:
            rack = racks.get(leaf.rack or "")
            if medium is not None and rack is not None:
                legs = medium.legs
                if cursor % legs == 0 or first is None:
                    first = rack
                elif rack.row != first.row or abs(rack.index - first.index) * width > medium.fanout_m:
                    cursor += legs - cursor % legs
                    first = rack
            starts.append(cursor)
            cursor += per_spine
        return starts, cursor

    def connect_plane(self, spines: list[Switch], cores: int, first_index: int, spine_up: int) -> None:
        model = self.fabric.switches[Tier.CORE]
        uplink = self.fabric.uplink_speed.name
        per_core = spine_up // cores
        down = len(spines) * per_core
        spine_up_single, core_down = self.lone_cages(Tier.SPINE, Tier.CORE, per_core)
        created = [
            Switch(
                self.name(Tier.CORE, n=first_index + h),
                self.fabric.name,
                Tier.CORE,
                model,
                first_index + h,
                down,
                0,
            )
            for h in range(cores)
        ]
        self.switches.extend(created)
        core_downs, _ = port_layout(model, uplink, down, uplink, 0, core_down)
        for core in created:
            self.laid_out(core.name, (core_downs, ()))
        for q, spine in enumerate(spines):
            _, spine_ups = self.laid_out(spine.name, port_layout(
                spine.model, uplink, spine.down_ports, uplink, spine.up_ports,
                self.spine_down.get(spine.name, frozenset()), spine_up_single))
            for h, core in enumerate(created):
                for t in range(per_core):
                    self.links.append(
                        Link(
                            self.fabric.name,
                            SPINE_CORE,
                            Port(spine.name, *spine_ups[h * per_core + t]),
                            Port(core.name, *core_downs[q * per_core + t]),
                            uplink,
                        )
                    )


def _collision_hint(ft: FabricTopology, owner: str) -> str:
    if owner == f"switch of fabric {ft.fabric.name}":
        wanted = "{su} and {rail}" if ft.fabric.topology.kind is TopologyKind.RAIL_OPTIMIZED else "{n}"
        return f"the {ft.fabric.name} patterns must tell its switches apart: include {wanted}"
    return "make the names distinct, e.g. include {fabric} in the switch patterns"


def _unique_names(cluster: Cluster, fabrics: Sequence[FabricTopology]) -> list[SpecIssue]:
    owners = {n.name: "node" for n in cluster.nodes}
    issues = []
    for ft in fabrics:
        for sw in ft.switches:
            where = ft.fabric.position
            if not DEVICE_NAME.fullmatch(sw.name):
                issues.append(
                    SpecIssue(
                        where,
                        f"fabrics.{ft.fabric.name}.naming",
                        f"switch name {sw.name!r} is not a valid host name",
                        "lower-case letters, digits and '-', at most 63 characters",
                    )
                )
                break
            if sw.name in owners:
                issues.append(
                    SpecIssue(
                        where,
                        f"fabrics.{ft.fabric.name}.naming",
                        f"switch name {sw.name!r} is already used by a {owners[sw.name]}",
                        _collision_hint(ft, owners[sw.name]),
                    )
                )
                break
            owners[sw.name] = f"switch of fabric {ft.fabric.name}"
    return issues


@without_gc
def compile_topology(cluster: Cluster) -> Topology:
    """Compile every fabric of the cluster; infeasible fabrics are reported together as a SpecError."""
    return _compile_all(cluster)


def _compile_all(cluster: Cluster) -> Topology:
    compiled: list[FabricTopology] = []
    issues: list[SpecIssue] = []
    for fabric in cluster.fabrics:
        try:
            compiled.append(_FabricCompiler(cluster, fabric).compile())
        except _InfeasibleError as exc:
            issues.append(SpecIssue(fabric.position, f"fabrics.{fabric.name}.topology", str(exc), exc.hint))
    issues.extend(_unique_names(cluster, compiled))
    if issues:
        raise SpecError(issues)
    topology = Topology(cluster, place_switches(cluster, compiled))
    for feature in FEATURES:  # plans over the placed switches: cables, then address plans
        if feature.compile is not None:
            topology = feature.compile(topology)
    return topology
