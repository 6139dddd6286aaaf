"""What one Ethernet switch needs to be configured, gathered once for every NOS renderer (SONiC, NVUE, EOS):
its identity and ASN, its ports with their peers, speeds, cable lengths and addresses, its BGP neighbours and,
on a leaf, the host VLAN with its gateway. Renderers only lay this out in their dialect.

Host ports of a leaf form one access VLAN (the leaf's host subnet, gateway = the leaf's first address);
switch-to-switch ports are routed /31s with an eBGP session each. An MLAG pair (``attachment: mlag``) shares one
subnet: the VLAN spans both leaves over the peer link (``kind`` "peer"), the gateway is an anycast address on both,
each leaf has its own SVI address beside it, and a node's bond is one port-channel per leaf with the same MLAG id
(``lag``) on both, numbered in the pair's node order.
"""

from __future__ import annotations

from dataclasses import dataclass

from fabricgen.model.addressing import FabricAddresses
from fabricgen.model.cluster import Attachment, Fabric, FabricType, Tier
from fabricgen.model.ethernet import RoceQos, SwitchManagement
from fabricgen.model.hardware import SwitchModel
from fabricgen.model.topology import LEAF_LEAF, NODE_LEAF, ROUTED_TIERS, FabricTopology, Link, Topology

HOST_VLAN = 100  # one access VLAN per leaf: its host subnet
# eBGP keepalive and hold time (s) on every session, in every dialect: Cumulus Linux's own defaults (3/9, NVUE
# writes none), where SONiC and EOS default to 60/180: a gray failure (a link up that passes no traffic)
# black-holes its share of a leaf's traffic for the hold time.
BGP_KEEPALIVE_S, BGP_HOLD_S = 3, 9


@dataclass(frozen=True, slots=True)
class PortView:
    number: int          # logical port number on the switch (1-based, as the topology numbers it)
    name: str            # physical port name: "<cage>/<lane>" or "<cage>"
    speed: str           # "400G"
    gbps: float
    peer: str            # device at the far end
    peer_port: str       # its port name (NIC port label for a node)
    kind: str            # "host" (to a node), "uplink" (to a higher tier), "downlink" (to a lower-tier switch),
                         # "peer" (an MLAG pair's peer link, layer 2)
    cable_m: float       # orderable length of the cable on this port (the headroom input)
    address: str = ""    # "10.21.0.0/31" on routed ports; empty on host (VLAN) ports
    peer_address: str = ""
    peer_asn: int = 0
    fec: str = ""        # the FEC the port's module needs ("" : the NOS's rule for the speed)
    lag: int = 0         # MLAG: the host bond's MLAG id (its port-channel's number, the same on both leaves)
    lacp_rate: str = ""  # MLAG: the host bond's lacp-rate (fast, slow), which the port-channel matches


@dataclass(frozen=True)
class Mlag:
    """A leaf's side of its MLAG pair: the peer, the session between their loopbacks (reachable over the routed
    fabric, so the peer link carries only the VLAN), the pair's shared LACP system MAC and this leaf's own SVI
    address beside the anycast gateway."""

    domain: int          # the pair's number in the fabric (1-based): SONiC's domain id
    peer: str
    peer_loopback: str
    primary: bool        # the pair's first leaf: the lower MLAG priority, the LACP/STP owner while both are up
    system_mac: str      # the pair's LACP system MAC, the same on both
    address: str         # this leaf's own SVI address ("10.30.0.2")


@dataclass(frozen=True)
class SwitchView:
    name: str
    fabric: Fabric
    tier: Tier
    model: SwitchModel
    nos: str
    release: str  # the NOS's software release ("" for a NOS without releases)
    site: str
    asn: int
    loopback: str
    management: str
    mtu: int
    qos: RoceQos | None
    ports: tuple[PortView, ...]
    host_subnet: str = ""   # leaf only: "10.20.0.0/25"
    gateway: str = ""       # leaf only: "10.20.0.1"
    baseline: SwitchManagement | None = None  # the spec's management section: NTP, DNS, syslog, SNMP, TACACS+
    pod_subnet: str = ""    # leaf of a routed fabric with VF or host-device pods: its pods' range, announced
    pod_gateway: str = ""   # its first address, a second address of the host VLAN's SVI: "10.20.4.1"
    mlag: Mlag | None = None  # a leaf of an MLAG pair

    @property
    def routed_ports(self) -> tuple[PortView, ...]:
        return tuple(p for p in self.ports if p.kind in ("uplink", "downlink"))

    @property
    def peer_ports(self) -> tuple[PortView, ...]:
        return tuple(p for p in self.ports if p.kind == "peer")

    @property
    def host_ports(self) -> tuple[PortView, ...]:
        return tuple(p for p in self.ports if p.kind == "host")


def switch_views(topology: Topology, ft: FabricTopology) -> tuple[SwitchView, ...]:
    """Every switch of an Ethernet fabric with an address plan, in compile order; computed once per compiled
    topology, so the SONiC, EOS and NVUE renderers share it (see ``Topology.derived``)."""
    return topology.derived(_switch_views, ft)


def nos_switch_views(topology: Topology, nos: str) -> list[SwitchView]:
    """The switches that run one NOS, on every Ethernet or RoCE fabric with an address plan, in compile order."""
    return [v for ft in topology.fabrics if ft.fabric.type.ethernet for v in switch_views(topology, ft) if v.nos == nos]


def _switch_views(topology: Topology, ft: FabricTopology) -> tuple[SwitchView, ...]:
    plan: FabricAddresses | None = topology.addresses.get(ft.fabric.name)
    if plan is None or ft.fabric.type is FabricType.INFINIBAND or not ft.fabric.nos:
        return ()  # IPoIB plans configure hosts, not switches; a fabric without nos gets no switch configs
    fabric = ft.fabric
    lengths, fec = {}, {}
    for cable in topology.cables:
        if cable.fabric == fabric.name:
            for end, optic in ((cable.a, cable.a_optic), (cable.z, cable.z_optic)):
                lengths[(end.device, end.port_number)] = cable.length_m
                if optic is not None and optic.port_fec:
                    fec[(end.device, end.port_number)] = optic.port_fec
    ports: dict[str, list[PortView]] = {sw.name: [] for sw in ft.switches}
    lags = _mlag_ids(topology, ft)
    for link in ft.links:
        if link.tier == NODE_LEAF:
            lag, lacp_rate = lags.get(link, (0, ""))
            ports[link.z.device].append(PortView(link.z.number, link.z.name, link.speed, fabric.speed.gbps,
                                                 link.a.device, link.a.name, "host",
                                                 lengths[(link.z.device, link.z.number)],
                                                 fec=fec.get((link.z.device, link.z.number), ""),
                                                 lag=lag, lacp_rate=lacp_rate))
        elif link.tier == LEAF_LEAF:
            cable_m = lengths[(link.z.device, link.z.number)]
            for near, far in ((link.a, link.z), (link.z, link.a)):
                ports[near.device].append(PortView(near.number, near.name, link.speed, fabric.uplink_speed.gbps,
                                                   far.device, far.name, "peer", cable_m,
                                                   fec=fec.get((near.device, near.number), "")))
    for p2p, link in zip(plan.p2p, (lk for lk in ft.links if lk.tier in ROUTED_TIERS), strict=True):
        cable_m = lengths[(link.z.device, link.z.number)]
        gbps = fabric.uplink_speed.gbps
        ports[p2p.lower].append(PortView(p2p.lower_port, link.a.name, link.speed, gbps, p2p.upper, link.z.name,
                                         "uplink", cable_m, p2p.lower_ip, p2p.upper_ip.split("/")[0],
                                         plan.asn[p2p.upper], fec.get((p2p.lower, p2p.lower_port), "")))
        ports[p2p.upper].append(PortView(p2p.upper_port, link.z.name, link.speed, gbps, p2p.lower, link.a.name,
                                         "downlink", cable_m, p2p.upper_ip, p2p.lower_ip.split("/")[0],
                                         plan.asn[p2p.lower], fec.get((p2p.upper, p2p.upper_port), "")))
    subnets = {leaf: s for s in plan.hosts for leaf in (s.leaf, s.peer) if leaf}
    pods = {p.leaf: p for p in plan.pods}
    views = []
    for sw in ft.switches:
        subnet, pod = subnets.get(sw.name), pods.get(sw.name)
        mlag = _mlag(plan, sw.name)
        nos = fabric.nos[sw.tier]
        views.append(SwitchView(sw.name, fabric, sw.tier, sw.model, nos, fabric.software.get(nos, ""),
                                topology.cluster.metadata.site, plan.asn[sw.name], plan.loopbacks[sw.name],
                                plan.management.get(sw.name, ""), fabric.mtu, fabric.qos,
                                tuple(sorted(ports[sw.name], key=lambda p: p.number)),
                                subnet.network if subnet else "", subnet.gateway if subnet else "",
                                topology.cluster.management, pod.network if pod else "", pod.gateway if pod else "",
                                mlag))
    return tuple(views)


# The pairs' LACP system MACs: a locally administered block (the U/L bit of the first octet set, IEEE 802), one
# address per pair, from the start of the block NVIDIA's Cumulus Linux docs reserve for MLAG system MACs
# ("44:38:39:ff:00:00 through 44:38:39:ff:ff:ff", Multi-Chassis Link Aggregation - MLAG, "mlag mac-address").
MLAG_MAC_BASE = 0x443839FF0000


def _mlag(plan: FabricAddresses, leaf: str) -> Mlag | None:
    """``leaf``'s side of its MLAG pair, from the pair subnet the address plan gives both leaves."""
    for domain, subnet in enumerate((s for s in plan.hosts if s.peer), start=1):
        if leaf in (subnet.leaf, subnet.peer):
            primary = leaf == subnet.leaf
            peer = subnet.peer if primary else subnet.leaf
            mac = f"{MLAG_MAC_BASE + domain:012x}"
            return Mlag(domain, peer, plan.loopbacks[peer], primary, ":".join(mac[i:i + 2] for i in range(0, 12, 2)),
                        subnet.leaf_addresses[0 if primary else 1])
    return None


def _mlag_ids(topology: Topology, ft: FabricTopology) -> dict[Link, tuple[int, str]]:
    """MLAG: each host link of a bond, its MLAG id (the bond's number among the pair's bonds in node order, so
    both leaves number a node's port-channel alike) and the bond's lacp-rate."""
    if ft.fabric.topology.attachment is not Attachment.MLAG:
        return {}
    profiles = {node.name: node.profile for node in topology.cluster.nodes}
    leaves = [sw.name for sw in ft.switches if sw.tier is Tier.LEAF]
    pair = {name: i // 2 for i, name in enumerate(leaves)}
    ids: dict[tuple[int, str, str], int] = {}
    per_pair: dict[int, int] = {}
    out = {}
    for link in ft.links:
        if link.tier != NODE_LEAF or link.nic is None:
            continue
        bond = profiles[link.a.device].bond_of(link.nic.netdev) if link.nic.netdev else None
        if bond is None:
            continue
        key = (pair[link.z.device], link.a.device, bond.name)
        if key not in ids:
            ids[key] = per_pair[key[0]] = per_pair.get(key[0], 0) + 1
        out[link] = (ids[key], bond.lacp_rate)
    return out
