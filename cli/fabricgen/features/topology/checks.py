"""The compiled fabric's own checks: ports used once and within each switch's budget, every node port linked
once, rails aligned to their leaves, dual-homed nodes on both leaves of their pair, the oversubscription achieved
against the one asked for, partial scalable units, and rack units. Each is O(links)."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterator

from fabricgen.core.errors import Finding, Severity
from fabricgen.features.feature import fabric_error, fabric_warning
from fabricgen.model.cluster import Attachment, FabricType, Tier, TopologyKind
from fabricgen.model.topology import NODE_LEAF, FabricTopology, Topology


def port_budget(ft: FabricTopology) -> Iterator[Finding]:
    """No switch port is used twice and no switch uses more ports than its model has."""
    used: dict[str, set[int]] = {}
    for link in ft.links:
        for end in (link.a, link.z):
            ports = used.setdefault(end.device, set())
            if end.number in ports:
                yield fabric_error(ft.fabric, "port-budget", end.device,
                                   f"port {end.name} (#{end.number}) is used twice")
            ports.add(end.number)
    for sw in ft.switches:
        speeds = (ft.fabric.speed.name, ft.fabric.uplink_speed.name) if sw.tier is Tier.LEAF else (
            ft.fabric.uplink_speed.name,)
        radix = sw.model.capacity(speeds)
        count = len(used.get(sw.name, ()))
        if count > radix:
            yield fabric_error(ft.fabric, "port-budget", sw.name,
                               f"uses {count} ports but a {sw.model.name} has {radix}")
        if sw.down_ports + sw.up_ports > radix:
            yield fabric_error(ft.fabric,
                "port-budget",
                sw.name,
                f"plans {sw.down_ports} down + {sw.up_ports} up ports but a {sw.model.name} has {radix}",
            )


def oversubscription(ft: FabricTopology) -> Iterator[Finding]:
    """Achieved leaf oversubscription (planned downlink bandwidth over uplink bandwidth) vs the request."""
    if ft.tiers == 1:
        return
    asked = ft.fabric.topology.oversubscription
    down_gbps, up_gbps = ft.fabric.speed.gbps, ft.fabric.uplink_speed.gbps
    worst = max(
        ((s.down_ports * down_gbps) / (s.up_ports * up_gbps), s.name)
        for s in ft.switches_in(Tier.LEAF)
        if s.up_ports
    )
    if worst[0] > asked + 1e-9:
        yield fabric_warning(ft.fabric,
            "oversubscription",
            worst[1],
            f"leaf oversubscription is {worst[0]:.2f}:1, above the requested {asked:g}:1",
            "raise topology.uplinks or use a faster uplink_speed",
        )


def scalable_units(ft: FabricTopology) -> Iterator[Finding]:
    """A partial last scalable unit works but leaves leaf ports idle: say so."""
    if ft.fabric.topology.kind is not TopologyKind.RAIL_OPTIMIZED:
        return
    size = ft.fabric.topology.scalable_unit
    nodes = len({link.a.device for link in ft.links if link.tier == NODE_LEAF})
    last = nodes - (ft.scalable_units - 1) * size
    if last < size:
        yield fabric_warning(ft.fabric,
            "partial-su",
            f"SU {ft.scalable_units}",
            f"holds {last} of {size} nodes",
            "the SU's leaves are built and cabled upward in full, ready for the missing nodes",
        )


def rail_alignment(ft: FabricTopology) -> Iterator[Finding]:
    """Rail r of every node lands on leaf r of its SU, and every node sits in exactly one SU."""
    if ft.fabric.topology.kind is not TopologyKind.RAIL_OPTIMIZED:
        return
    leaves = {s.name: s for s in ft.switches_in(Tier.LEAF)}
    node_su: dict[str, int | None] = {}
    for link in ft.links:
        if link.tier != NODE_LEAF:
            continue
        leaf = leaves[link.z.device]
        rail = link.nic.rail if link.nic else None
        if leaf.rail != rail:
            yield fabric_error(ft.fabric,
                "rail-alignment",
                link.a.device,
                f"rail {rail} ({link.a.name}) lands on {leaf.name}, a rail {leaf.rail} leaf",
            )
        if node_su.setdefault(link.a.device, leaf.su) != leaf.su:
            yield fabric_error(ft.fabric,
                "rail-alignment",
                link.a.device,
                f"rails land in SU {node_su[link.a.device]} and SU {leaf.su}",
            )


def host_attachment(ft: FabricTopology) -> Iterator[Finding]:
    """Every attached node port has exactly one link."""
    counts = Counter((link.a.device, link.a.number) for link in ft.links if link.tier == NODE_LEAF)
    for (device, number), count in sorted(counts.items()):
        if count > 1:
            yield fabric_error(ft.fabric, "host-attachment", device, f"NIC port #{number} has {count} links")


def dual_homing(ft: FabricTopology) -> Iterator[Finding]:
    """On a dual-homed fabric no node with two or more ports has them all on one leaf (one leaf failure would cut
    it off)."""
    if not ft.fabric.topology.attachment.paired:
        return
    leaves: dict[str, set[str]] = {}
    for link in ft.links:
        if link.tier == NODE_LEAF:
            leaves.setdefault(link.a.device, set()).add(link.z.device)
    ports = Counter(link.a.device for link in ft.links if link.tier == NODE_LEAF)
    for node, on in sorted(leaves.items()):
        if ports[node] > 1 and len(on) == 1:
            yield fabric_error(ft.fabric, "dual-homing", node, f"all {ports[node]} ports land on {next(iter(on))}",
                               "a dual-homed node needs its ports on both leaves of its pair")
    single = sorted(node for node, count in ports.items() if count == 1)
    if single:
        more = f" and {len(single) - 3} more" if len(single) > 3 else ""
        yield fabric_warning(ft.fabric, "dual-homing", ft.fabric.name,
                             f"{len(single)} nodes have one port on this dual-homed fabric ({', '.join(single[:3])}"
                             f"{more}): one leaf lost takes each of them off it",
                             "give their profiles two ports of the fabric's role, or set attachment: single")


def bond_members(topology: Topology) -> Iterator[Finding]:
    """An active-backup bond's members share one leaf: the backup takes over the primary's address, which only
    its own leaf's subnet (VLAN) carries. An 802.3ad bond needs an MLAG pair (one port-channel over both leaves),
    its members one on each leaf of the pair; on an MLAG pair the leaves run LACP, so a bond there runs 802.3ad
    and a node's two ports of the role are bonded (two addresses in one pair subnet would flux ARP)."""
    nodes = {node.name: node for node in topology.cluster.nodes}
    for ft in topology.fabrics:
        mlag = ft.fabric.topology.attachment is Attachment.MLAG
        leaves: dict[tuple[str, str], set[str]] = {}
        loose: dict[str, list[str]] = {}
        for link in ft.links:
            if link.tier != NODE_LEAF or link.nic is None or not link.nic.netdev:
                continue
            bond = nodes[link.a.device].profile.bond_of(link.nic.netdev)
            if bond is not None:
                leaves.setdefault((link.a.device, bond.name), set()).add(link.z.device)
            else:
                loose.setdefault(link.a.device, []).append(link.nic.netdev)
        if leaves and ft.fabric.type is FabricType.ROCE:
            (node, bond_name), _ = min(leaves.items())
            yield fabric_error(ft.fabric, "bond-members", node, f"{bond_name} bonds RoCE ports of fabric "
                               f"{ft.fabric.name}: RDMA over a Linux bond needs RoCE LAG (both members on one "
                               "ConnectX card), which fabricgen does not plan",
                               "leave RoCE ports unbonded: LNet and NCCL run multi-rail over each port")
            continue
        reported: set[str] = set()  # a profile's bond is reported once, at its line, not once per node
        for (node, bond_name), on in sorted(leaves.items()):
            profile = nodes[node].profile
            bond = next(b for b in profile.bonds if b.name == bond_name)
            key = f"{profile.name}.{bond_name}"
            if bond.mode and bond.lacp != mlag and key not in reported:
                reported.add(key)
                yield Finding(Severity.ERROR, "bond-members", node, (
                    f"{bond_name} of profile {profile.name} runs {bond.mode}, but fabric {ft.fabric.name}'s leaves "
                    + ("are MLAG pairs, whose port-channels run LACP" if mlag else
                       "are not MLAG pairs: LACP needs one port-channel over both leaves of a pair")),
                    "leave mode out (it follows the fabric: 802.3ad over an MLAG pair, active-backup on one "
                    "leaf)" + ("" if mlag else f", or set fabrics.{ft.fabric.name}.topology.attachment: mlag "
                               "(an Ethernet leaf-spine fabric)"), bond.position or ft.fabric.position)
            if mlag and len(on) < 2:
                yield fabric_error(ft.fabric, "bond-members", node, f"the members of {bond_name} all land on "
                                   f"{next(iter(on))}: an MLAG bond has a member on each leaf of the pair",
                                   "list the bond's members in port order, so they alternate between the pair's "
                                   "leaves as the node's ports do")
            elif not mlag and len(on) > 1 and not bond.lacp:  # an explicit 802.3ad is reported above
                yield fabric_error(ft.fabric, "bond-members", node, f"the members of {bond_name} land on leaves "
                                   f"{' and '.join(sorted(on))}: the backup could not carry the primary's address",
                                   "use attachment: mlag (LACP over the leaf pair), or attachment: single with an "
                                   "even number of host ports per leaf, or do not bond a dual-homed node's ports "
                                   "(each routes in its own leaf's subnet)")
        for node, netdevs in sorted(loose.items()):
            if mlag and len(netdevs) > 1:
                yield fabric_error(ft.fabric, "bond-members", node, f"ports {', '.join(netdevs)} are not bonded on "
                                   f"MLAG fabric {ft.fabric.name}: each would hold an address in its pair's one "
                                   "subnet", f"bond them in profile {nodes[node].profile.name} (bonds: bond0: "
                                   "{members: [...]})")


def structure(topology: Topology) -> Iterator[Finding]:
    """The per-fabric checks above over every fabric."""
    for ft in topology.fabrics:
        for check in (port_budget, host_attachment, rail_alignment, dual_homing, oversubscription, scalable_units):
            yield from check(ft)


def rack_collisions(topology: Topology) -> Iterator[Finding]:
    """No two devices share a rack unit and every device lies inside its rack."""
    top = topology.cluster.facility.rack_units
    by_rack: dict[str, list[tuple[int, int, str]]] = {}
    for node in topology.cluster.nodes:
        by_rack.setdefault(node.rack.name, []).append((node.u, node.profile.height_u, node.name))
    for ft in topology.fabrics:
        for sw in ft.switches:
            if sw.rack is not None and sw.u is not None:
                by_rack.setdefault(sw.rack, []).append((sw.u, sw.model.height_u, sw.name))
    for rack, devices in sorted(by_rack.items()):
        devices.sort()
        for (u, height, name), (next_u, _, next_name) in itertools.pairwise(devices):
            if next_u < u + height:
                yield Finding(Severity.ERROR, "rack-units", rack, f"{name} (U{u}, {height}U) overlaps {next_name} "
                                                                  f"(U{next_u})")
        for u, height, name in devices:
            if u < 1 or u + height - 1 > top:
                yield Finding(Severity.ERROR, "rack-units", rack, f"{name} at U{u} ({height}U) is outside the "
                                                                  f"{top}U rack")
