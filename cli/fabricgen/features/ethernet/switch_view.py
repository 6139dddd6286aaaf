"""What one Ethernet switch needs to be configured, gathered once for every NOS renderer (SONiC, NVUE, EOS):
its identity and ASN, its ports with their peers, speeds, cable lengths and addresses, its BGP neighbours and,
on a leaf, the host VLAN with its gateway. Renderers only lay this out in their dialect.

Host ports of a leaf form one access VLAN (the leaf's host subnet, gateway = the leaf's first address);
switch-to-switch ports are routed /31s with an eBGP session each.
"""

from __future__ import annotations

from dataclasses import dataclass

from fabricgen.model.addressing import FabricAddresses
from fabricgen.model.cluster import Fabric, FabricType, Tier
from fabricgen.model.ethernet import RoceQos, SwitchManagement
from fabricgen.model.hardware import SwitchModel
from fabricgen.model.topology import NODE_LEAF, FabricTopology, Topology

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
    kind: str            # "host" (to a node), "uplink" (to a higher tier), "downlink" (to a lower-tier switch)
    cable_m: float       # orderable length of the cable on this port (the headroom input)
    address: str = ""    # "10.21.0.0/31" on routed ports; empty on host (VLAN) ports
    peer_address: str = ""
    peer_asn: int = 0
    fec: str = ""        # the FEC the port's module needs ("" : the NOS's rule for the speed)


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
    pod_subnet: str = ""    # leaf of a routed fabric with Ethernet VFs: its pods' range "10.20.4.0/23", announced
    pod_gateway: str = ""   # its first address, a second address of the host VLAN's SVI: "10.20.4.1"

    @property
    def routed_ports(self) -> tuple[PortView, ...]:
        return tuple(p for p in self.ports if p.kind != "host")

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
    for link in ft.links:
        if link.tier == NODE_LEAF:
            ports[link.z.device].append(PortView(link.z.number, link.z.name, link.speed, fabric.speed.gbps,
                                                 link.a.device, link.a.name, "host",
                                                 lengths[(link.z.device, link.z.number)],
                                                 fec=fec.get((link.z.device, link.z.number), "")))
    for p2p, link in zip(plan.p2p, (lk for lk in ft.links if lk.tier != NODE_LEAF), strict=True):
        cable_m = lengths[(link.z.device, link.z.number)]
        gbps = fabric.uplink_speed.gbps
        ports[p2p.lower].append(PortView(p2p.lower_port, link.a.name, link.speed, gbps, p2p.upper, link.z.name,
                                         "uplink", cable_m, p2p.lower_ip, p2p.upper_ip.split("/")[0],
                                         plan.asn[p2p.upper], fec.get((p2p.lower, p2p.lower_port), "")))
        ports[p2p.upper].append(PortView(p2p.upper_port, link.z.name, link.speed, gbps, p2p.lower, link.a.name,
                                         "downlink", cable_m, p2p.upper_ip, p2p.lower_ip.split("/")[0],
                                         plan.asn[p2p.lower], fec.get((p2p.upper, p2p.upper_port), "")))
    subnets = {s.leaf: s for s in plan.hosts}
    pods = {p.leaf: p for p in plan.pods}
    views = []
    for sw in ft.switches:
        subnet, pod = subnets.get(sw.name), pods.get(sw.name)
        nos = fabric.nos[sw.tier]
        views.append(SwitchView(sw.name, fabric, sw.tier, sw.model, nos, fabric.software.get(nos, ""),
                                topology.cluster.metadata.site, plan.asn[sw.name], plan.loopbacks[sw.name],
                                plan.management.get(sw.name, ""), fabric.mtu, fabric.qos,
                                tuple(sorted(ports[sw.name], key=lambda p: p.number)),
                                subnet.network if subnet else "", subnet.gateway if subnet else "",
                                topology.cluster.management, pod.network if pod else "", pod.gateway if pod else ""))
    return tuple(views)
