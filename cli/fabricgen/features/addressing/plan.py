"""The IPv4 and eBGP underlay plan of an Ethernet/RoCE fabric, allocated with netaddr, in a documented order.

- Loopbacks: one /32 per switch from ``loopbacks``, top tier first (cores, spines, leaves; compile order within
  a tier), so adding or removing leaves at the end moves no other switch's router id (field review U1). On a
  top-of-rack fabric, whose leaves come and go with their racks' nodes, a leaf's at its rack's facility position
  (rack k, 0-based: the pool's address k + 1) and the spines' and cores' after every facility rack's, so a rack
  emptied or filled renumbers no other switch (field review of the address plans: rack A02 emptied changed 220
  of 237 OOB switch values).
- Management: one address per switch from ``management`` (when given), same order and places, the gateway
  skipped.
- Point-to-point: one /31 per switch-to-switch link from ``p2p``, links in compile order; the upper end
  (spine/core) takes the even address, the lower end the odd one. On a top-of-rack fabric a leaf's uplinks take
  the block of its rack's place (U /31s a rack, U the leaves' uplinks), the links above the leaves follow.
- Hosts: one subnet per leaf from ``hosts``, just large enough for the leaf's host ports plus its own
  gateway address (the first usable); host ports get the next addresses in leaf port order. Top-of-rack leaves
  (whose racks fill and empty one node at a time) all get a subnet of one size, for every host-speed port of the
  leaf model (the most hosts its rack can cable to it: an SN2201's 48 BMCs, a /26), each at the place its rack's
  position in the facility gives (facility rack k, 0-based: the k-th block of ``hosts``), so a node coming or
  going, or a rack emptied or filled, moves no other rack's subnet or address (field review, OOB BMCs). An MLAG pair
  (``attachment: mlag``) has one subnet for both leaves: the anycast gateway first (on both), then each leaf's own
  SVI address (NVUE's VRR and EOS's VARP need one), then the first leaf's host ports and the second's, in port
  order; a bond takes its primary member's address.
- Pods (routed Ethernet fabrics whose ports pods take: Ethernet VFs, or whole PFs moved in by Kubernetes'
  host-device CNI): ``hosts`` is split in two halves, the host subnets carved from the lower one and one pod range
  per leaf from the upper one, each range at the place the leaf's own index gives (leaf n, or a top-of-rack leaf's
  rack, takes the upper half's n-th block), all of one size: a pod address per VF (or per PF) of every host port
  of the leaf plus the gateway (the first usable, a second address of the leaf's SVI, announced like its host
  subnet); pods take addresses past it. A leaf added or removed moves no other leaf's range (they used to follow
  every host subnet, so one leaf more shifted them all); the pod ranges fall within one prefix (the upper half),
  which nothing generated announces or filters yet. A fabric without pod ranges carves its host subnets from the
  whole pool. No host or switch address is ever in a pod range.
- ASNs: leaf n = leaf_base + n - 1 (top-of-rack: leaf_base + its rack's facility position) unless ``asn.leaves``
  pins it by name (pinning renumbers no other leaf);
  spines share ``spine`` (+ pod - 1 in three tiers); cores share ``core``. Checked once compile has named the
  switches: a pinned name must be a leaf of the fabric; no two leaves and no leaf and spine/core share an ASN
  (eBGP loop prevention would drop their routes); derived ASNs stay within 4 bytes and off the reserved ones.
  Fabrics sharing ASNs are a warning: separate routing domains may reuse private ASNs, peering ones may not.

InfiniBand fabrics route no IP between switches: their plan has management addresses and IPoIB host subnets
only, one subnet per rail (a port group sharing a Linux interface role across nodes, so the kernel picks the
rail's interface for its peers), sized for the nodes on that rail, nodes in cluster order, no gateway; on a
rail-optimized fabric for every slot of ``topology.max_scalable_units`` SUs (default: the SUs built), each port at
its slot, so SUs added up to that count renumber no rail.

Overlapping pools (within the fabric or with another fabric's), pools reaching into a range no interface may use
(loopback, link-local, multicast, reserved) and exhausted pools are SpecErrors naming the pools involved.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace

from netaddr import IPAddress, IPNetwork, IPRange, IPSet
from netaddr.ip import IPV4_LINK_LOCAL, IPV4_LOOPBACK, IPV4_MULTICAST, IPV4_RESERVED

from fabricgen.core.errors import Finding, Severity, SpecError, SpecIssue
from fabricgen.core.hints import did_you_mean
from fabricgen.model.addressing import Addressing, FabricAddresses, HostSubnet, P2p, PodRange
from fabricgen.model.cluster import Attachment, FabricType, Tier, TopologyKind
from fabricgen.model.hardware import SwitchModel
from fabricgen.model.kubernetes import Kubernetes
from fabricgen.model.nodes import Facility, Node
from fabricgen.model.topology import LEAF_SPINE, ROUTED_TIERS, FabricTopology, Switch, Topology

POOLS = ("hosts", "p2p", "loopbacks", "management")
ASN_MAX = 4294967294  # 4294967295 is reserved (RFC 7300)
RESERVED_ASNS = {23456: "AS_TRANS (RFC 6793), which stands in for 4-byte ASNs", 65535: "reserved (RFC 7300)"}
# IPv4 ranges no interface of a fabric may be numbered from (netaddr's tables of the IANA special-purpose registry),
# the first that applies named in the report.
_RESERVED_NAMES = {
    "0.0.0.0/8": "'this network' (RFC 791)", "192.0.2.0/24": "documentation (RFC 5737)",
    "198.51.100.0/24": "documentation (RFC 5737)", "203.0.113.0/24": "documentation (RFC 5737)",
    "240.0.0.0/4": "reserved for future use (RFC 1112)", "192.88.99.0/24": "the 6to4 relay anycast (RFC 7526)",
}
UNUSABLE: tuple[tuple[IPNetwork | IPRange, str], ...] = (
    (IPV4_LOOPBACK, "loopback (RFC 1122)"),
    (IPV4_LINK_LOCAL, "link-local (RFC 3927)"),
    (IPV4_MULTICAST, "multicast (RFC 5771)"),
    *((block, _RESERVED_NAMES.get(str(block), "reserved (IANA special-purpose registry)")) for block in IPV4_RESERVED),
)


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
            continue
        unusable = next(((r, kind) for r, kind in UNUSABLE if IPSet([network]) & IPSet(r)), None)
        if unusable is not None:
            issues.append(SpecIssue(a.position, f"fabrics.{fabric}.addressing.{name}",
                                    f"{network} reaches into {_range_text(unusable[0])}, {unusable[1]}",
                                    "hosts and switch interfaces cannot use it; take a private range: 10.0.0.0/8, "
                                    "172.16.0.0/12, 192.168.0.0/16 (or the shared 100.64.0.0/10)"))
    return issues


def _range_text(block: IPNetwork | IPRange) -> str:
    """A range as a prefix where it is one (netaddr prints an IPRange as first-last)."""
    cidrs = block.cidrs() if isinstance(block, IPRange) else [block]
    return str(cidrs[0]) if len(cidrs) == 1 else str(block)


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
    """Hands out blocks of one prefix length from a pool (or a region of it, ``named`` so in errors): consecutive
    ones (:meth:`take`) or the block at a place (:meth:`at`); exhaustion is a SpecError."""

    def __init__(self, fabric: str, pool: str, network: IPNetwork, a: Addressing, skip_network: bool = False,
                 named: str = "") -> None:
        self.fabric, self.pool, self.network, self.a = fabric, pool, network, a
        self.named = named or str(network)
        self.next = int(network.network) + (1 if skip_network else 0)  # /32s never take the pool's .0

    def take(self, prefix: int, wanted_total: int) -> IPNetwork:
        size = 2 ** (32 - prefix)
        start = -(-self.next // size) * size
        self.next = start + size
        return self._block(start, prefix, f"{wanted_total} /{prefix} blocks")

    def at(self, place: int, prefix: int, wanted: str) -> IPNetwork:
        """The block of ``prefix`` at ``place`` (0-based) from the region's start: where it stands depends on its own
        place only, not on the blocks before it; ``wanted`` says what the fabric needs, for the error."""
        size = 2 ** (32 - prefix)
        return self._block(-(-int(self.network.network) // size) * size + place * size, prefix, wanted)

    def _block(self, start: int, prefix: int, wanted: str) -> IPNetwork:
        if start + 2 ** (32 - prefix) - 1 > int(self.network.broadcast or self.network.network):
            raise SpecError([SpecIssue(self.a.position, f"fabrics.{self.fabric}.addressing.{self.pool}",
                                       f"{self.named} is exhausted: the fabric needs {wanted}", "use a larger pool")])
        return IPNetwork(f"{_ip(start)}/{prefix}")


def _ip(value: int) -> str:
    return ".".join(str(value >> shift & 255) for shift in (24, 16, 8, 0))


@dataclass(frozen=True)
class PodPorts:
    """What pods take of a fabric's host ports: ``per_port`` pod addresses per port (its VFs, or 1 for a PF that
    host-device moves into a pod), on the nodes of ``groups``."""

    per_port: int
    groups: tuple[str, ...]


def pod_ports(ft: FabricTopology, k8s: Kubernetes | None, nodes: Sequence[Node]) -> PodPorts | None:
    """The ports pods take on a routed Ethernet fabric: the PFs themselves where Kubernetes moves them in with
    host-device (one pod each, on the nodes that run pods), else the Ethernet VFs of its ``sriov``; None where pods
    take none (or the fabric routes nothing: InfiniBand, no NOS)."""
    sriov = ft.fabric.sriov
    if not ft.fabric.nos or ft.fabric.type is FabricType.INFINIBAND:
        return None
    if k8s is not None and not k8s.uses_vfs and ft.fabric.name in k8s.fabrics:
        return PodPorts(1, ft.fabric.pod_groups(nodes))
    if sriov is None or sriov.link_type != "eth":
        return None
    return PodPorts(sriov.vfs_per_port, sriov.groups or ft.fabric.node_groups)


def plan_addresses(ft: FabricTopology, node_order: Mapping[str, int], node_groups: Mapping[str, str] | None = None,
                   pods: PodPorts | None = None, facility: Facility | None = None) -> FabricAddresses | None:
    """The fabric's address plan, or None when it has no addressing section; ``node_order`` ranks the nodes,
    ``node_groups`` names each node's group (which ``pods.groups`` narrow pod ranges to), ``pods`` what pods take
    of the host ports (:func:`pod_ports`; None: no pod ranges), ``facility`` the racks' facility positions
    (which places a top-of-rack leaf's subnets; a rack not in it counts as its leaf's index)."""
    a = ft.fabric.addressing
    if a is None:
        return None
    pools = _pools(a)
    places = leaf_places(ft, facility)
    switch_places = _switch_places(ft, places, facility.positions if facility else 0)
    management = _management(ft, a, pools, switch_places)
    if ft.fabric.type is FabricType.INFINIBAND:
        return FabricAddresses({}, management, {}, (), _rail_subnets(ft, a, pools["hosts"], node_order))
    name = ft.fabric.name
    loopbacks = _switch_addresses(ft, _Carver(name, "loopbacks", pools["loopbacks"], a, skip_network=True),
                                  switch_places)
    pod_nodes = _pod_nodes(ft, node_groups or {}, pods) if pods is not None else {}
    if pods is None or not pod_nodes:
        hosts = _leaf_subnets(ft, _Carver(name, "hosts", pools["hosts"], a), places)
        return FabricAddresses(loopbacks, management, _asns(ft, a, places), _p2p(ft, a, pools["p2p"], places), hosts)
    lower, upper = _halves(pools["hosts"])
    hosts = _leaf_subnets(ft, _Carver(name, "hosts", lower, a, named=f"{pools['hosts']}'s lower half ({lower}, "
                                      "its host subnets: the upper half holds the pod ranges)"), places)
    pod_region = _Carver(name, "hosts", upper, a, named=f"{pools['hosts']}'s upper half ({upper}, its pod ranges)")
    return FabricAddresses(loopbacks, management, _asns(ft, a, places), _p2p(ft, a, pools["p2p"], places), hosts,
                           _pod_ranges(ft, pod_region, places, pod_nodes, pods))


def _halves(pool: IPNetwork) -> tuple[IPNetwork, IPNetwork]:
    """The lower and upper half of a pool (a /32 is both its halves: nothing fits in either)."""
    if pool.prefixlen == 32:
        return pool, pool
    lower, upper = pool.subnet(pool.prefixlen + 1)
    return lower, upper


def leaf_places(ft: FabricTopology, facility: Facility | None) -> dict[str, int]:
    """Each leaf's place (0-based) in the blocks its subnets are carved from: a top-of-rack leaf's rack position in
    the facility (:attr:`Rack.position`), so a rack emptied moves no later rack's leaf; any other leaf's index
    among the leaves (compile order: SU and rail, or the packed leaves' order, which nodes fill from the first)."""
    leaves = [sw for sw in ft.switches if sw.tier is Tier.LEAF]
    if ft.fabric.topology.kind is TopologyKind.TOP_OF_RACK:
        racks = {r.name: r.position for r in facility.racks} if facility else {}
        return {sw.name: racks.get(sw.rack or "", i) for i, sw in enumerate(leaves)}
    return {sw.name: i for i, sw in enumerate(leaves)}


def rack_leaf_ports(model: SwitchModel, speed: str) -> int:
    """The highest logical port number a host can take on a top-of-rack leaf of ``model`` at ``speed``: its last
    host-speed port, as compile's port layout numbers the ports (every cage in turn, host-speed cages first taking
    the hosts); the most hosts a rack can cable to its leaf, whatever the nodes in it."""
    number = highest = 0
    for group in model.port_groups:
        per_cage = group.per_cage(speed)
        for _ in range(group.cages):
            number += per_cage or max(n for _, n in group.ports_per_cage)
            highest = number if per_cage else highest
    return highest


def _host_ports(ft: FabricTopology, leaf: Switch) -> int:
    """The host ports a leaf's subnets are sized for: every host-speed port of a top-of-rack leaf (one size for the
    whole fabric, whatever its rack holds today), the leaf's downlinks elsewhere (all of one size already: compile
    builds every packed or rail leaf for its full share of hosts)."""
    if ft.fabric.topology.kind is TopologyKind.TOP_OF_RACK:
        return rack_leaf_ports(leaf.model, ft.fabric.speed.name)
    return leaf.down_ports


def top_down(ft: FabricTopology) -> list[Switch]:
    """The fabric's switches top tier first, compile order within a tier: the leaves, whose count follows the
    nodes, come last."""
    return [sw for tier in (Tier.CORE, Tier.SPINE, Tier.LEAF) for sw in ft.switches if sw.tier is tier]


def _switch_places(ft: FabricTopology, places: Mapping[str, int], positions: int) -> dict[str, int] | None:
    """Where each switch of a top-of-rack fabric takes its loopback and management address (0-based, in the pool's
    usable addresses): a leaf at its rack's facility position, the spines and cores after every facility
    position (``positions``, each row's ``max_racks``), top tier first. A rack emptied or filled so moves no other
    switch's address (they followed the index among the switches: rack A02 emptied renumbered every later leaf).
    None elsewhere: leaves are numbered in turn after the upper tiers, which a leaf added or removed at the end
    moves nothing of."""
    if ft.fabric.topology.kind is not TopologyKind.TOP_OF_RACK:
        return None
    upper = [sw for sw in top_down(ft) if sw.tier is not Tier.LEAF]
    first_upper = max(positions, max(places.values(), default=-1) + 1)
    return {**places, **{sw.name: first_upper + i for i, sw in enumerate(upper)}}


def _switch_addresses(ft: FabricTopology, carver: _Carver, switch_places: Mapping[str, int] | None,
                      gateway: str = "") -> dict[str, str]:
    """One address per switch, never ``gateway``: at its place on a top-of-rack fabric (after the pool's network
    address, the gateway skipped wherever it falls), else in turn, top tier first. Loopbacks and management
    addresses alike."""
    addresses = {}
    if switch_places is None:
        for sw in top_down(ft):
            address = str(carver.take(32, len(ft.switches)).ip)
            if address == gateway:  # the gateway is never a switch's address
                address = str(carver.take(32, len(ft.switches)).ip)
            addresses[sw.name] = address
        return addresses
    skipped = int(IPAddress(gateway)) - int(carver.network.network) if gateway else None
    wanted = f"{max(switch_places.values()) + 1} addresses, one per facility rack then one per spine or core"
    for sw in top_down(ft):
        place = switch_places[sw.name] + 1
        if skipped is not None and place >= skipped:
            place += 1
        addresses[sw.name] = str(carver.at(place, 32, wanted).ip)
    return addresses


def _management(ft: FabricTopology, a: Addressing, pools: dict[str, IPNetwork],
                switch_places: Mapping[str, int] | None) -> dict[str, str]:
    """One management address per switch, never the gateway's (:func:`_switch_addresses`)."""
    if "management" not in pools:
        return {}
    mgmt = _Carver(ft.fabric.name, "management", pools["management"], a, skip_network=True)
    return _switch_addresses(ft, mgmt, switch_places, a.management_gateway or "")


def _asns(ft: FabricTopology, a: Addressing, places: Mapping[str, int]) -> dict[str, int]:
    return {name: number for name, (number, _) in _asn_sources(ft, a, places).items()}


def _asn_sources(ft: FabricTopology, a: Addressing, places: Mapping[str, int]) -> dict[str, tuple[int, str]]:
    """Each switch's ASN and the ``asn`` field it comes from: leaves, leaf_base, spine or core. A leaf's derived
    ASN is leaf_base + its index among the leaves, on a top-of-rack fabric + its rack's facility position
    (``places``), so a rack emptied renumbers no other rack's leaf."""
    pinned = {pin.leaf: pin.asn for pin in a.asn_leaves}
    by_rack = ft.fabric.topology.kind is TopologyKind.TOP_OF_RACK
    sources = {}
    leaf_index = 0
    for sw in ft.switches:
        if sw.tier is Tier.LEAF:
            offset = places.get(sw.name, leaf_index) if by_rack else leaf_index
            leaf_index += 1
            sources[sw.name] = ((pinned[sw.name], "leaves") if sw.name in pinned
                                else (a.asn_leaf_base + offset, "leaf_base"))
        elif sw.tier is Tier.SPINE:
            sources[sw.name] = (a.asn_spine + (sw.pod - 1 if sw.pod else 0), "spine")
        else:
            sources[sw.name] = (a.asn_core, "core")
    return sources


def check_asns(ft: FabricTopology, facility: Facility | None = None) -> list[SpecIssue]:
    """The ASN errors that need switch names: pins of unknown leaves, derived ASNs out of range or reserved, and
    ASNs shared by two leaves or by a leaf and a spine or core; ``facility`` as for :func:`plan_addresses`."""
    a = ft.fabric.addressing
    if a is None or ft.fabric.type is FabricType.INFINIBAND:
        return []
    sources = _asn_sources(ft, a, leaf_places(ft, facility))
    return [*_unknown_pins(ft, a), *_unusable_asns(ft, a, sources), *_shared_asns(ft, a, sources)]


def _asn_issue(ft: FabricTopology, a: Addressing, switch: str, source: str, message: str, hint: str) -> SpecIssue:
    """An issue at the field that gave ``switch`` its ASN: a pinned leaf's own entry, else the numbering field."""
    path = f"fabrics.{ft.fabric.name}.addressing.asn.{source}"
    if source != "leaves":
        return SpecIssue(a.position, path, message, hint)
    pin = next(p for p in a.asn_leaves if p.leaf == switch)
    return SpecIssue(pin.position, f"{path}.{switch}", message, hint)


def _unknown_pins(ft: FabricTopology, a: Addressing) -> Iterator[SpecIssue]:
    tiers = {sw.name: sw.tier for sw in ft.switches}
    leaves = [sw.name for sw in ft.switches if sw.tier is Tier.LEAF]
    for pin in a.asn_leaves:
        tier = tiers.get(pin.leaf)
        path = f"fabrics.{ft.fabric.name}.addressing.asn.leaves.{pin.leaf}"
        if tier is None:
            yield SpecIssue(pin.position, path, f"no leaf {pin.leaf!r} in fabric {ft.fabric.name}",
                            did_you_mean(pin.leaf, leaves) or f"its leaves are {leaves[0]} .. {leaves[-1]}")
        elif tier is not Tier.LEAF:
            yield SpecIssue(pin.position, path, f"{pin.leaf} is a {tier.value} switch, not a leaf",
                            f"{tier.value} switches take asn.{tier.value}")


def _unusable_asns(ft: FabricTopology, a: Addressing, sources: Mapping[str, tuple[int, str]]
                   ) -> Iterator[SpecIssue]:
    """ASNs past 4 bytes (only derived ones can be: the schema bounds given ones) or reserved, once per field."""
    reported: set[str] = set()
    for switch, (number, source) in sources.items():
        problem = (f"above {ASN_MAX}, the largest 4-byte ASN" if number > ASN_MAX
                   else RESERVED_ASNS.get(number, ""))
        field = switch if source == "leaves" else source
        if problem and field not in reported:
            reported.add(field)
            yield _asn_issue(ft, a, switch, source, f"{switch} would get ASN {number}: {problem}",
                             "pick another ASN for this leaf" if source == "leaves"
                             else f"move asn.{source} so that the ASNs it numbers avoid it")


def _shared_asns(ft: FabricTopology, a: Addressing, sources: Mapping[str, tuple[int, str]]
                 ) -> Iterator[SpecIssue]:
    """One issue per ASN held by more than one leaf, or by a leaf and a spine or core (same-pod spines and the
    cores share theirs by design); it points at the last pinned entry involved, else at the numbering field."""
    switches = {sw.name: sw for sw in ft.switches}
    holders: dict[int, dict[str, str]] = {}  # ASN -> role (a leaf's name, a spine pod, the cores) -> first holder
    for switch, (number, _) in sources.items():
        sw = switches[switch]
        role = (switch if sw.tier is Tier.LEAF else f"the pod {sw.pod} spines" if sw.pod
                else f"the {sw.tier.value} switches")
        holders.setdefault(number, {}).setdefault(role, switch)
    pin_order = {pin.leaf: i for i, pin in enumerate(a.asn_leaves)}
    for number, roles in holders.items():
        if len(roles) < 2:
            continue
        leaves = [role for role, s in roles.items() if switches[s].tier is Tier.LEAF]
        others = [role for role, s in roles.items() if switches[s].tier is not Tier.LEAF]
        pinned = [leaf for leaf in leaves if leaf in pin_order]
        blamed = max(pinned, key=pin_order.__getitem__) if pinned else next(iter(roles.values()))
        named = [f"{'leaves' if len(leaves) > 1 else 'leaf'} {_join(leaves)}"] if leaves else []
        yield _asn_issue(ft, a, blamed, sources[blamed][1], f"ASN {number} is held by {_join(named + others)}",
                         _shared_hint(bool(leaves), bool(others)))


def _shared_hint(leaves: bool, other_tiers: bool) -> str:
    """Why a shared ASN breaks the underlay, for the tiers involved."""
    if not other_tiers:
        return ("eBGP drops routes whose path holds its own AS: leaves sharing an ASN cannot reach each other's "
                "hosts; give each leaf its own ASN")
    keep = "keep leaf ASNs clear of the spine and core ones" if leaves else "keep the core ASN clear of spine + pod - 1"
    return f"eBGP would see its own AS in the path and drop the routes: {keep}"


def _join(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def asn_overlap(topology: Topology) -> Iterator[Finding]:
    """Routed fabrics sharing ASNs: harmless while they are separate routing domains, a loop once they peer."""
    earlier: list[tuple[str, set[int]]] = []
    for ft in topology.fabrics:
        plan = topology.addresses.get(ft.fabric.name)
        mine = set(plan.asn.values()) if plan else set()
        if not mine or ft.fabric.addressing is None:
            continue
        for other, theirs in earlier:
            shared = sorted(mine & theirs)
            if shared:
                shown = ", ".join(str(n) for n in shared[:3]) + (", ..." if len(shared) > 3 else "")
                yield Finding(Severity.WARNING, "asn", ft.fabric.name,
                              f"shares {len(shared)} ASN{'s' if len(shared) > 1 else ''} with fabric {other} "
                              f"({shown})", "fine while the fabrics never exchange routes; if they peer (border "
                              "leaves, a shared core), give each fabric its own asn range",
                              ft.fabric.addressing.position)
        earlier.append((ft.fabric.name, mine))


def _p2p(ft: FabricTopology, a: Addressing, pool: IPNetwork, places: Mapping[str, int]) -> tuple[P2p, ...]:
    """One /31 per routed switch-to-switch link, in link order; on a top-of-rack fabric a leaf's uplinks at its
    rack's place (leaf at place k: blocks k * U .. k * U + U - 1, U the most uplinks a leaf has) and the links
    above the leaves after the last place's, so a rack emptied moves no other leaf's /31s."""
    upper_links = [link for link in ft.links if link.tier in ROUTED_TIERS]
    carver = _Carver(ft.fabric.name, "p2p", pool, a)
    by_rack = ft.fabric.topology.kind is TopologyKind.TOP_OF_RACK
    per_leaf = max((sw.up_ports for sw in ft.switches if sw.tier is Tier.LEAF), default=0)
    region = (max(places.values(), default=-1) + 1) * per_leaf
    wanted = f"{region} /31s for the leaves' uplinks, one block of {per_leaf} per facility rack, then the links above"
    taken: dict[str, int] = {}
    above = 0
    p2p = []
    for link in upper_links:
        if not by_rack:
            base = int(carver.take(31, len(upper_links)).network)
        elif link.tier == LEAF_SPINE and link.a.device in places:
            base = int(carver.at(places[link.a.device] * per_leaf + taken.get(link.a.device, 0), 31, wanted).network)
            taken[link.a.device] = taken.get(link.a.device, 0) + 1
        else:
            base = int(carver.at(region + above, 31, wanted).network)
            above += 1
        p2p.append(P2p(link.a.device, link.a.number, f"{_ip(base + 1)}/31", link.z.device, link.z.number,
                       f"{_ip(base)}/31"))
    return tuple(p2p)


def _host_links(ft: FabricTopology) -> dict[str, list[tuple[int, str, int]]]:
    """Per leaf, its host links as (leaf port, node, node NIC port), in link order."""
    host_links: dict[str, list[tuple[int, str, int]]] = {}
    for link in ft.links:
        if link.tier == "node-leaf":
            host_links.setdefault(link.z.device, []).append((link.z.number, link.a.device, link.a.number))
    return host_links


def _leaf_subnets(ft: FabricTopology, carver: _Carver, places: Mapping[str, int]) -> tuple[HostSubnet, ...]:
    """One host subnet per leaf (MLAG: per pair); top-of-rack leaves' at their rack's place, the others' in turn."""
    leaves = [sw for sw in ft.switches if sw.tier is Tier.LEAF]
    if ft.fabric.topology.attachment is Attachment.MLAG:
        return _pair_subnets(ft, carver, leaves)
    host_links = _host_links(ft)
    by_rack = ft.fabric.topology.kind is TopologyKind.TOP_OF_RACK
    last = max(places.values(), default=0)
    hosts = []
    for leaf in leaves:
        prefix = 32 - _bits(_host_ports(ft, leaf) + 3)  # network, gateway, hosts, broadcast
        subnet = (carver.at(places[leaf.name], prefix, f"{last + 1} /{prefix} blocks, one per facility rack up to "
                            f"{_last_rack(ft, places)}'s") if by_rack else carver.take(prefix, len(leaves)))
        first = int(subnet.network)
        ports = sorted(host_links.get(leaf.name, []))  # leaf downlinks are numbered from 1: the address follows
        members = tuple((node, nic_port, _ip(first + 1 + port)) for port, node, nic_port in ports)
        hosts.append(HostSubnet(leaf.name, str(subnet), _ip(first + 1), members))
    return tuple(hosts)


def _pair_subnets(ft: FabricTopology, carver: _Carver, leaves: Sequence[Switch]) -> tuple[HostSubnet, ...]:
    """MLAG: one subnet per leaf pair (compile pairs leaves 2p+1, 2p+2): network, the anycast gateway, each leaf's
    own SVI address, the first leaf's host ports then the second's (by port number), broadcast."""
    host_links = _host_links(ft)
    hosts = []
    for first_leaf, second in zip(leaves[0::2], leaves[1::2], strict=True):
        per_leaf = max(first_leaf.down_ports, second.down_ports)
        subnet = carver.take(32 - _bits(2 * per_leaf + 5), len(leaves) // 2)
        first = int(subnet.network)
        members = tuple((node, nic_port, _ip(first + 3 + side * per_leaf + port))
                        for side, leaf in enumerate((first_leaf, second))
                        for port, node, nic_port in sorted(host_links.get(leaf.name, [])))
        hosts.append(HostSubnet(first_leaf.name, str(subnet), _ip(first + 1), members, peer=second.name,
                                leaf_addresses=(_ip(first + 2), _ip(first + 3))))
    return tuple(hosts)


def _last_rack(ft: FabricTopology, places: Mapping[str, int]) -> str:
    """The rack of the leaf at the last place (for an exhaustion error: how far the blocks must reach)."""
    leaves = {sw.name: sw for sw in ft.switches if sw.tier is Tier.LEAF}
    return leaves[max(places, key=places.__getitem__)].rack or "the last rack"


def _pod_nodes(ft: FabricTopology, node_groups: Mapping[str, str], pods: PodPorts) -> dict[str, tuple[str, ...]]:
    """Per leaf with a node whose ports pods take, those nodes in port order (leaves without one get no range)."""
    host_links = _host_links(ft)
    out = {}
    for leaf in (sw for sw in ft.switches if sw.tier is Tier.LEAF):
        nodes = tuple(dict.fromkeys(node for _, node, _ in sorted(host_links.get(leaf.name, []))
                                    if node_groups.get(node) in pods.groups))
        if nodes:
            out[leaf.name] = nodes
    return out


def _pod_ranges(ft: FabricTopology, region: _Carver, places: Mapping[str, int],
                pod_nodes: Mapping[str, tuple[str, ...]], pods: PodPorts) -> tuple[PodRange, ...]:
    """One pod range per leaf in ``pod_nodes``, at the leaf's place in the pod region: all of one size, for
    ``per_port`` pod addresses on every host port a leaf can have (a full leaf, as its host subnet) plus network,
    gateway and broadcast, so nodes or leaves coming or going move no other leaf's range."""
    leaves = [sw for sw in ft.switches if sw.tier is Tier.LEAF]
    prefix = 32 - _bits(max(_host_ports(ft, leaf) for leaf in leaves) * pods.per_port + 3)
    wanted = f"{max(places[name] for name in pod_nodes) + 1} /{prefix} blocks, one per leaf up to the last with pods"
    ranges = []
    for leaf in leaves:
        if leaf.name in pod_nodes:
            subnet = region.at(places[leaf.name], prefix, wanted)
            ranges.append(PodRange(leaf.name, str(subnet), _ip(int(subnet.network) + 1), pod_nodes[leaf.name]))
    return tuple(ranges)


def _rail_subnets(ft: FabricTopology, a: Addressing, pool: IPNetwork, order: Mapping[str, int]
                  ) -> tuple[HostSubnet, ...]:
    """IPoIB: one subnet per rail; a NIC without a rail counts as its position among the node's fabric NICs. On a
    rail-optimized fabric a port's address follows its slot (the SU and the leaf port), each rail's subnet sized for
    every slot of the fabric's SUs, or of ``topology.max_scalable_units`` SUs where the spec plans more: GPU nodes
    coming or going within an SU move no other address and no prefix (h100-4su without gpu121-127 kept its /24s),
    nor do SUs added up to that count. Elsewhere the members are numbered in node order."""
    per_rail: dict[int, list[tuple[str, int, int]]] = {}  # rail -> (node, NIC port, slot)
    size = ft.fabric.topology.scalable_unit if ft.fabric.topology.kind is TopologyKind.RAIL_OPTIMIZED else 0
    for link in ft.links:
        if link.tier == "node-leaf" and link.nic is not None:
            rail = link.nic.rail if link.nic.rail is not None else link.nic.index
            slot = (link.su - 1) * size + link.z.number if size and link.su is not None else 0
            per_rail.setdefault(rail, []).append((link.a.device, link.a.number, slot))
    by_slot = bool(size) and all(slot for members in per_rail.values() for _, _, slot in members)
    carver = _Carver(ft.fabric.name, "hosts", pool, a)
    subnets = []
    for rail in sorted(per_rail):
        members = sorted(per_rail[rail], key=lambda m: (order[m[0]], m[1]))
        slots = [slot for _, _, slot in members] if by_slot else list(range(1, len(members) + 1))
        room = planned_scalable_units(ft) * size if by_slot else len(members)
        subnet = carver.take(32 - _bits(room + 2), len(per_rail))  # network, hosts, broadcast
        first = int(subnet.network)
        subnets.append(HostSubnet("", str(subnet), "", tuple((node, port, _ip(first + slot))
                                                            for (node, port, _), slot in zip(members, slots,
                                                                                              strict=True)), rail))
    return tuple(subnets)


def planned_scalable_units(ft: FabricTopology) -> int:
    """The SUs a rail-optimized fabric's rail subnets are sized for: ``topology.max_scalable_units``, else the SUs
    built."""
    return ft.fabric.topology.max_scalable_units or ft.scalable_units


def check_growth(ft: FabricTopology) -> list[SpecIssue]:
    """``topology.max_scalable_units`` below the SUs compile built: the rail subnets would be too small for them."""
    topo = ft.fabric.topology
    if topo.max_scalable_units is None or topo.max_scalable_units >= ft.scalable_units:
        return []
    return [SpecIssue(topo.max_scalable_units_position or ft.fabric.position,
                      f"fabrics.{ft.fabric.name}.topology.max_scalable_units",
                      f"{topo.max_scalable_units} is below the {ft.scalable_units} scalable units the fabric's nodes "
                      f"already fill ({topo.scalable_unit} slots each)",
                      f"plan for at least {ft.scalable_units}, or remove it to size the rail subnets for the SUs "
                      "built")]


def _bits(addresses: int) -> int:
    """Host bits of the smallest block holding ``addresses`` (at least a /30)."""
    return max(2, math.ceil(math.log2(addresses)))


def plan(topology: Topology) -> Topology:
    """The topology with the address plans of the fabrics that have one; overlapping or exhausted pools and ASN
    conflicts raise SpecError."""
    cluster, fabrics = topology.cluster, topology.fabrics
    pools = [(ft.fabric.name, ft.fabric.addressing) for ft in fabrics if ft.fabric.addressing is not None]
    facility = cluster.facility
    issues = (check_pools(pools) + [issue for ft in fabrics for issue in check_asns(ft, facility)]
              + [issue for ft in fabrics for issue in check_growth(ft)])
    if issues:
        raise SpecError(issues)
    order = {node.name: i for i, node in enumerate(cluster.nodes)}
    groups = {node.name: node.group for node in cluster.nodes}
    k8s = cluster.kubernetes
    plans = {ft.fabric.name: plan_addresses(ft, order, groups, pod_ports(ft, k8s, cluster.nodes), facility)
             for ft in fabrics}
    return replace(topology, addresses={name: plan for name, plan in plans.items() if plan is not None})
