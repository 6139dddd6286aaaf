"""Stage 5, check: findings over the compiled topology (errors stop the pipeline; warnings are shown).

Each check is a function ``(topology) -> Iterator[Finding]`` listed in :data:`CHECKS`; every one is O(links).
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Iterable, Iterator

from fabricgen.core.errors import Finding, Severity
from fabricgen.core.gcpause import without_gc
from fabricgen.features.addressing.plan import asn_overlap
from fabricgen.features.cabling.plan import switch_cage, switch_connector
from fabricgen.features.infiniband.view import NODE_DESCRIPTION_BYTES, ib_fabric, routing_engines
from fabricgen.features.lustre.build import check_mgs_addresses
from fabricgen.features.sriov.build import check_vf_guids
from fabricgen.model.cabling import Cable
from fabricgen.model.cluster import Tier, TopologyKind
from fabricgen.model.topology import NODE_LEAF, FabricTopology, Topology

Check = Callable[[FabricTopology], Iterator[Finding]]


def _error(ft: FabricTopology, check: str, subject: str, message: str, hint: str = "") -> Finding:
    return Finding(Severity.ERROR, check, subject, message, hint, ft.fabric.position)


def _warning(ft: FabricTopology, check: str, subject: str, message: str, hint: str = "") -> Finding:
    return Finding(Severity.WARNING, check, subject, message, hint, ft.fabric.position)


def port_budget(ft: FabricTopology) -> Iterator[Finding]:
    """No switch port is used twice and no switch uses more ports than its model has."""
    used: dict[str, set[int]] = {}
    for link in ft.links:
        for end in (link.a, link.z):
            ports = used.setdefault(end.device, set())
            if end.number in ports:
                yield _error(ft, "port-budget", end.device, f"port {end.name} (#{end.number}) is used twice")
            ports.add(end.number)
    for sw in ft.switches:
        speeds = (ft.fabric.speed.name, ft.fabric.uplink_speed.name) if sw.tier is Tier.LEAF else (
            ft.fabric.uplink_speed.name,)
        radix = sw.model.capacity(speeds)
        count = len(used.get(sw.name, ()))
        if count > radix:
            yield _error(ft, "port-budget", sw.name, f"uses {count} ports but a {sw.model.name} has {radix}")
        if sw.down_ports + sw.up_ports > radix:
            yield _error(
                ft,
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
        yield _warning(
            ft,
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
        yield _warning(
            ft,
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
            yield _error(
                ft,
                "rail-alignment",
                link.a.device,
                f"rail {rail} ({link.a.name}) lands on {leaf.name}, a rail {leaf.rail} leaf",
            )
        if node_su.setdefault(link.a.device, leaf.su) != leaf.su:
            yield _error(
                ft,
                "rail-alignment",
                link.a.device,
                f"rails land in SU {node_su[link.a.device]} and SU {leaf.su}",
            )


def host_attachment(ft: FabricTopology) -> Iterator[Finding]:
    """Every attached node port has exactly one link."""
    counts = Counter((link.a.device, link.a.number) for link in ft.links if link.tier == NODE_LEAF)
    for (device, number), count in sorted(counts.items()):
        if count > 1:
            yield _error(ft, "host-attachment", device, f"NIC port #{number} has {count} links")


def shared_headroom_pool(ft: FabricTopology) -> Iterator[Finding]:
    """over_subscribe_ratio at most the ports of each switch, all of them lossless (SONiC's bound: sonic-utilities
    ``config buffer shared_headroom_pool over-subscribe-ratio`` takes 0..len(PORT)). A larger ratio sizes the pool
    below one port's xoff: even one pausing port can overrun it and drop lossless traffic."""
    qos = ft.fabric.qos
    if qos is None or not qos.over_subscribe_ratio:
        return
    ports = Counter(end.device for link in ft.links for end in (link.a, link.z))
    short = sorted((count, sw.name) for sw in ft.switches if (count := ports[sw.name]) < qos.over_subscribe_ratio)
    if short:
        fewest, name = short[0]
        others = f" (and {len(short) - 1} more switches)" if len(short) > 1 else ""
        yield Finding(Severity.ERROR, "shared-headroom-pool", name,
                      f"over_subscribe_ratio {qos.over_subscribe_ratio} is above its {fewest} lossless ports{others}: "
                      "the shared headroom pool would hold less than one port's xoff",
                      f"use over_subscribe_ratio {fewest} or less: SONiC's own CLI takes at most the port count",
                      qos.shared_headroom_pool_position or ft.fabric.position)


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


def cable_plan(topology: Topology) -> Iterator[Finding]:
    """Cables match the compiled links tier by tier, every port has one cable, lengths are within reach, the
    legs of every splitter share its medium, switch connector and length, no more of them than it has, and a
    cable-plug splitter (a DAC or AOC, no switch transceiver) is the only cable in its switch cage."""
    for ft in topology.fabrics:
        links = Counter(link.tier for link in ft.links)
        cables = Counter(c.tier for c in topology.cables if c.fabric == ft.fabric.name)
        if links != cables:
            yield _error(ft, "cable-count", ft.fabric.name, f"cables per tier {dict(cables)} differ from links "
                                                            f"per tier {dict(links)}")
    ports: Counter[tuple[str, str]] = Counter()
    splitters: dict[str, list[Cable]] = {}
    plugs: dict[tuple[str, str], str] = {}  # switch cage -> the cable-plug splitter that fills it
    for cable in topology.cables:
        ports[(cable.a.device, cable.a.port)] += 1
        ports[(cable.z.device, cable.z.port)] += 1
        if cable.leg:
            splitters.setdefault(cable.physical, []).append(cable)
            if cable.medium.switch_optic is None:
                plugs.setdefault((cable.z.device, switch_cage(cable.z.port)), cable.physical)
        elif cable.physical != cable.id:
            yield Finding(Severity.ERROR, "cable-splitter", cable.id, f"is not a splitter leg but names physical "
                                                                      f"cable {cable.physical}")
        if not cable.run_m <= cable.length_m <= cable.medium.reach_m:
            yield Finding(Severity.ERROR, "cable-length", cable.id, f"{cable.length_m:g} m cable for a "
                                                                    f"{cable.run_m:g} m run exceeds or misses the "
                                                                    f"{cable.medium.reach_m:g} m reach")
    for (device, port), count in sorted(item for item in ports.items() if item[1] > 1):  # sort only the few bad
        if count > 1:
            yield Finding(Severity.ERROR, "cable-ports", device, f"port {port} has {count} cables")
    for physical, legs in splitters.items():
        yield from _splitter(physical, legs)
    if plugs:
        yield from _shared_plug_cages(topology.cables, plugs)


def _shared_plug_cages(cables: Iterable[Cable], plugs: dict[tuple[str, str], str]) -> Iterator[Finding]:
    """A DAC or AOC splitter's switch plug takes the whole cage: no other physical cable may end in it."""
    for cable in cables:
        for device, port in ((cable.a.device, cable.a.port), (cable.z.device, cable.z.port)):
            owner = plugs.get((device, switch_cage(port)))
            if owner is not None and cable.physical != owner:
                yield Finding(Severity.ERROR, "cable-splitter", owner, f"plugs into the whole cage "
                              f"{switch_cage(port)} of {device}, but {cable.id} also ends there ({port})")


def _splitter(physical: str, legs: list[Cable]) -> Iterator[Finding]:
    """One physical splitter: its legs (cables sharing ``physical``) agree on what is one object."""
    first = legs[0]
    medium, length = first.medium, first.length_m
    connector = (first.z.device, switch_connector(first.z.port, medium.legs))

    def error(message: str) -> Finding:
        return Finding(Severity.ERROR, "cable-splitter", physical, message)

    if medium.legs < 2:
        yield error(f"has legs but its medium {medium.name} is not a splitter")
    if len(legs) > medium.legs:
        yield error(f"has {len(legs)} legs; {medium.name} is a 1:{medium.legs} splitter")
    numbers = [c.leg for c in legs]
    if len(set(numbers)) != len(numbers) or not all(1 <= n <= medium.legs for n in numbers):
        yield error(f"legs are numbered {numbers}; each must be distinct, 1..{medium.legs}")
    for cable in legs[1:]:
        if cable.medium != medium:
            yield error(f"leg {cable.id} uses {cable.medium.name}, its first leg {medium.name}")
        if cable.length_m != length or cable.part != first.part:
            yield error(f"leg {cable.id} is {cable.part} ({cable.length_m:g} m), its first leg {first.part} "
                        f"({length:g} m)")
        if (cable.z.device, switch_connector(cable.z.port, medium.legs)) != connector:
            yield error(f"leg {cable.id} ends at {cable.z.device}:{cable.z.port}, another switch connector than "
                        f"{first.z.device}:{first.z.port}")


def infiniband_subnet(topology: Topology) -> Iterator[Finding]:
    """NodeDescriptions unique and within 64 bytes, routing-engine preconditions, GUIDs known and all used."""
    for ft in topology.fabrics:
        sm = ft.fabric.subnet_manager
        if ft.fabric.type != "infiniband" or sm is None:
            continue
        ib = ib_fabric(topology, ft)
        seen: set[str] = set()
        for node in ib.nodes:
            if len(node.description.encode()) > NODE_DESCRIPTION_BYTES:
                yield _error(ft, "node-description", node.description, f"is {len(node.description.encode())} "
                             f"bytes; InfiniBand NodeDescription holds {NODE_DESCRIPTION_BYTES}", "shorten the name")
            if node.description in seen:
                yield _error(ft, "node-description", node.description, "is not unique on the fabric")
            seen.add(node.description)
        if "ftree" in routing_engines(sm.engines, ft.tiers) and ft.tiers < 2:
            yield _error(ft, "routing-engine", ft.fabric.name, "ftree needs at least two switch tiers; this fabric "
                         "has one switch", "use routing_engine: minhop for a single switch")
        if ib.missing_guids:
            yield _warning(ft, "guids", ft.fabric.name, f"GUIDs of {len(ib.missing_guids)} devices are unknown (e.g. "
                           f"{ib.missing_guids[0]}): root-guids.conf, cn-guids.conf, node-name-map and partition "
                           "members are incomplete", "set subnet_manager.guids to the site inventory file "
                           "(or simulated for a lab)")
        if ft.fabric.sriov is not None and sm.flavor == "opensm":
            yield _warning(ft, "sr-iov", ft.fabric.name, "carries InfiniBand VFs, which need a subnet manager with "
                           "virtualization (virt_enabled 2); upstream OpenSM 3.3.23 has none, so the VFs get no "
                           "LID and stay down", "run NVIDIA's OpenSM or UFM: subnet_manager.flavor: ufm")
        planned = {n.description for n in ib.nodes}
        for key, entry in sorted(sm.inventory.items()):
            if key not in planned:
                yield Finding(Severity.ERROR, "guids", key, "is in the GUID inventory but not in the plan",
                              "check the device name and RDMA device", entry.position)


CHECKS: tuple[Check, ...] = (port_budget, host_attachment, rail_alignment, oversubscription, scalable_units,
                             shared_headroom_pool)
CLUSTER_CHECKS: tuple[Callable[[Topology], Iterator[Finding]], ...] = (rack_collisions, cable_plan,
                                                                      infiniband_subnet, check_mgs_addresses,
                                                                      asn_overlap, check_vf_guids)


@without_gc
def run_checks(topology: Topology) -> tuple[Finding, ...]:
    """All findings of all checks over all fabrics, errors first, in a stable order."""
    findings = [f for ft in topology.fabrics for check in CHECKS for f in check(ft)]
    findings += [f for check in CLUSTER_CHECKS for f in check(topology)]
    return tuple(sorted(findings, key=lambda f: (f.severity is not Severity.ERROR, f.check, f.subject)))
