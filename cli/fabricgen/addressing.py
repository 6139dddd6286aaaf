"""The IPv4 and eBGP underlay plan of an Ethernet/RoCE fabric, allocated with netaddr, in a documented order.

- Loopbacks: one /32 per switch from ``loopbacks``, switches in compile order (leaves, spines, cores).
- Management: one address per switch from ``management`` (when given), same order.
- Point-to-point: one /31 per switch-to-switch link from ``p2p``, links in compile order; the upper end
  (spine/core) takes the even address, the lower end the odd one.
- Hosts: one subnet per leaf from ``hosts``, just large enough for the leaf's host ports plus its own
  gateway address (the first usable); host ports get the next addresses in leaf port order.
- ASNs: leaf n = leaf_base + n - 1; spines share ``spine`` (+ pod - 1 in three tiers); cores share ``core``.

InfiniBand fabrics route no IP between switches: their plan has management addresses and IPoIB host subnets
only, one subnet per rail (a port group sharing a Linux interface role across nodes, so the kernel picks the
rail's interface for its peers), sized for the nodes on that rail, nodes in cluster order, no gateway.

Overlapping pools (within the fabric or with another fabric's) and exhausted pools are SpecErrors naming the
pools involved.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from netaddr import IPAddress, IPNetwork, IPSet

from fabricgen.errors import SpecError, SpecIssue
from fabricgen.model import Addressing, Tier

if TYPE_CHECKING:
    from fabricgen.topology import FabricTopology

POOLS = ("hosts", "p2p", "loopbacks", "management")


@dataclass(frozen=True)
class HostSubnet:
    leaf: str             # the leaf owning the subnet; "" for an IPoIB rail subnet
    network: str          # "10.20.0.0/27"
    gateway: str          # the leaf's address, "10.20.0.1"; "" for IPoIB (no router)
    hosts: tuple[tuple[str, int, str], ...]  # (node, node NIC port number, "10.20.0.2")
    rail: int | None = None  # IPoIB rail subnets: the rail (port group) they serve


@dataclass(frozen=True)
class P2p:
    lower: str
    lower_port: int
    lower_ip: str         # "10.21.0.1/31"
    upper: str
    upper_port: int
    upper_ip: str         # "10.21.0.0/31"


@dataclass(frozen=True)
class FabricAddresses:
    loopbacks: dict[str, str]
    management: dict[str, str]
    asn: dict[str, int]
    p2p: tuple[P2p, ...]
    hosts: tuple[HostSubnet, ...]


def _pools(a: Addressing) -> dict[str, IPNetwork]:
    return {name: IPNetwork(getattr(a, name)) for name in POOLS if getattr(a, name)}


def _bad_prefixes(fabric: str, a: Addressing) -> list[SpecIssue]:
    issues = []
    for name in POOLS:
        text = getattr(a, name)
        if not text:
            continue
        try:
            network = IPNetwork(text)
        except Exception:  # netaddr raises several types for malformed input
            issues.append(SpecIssue(a.position, f"fabrics.{fabric}.addressing.{name}", f"{text!r} is not an IPv4 "
                                                                                        "prefix"))
            continue
        if network.ip != network.network:
            issues.append(SpecIssue(a.position, f"fabrics.{fabric}.addressing.{name}",
                                    f"{text} has host bits set", f"did you mean {network.cidr}?"))
    return issues


def _bad_gateway(fabric: str, a: Addressing) -> list[SpecIssue]:
    if a.management_gateway is None:
        return []
    where = f"fabrics.{fabric}.addressing.management_gateway"
    if not a.management:
        return [SpecIssue(a.position, where, "a management gateway needs a management pool", "add management")]
    if IPAddress(a.management_gateway) not in IPNetwork(a.management):
        return [SpecIssue(a.position, where, f"{a.management_gateway} is outside the management pool {a.management}",
                          "the gateway must be on the management network")]
    return []


def check_pools(fabrics: Sequence[tuple[str, Addressing]]) -> list[SpecIssue]:
    """Malformed prefixes, and any two pools (of one fabric or of two) that overlap, each pair named once."""
    issues = [i for name, a in fabrics for i in _bad_prefixes(name, a)]
    issues += [i for name, a in fabrics if not issues for i in _bad_gateway(name, a)]
    if issues:
        return issues
    owned = [(f"{fabric}.{pool}", network, a) for fabric, a in fabrics for pool, network in _pools(a).items()]
    for i, (name, network, a) in enumerate(owned):
        for other, other_network, _ in owned[i + 1:]:
            if IPSet([network]) & IPSet([other_network]):
                issues.append(SpecIssue(a.position, f"fabrics.{name.replace('.', '.addressing.', 1)}",
                                        f"{network} overlaps {other} ({other_network})",
                                        "give every pool its own range"))
    return issues


class _Carver:
    """Hands out consecutive blocks of one prefix length from a pool; exhaustion is a SpecError."""

    def __init__(self, fabric: str, pool: str, network: IPNetwork, a: Addressing, skip_network: bool = False
                 ) -> None:
        self.fabric, self.pool, self.network, self.a = fabric, pool, network, a
        self.next = int(network.network) + (1 if skip_network else 0)  # /32s never take the pool's .0

    def take(self, prefix: int, wanted_total: int) -> IPNetwork:
        size = 2 ** (32 - prefix)
        start = -(-self.next // size) * size
        if start + size - 1 > int(self.network.broadcast or self.network.network):
            raise SpecError([SpecIssue(self.a.position, f"fabrics.{self.fabric}.addressing.{self.pool}",
                                       f"{self.network} is exhausted: the fabric needs {wanted_total} /{prefix} "
                                       f"blocks", "use a larger pool")])
        self.next = start + size
        return IPNetwork(f"{_ip(start)}/{prefix}")


def _ip(value: int) -> str:
    return ".".join(str(value >> shift & 255) for shift in (24, 16, 8, 0))


def plan_addresses(ft: FabricTopology, node_order: Mapping[str, int]) -> FabricAddresses | None:
    """The fabric's address plan, or None when it has no addressing section; ``node_order`` ranks the nodes."""
    a = ft.fabric.addressing
    if a is None:
        return None
    pools = _pools(a)
    management = _management(ft, a, pools)
    if ft.fabric.type == "infiniband":
        return FabricAddresses({}, management, {}, (), _rail_subnets(ft, a, pools["hosts"], node_order))
    name = ft.fabric.name
    loop = _Carver(name, "loopbacks", pools["loopbacks"], a, skip_network=True)
    loopbacks = {sw.name: str(loop.take(32, len(ft.switches)).ip) for sw in ft.switches}
    return FabricAddresses(loopbacks, management, _asns(ft, a), _p2p(ft, a, pools["p2p"]),
                           _leaf_subnets(ft, a, pools["hosts"]))


def _management(ft: FabricTopology, a: Addressing, pools: dict[str, IPNetwork]) -> dict[str, str]:
    if "management" not in pools:
        return {}
    mgmt = _Carver(ft.fabric.name, "management", pools["management"], a, skip_network=True)
    management = {}
    for sw in ft.switches:
        address = str(mgmt.take(32, len(ft.switches)).ip)
        if address == a.management_gateway:  # the gateway is never a switch's address
            address = str(mgmt.take(32, len(ft.switches)).ip)
        management[sw.name] = address
    return management


def _asns(ft: FabricTopology, a: Addressing) -> dict[str, int]:
    asn = {}
    leaf_index = 0
    for sw in ft.switches:
        if sw.tier is Tier.LEAF:
            leaf_index += 1
            asn[sw.name] = a.asn_leaf_base + leaf_index - 1
        elif sw.tier is Tier.SPINE:
            asn[sw.name] = a.asn_spine + (sw.pod - 1 if sw.pod else 0)
        else:
            asn[sw.name] = a.asn_core
    return asn


def _p2p(ft: FabricTopology, a: Addressing, pool: IPNetwork) -> tuple[P2p, ...]:
    upper_links = [link for link in ft.links if link.tier != "node-leaf"]
    carver = _Carver(ft.fabric.name, "p2p", pool, a)
    p2p = []
    for link in upper_links:
        base = int(carver.take(31, len(upper_links)).network)
        p2p.append(P2p(link.a.device, link.a.number, f"{_ip(base + 1)}/31", link.z.device, link.z.number,
                       f"{_ip(base)}/31"))
    return tuple(p2p)


def _leaf_subnets(ft: FabricTopology, a: Addressing, pool: IPNetwork) -> tuple[HostSubnet, ...]:
    host_links: dict[str, list[tuple[int, str, int]]] = {}
    for link in ft.links:
        if link.tier == "node-leaf":
            host_links.setdefault(link.z.device, []).append((link.z.number, link.a.device, link.a.number))
    carver = _Carver(ft.fabric.name, "hosts", pool, a)
    hosts = []
    leaves = [sw for sw in ft.switches if sw.tier is Tier.LEAF]
    for leaf in leaves:
        prefix = 32 - _bits(leaf.down_ports + 3)  # network, gateway, hosts, broadcast
        subnet = carver.take(prefix, len(leaves))
        first = int(subnet.network)
        ports = sorted(host_links.get(leaf.name, []))  # leaf downlinks are numbered from 1: the address follows
        members = tuple((node, nic_port, _ip(first + 1 + port)) for port, node, nic_port in ports)
        hosts.append(HostSubnet(leaf.name, str(subnet), _ip(first + 1), members))
    return tuple(hosts)


def _rail_subnets(ft: FabricTopology, a: Addressing, pool: IPNetwork, order: Mapping[str, int]
                  ) -> tuple[HostSubnet, ...]:
    """IPoIB: one subnet per rail; a NIC without a rail counts as its position among the node's fabric NICs."""
    per_rail: dict[int, list[tuple[str, int]]] = {}
    for link in ft.links:
        if link.tier == "node-leaf" and link.nic is not None:
            rail = link.nic.rail if link.nic.rail is not None else link.nic.index
            per_rail.setdefault(rail, []).append((link.a.device, link.a.number))
    carver = _Carver(ft.fabric.name, "hosts", pool, a)
    subnets = []
    for rail in sorted(per_rail):
        members = sorted(per_rail[rail], key=lambda m: (order[m[0]], m[1]))
        subnet = carver.take(32 - _bits(len(members) + 2), len(per_rail))  # network, hosts, broadcast
        first = int(subnet.network)
        subnets.append(HostSubnet("", str(subnet), "", tuple((node, port, _ip(first + 1 + i))
                                                            for i, (node, port) in enumerate(members)), rail))
    return tuple(subnets)


def _bits(addresses: int) -> int:
    """Host bits of the smallest block holding ``addresses`` (at least a /30)."""
    return max(2, math.ceil(math.log2(addresses)))
