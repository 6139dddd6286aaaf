"""Which exporter series belong to which cable: the plan's port ends, as the exporters label them.

A host end is what node_exporter's infiniband collector labels ``device`` (the RDMA device) and ``port`` (its HCA
port), and its ethtool collector ``device`` (the netdev); the scrape config adds ``node``. A switch end is what
treydock/infiniband_exporter labels ``switch`` (the node-name-map name, the plan's switch name) and ``port``.
"""

from __future__ import annotations

from dataclasses import dataclass

from fabricgen.model.cluster import FabricType
from fabricgen.model.topology import NODE_LEAF, FabricTopology, Topology

MONITORED = (FabricType.INFINIBAND, FabricType.ROCE)  # the RDMA fabrics; their hosts' ports carry RDMA counters


@dataclass(frozen=True)
class HostPort:
    """A node's end of a node-leaf cable."""

    cable: str
    node: str
    device: str  # RDMA device
    port: int  # its HCA port
    netdev: str
    gpu: int | None
    rail: int | None
    su: int | None
    leaf: str
    leaf_port: int
    speed: str  # the planned speed's catalog name: a port that trained slower alerts


@dataclass(frozen=True)
class SwitchPort:
    """A switch's end of a cable: a leaf's host port, or either end of a cable between switches."""

    cable: str
    switch: str
    port: int
    peer: str
    peer_port: int
    rail: int | None
    leaf: str  # the cable's lowest switch: the leaf an alert on it names
    speed: str


def monitored_fabrics(topology: Topology) -> tuple[FabricTopology, ...]:
    return tuple(ft for ft in topology.fabrics if ft.fabric.type in MONITORED and ft.links)


def host_ports(topology: Topology, ft: FabricTopology) -> tuple[HostPort, ...]:
    cables = topology.derived(_cables, ft)
    profiles = {n.name: n.profile for n in topology.cluster.nodes}
    return tuple(
        HostPort(cables[(link.a.device, link.a.number, link.z.device, link.z.number)], link.a.device,
                 link.nic.dev, profiles[link.a.device].hca_port(link.nic), link.nic.netdev, link.nic.gpu,
                 link.rail, link.su, link.z.device, link.z.number, link.speed)
        for link in ft.links_in(NODE_LEAF) if link.nic is not None and link.nic.dev)


def switch_ports(topology: Topology, ft: FabricTopology) -> tuple[SwitchPort, ...]:
    cables = topology.derived(_cables, ft)
    ports: list[SwitchPort] = []
    for link in ft.links:
        cable = cables[(link.a.device, link.a.number, link.z.device, link.z.number)]
        if link.tier == NODE_LEAF:
            ports.append(SwitchPort(cable, link.z.device, link.z.number, link.a.device, link.a.number, link.rail,
                                    link.z.device, link.speed))
            continue
        leaf = link.a.device
        ports.append(SwitchPort(cable, link.a.device, link.a.number, link.z.device, link.z.number, link.rail, leaf,
                                link.speed))
        ports.append(SwitchPort(cable, link.z.device, link.z.number, link.a.device, link.a.number, link.rail, leaf,
                                link.speed))
    return tuple(ports)


def planned_gbps(ft: FabricTopology) -> dict[str, float]:
    """Gb/s by the speed names the fabric's links use (its host and uplink speeds, from the catalog)."""
    return {s.name: s.gbps for s in (ft.fabric.speed, ft.fabric.uplink_speed)}


def lustre_clients(topology: Topology, ft: FabricTopology) -> tuple[tuple[str, str], ...]:
    """(node, fsname) of every Lustre client of a file system served over ``ft``, in node order."""
    return tuple((n.name, fs.fsname) for n in topology.cluster.nodes for fs in topology.cluster.lustre
                 if fs.fabric == ft.fabric.name and n.group in fs.groups)


def _cables(topology: Topology, ft: FabricTopology) -> dict[tuple[str, int, str, int], str]:
    """Cable id by both ends (device, port number) as the links name them."""
    return {(c.a.device, c.a.port_number, c.z.device, c.z.port_number): c.id
            for c in topology.cables if c.fabric == ft.fabric.name}
