"""Stage 5, check: findings over the compiled topology (errors stop the pipeline; warnings are shown).

Each check is a function ``(topology) -> Iterator[Finding]`` listed in :data:`CHECKS`; every one is O(links).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator

from fabricgen.errors import Finding, Severity
from fabricgen.model import Tier, TopologyKind
from fabricgen.topology import NODE_LEAF, FabricTopology, Topology

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


CHECKS: tuple[Check, ...] = (port_budget, host_attachment, rail_alignment, oversubscription, scalable_units)


def run_checks(topology: Topology) -> tuple[Finding, ...]:
    """All findings of all checks over all fabrics, errors first, in a stable order."""
    findings = [f for ft in topology.fabrics for check in CHECKS for f in check(ft)]
    return tuple(sorted(findings, key=lambda f: (f.severity is not Severity.ERROR, f.check, f.subject)))
