"""Target ``host-ipoib``: ``hosts/<node>/netplan-ipoib.yaml`` for every node on an InfiniBand fabric whose spec
gives an IPoIB address plan (``addressing.hosts``): each port's address on its rail's subnet, datagram mode,
the IPoIB MTU. Lustre NIDs over o2ib and the IB pod networks use these addresses.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath

from netaddr import IPNetwork

from fabricgen.core.artifacts import Artifact
from fabricgen.core.naming import DEVICE_NAME, NETDEV, checked
from fabricgen.core.templating import render_template
from fabricgen.model.cluster import FabricType
from fabricgen.model.topology import Topology

IPOIB_MTU = 4092  # the 4096-byte IB MTU less the 4-byte IPoIB encapsulation header


@dataclass(frozen=True)
class IpoibPort:
    netdev: str
    address: str   # "10.24.0.1/24"
    comment: str


def _ports(topology: Topology) -> dict[str, tuple[list[IpoibPort], list[str]]]:
    """Per node: its IPoIB ports with a netdev, and the ports it cannot configure for want of one."""
    nodes = {n.name: n for n in topology.cluster.nodes}
    out: dict[str, tuple[list[IpoibPort], list[str]]] = {}
    for ft in topology.fabrics:
        plan = topology.addresses.get(ft.fabric.name)
        if ft.fabric.type is not FabricType.INFINIBAND or plan is None:
            continue
        for subnet in plan.hosts:
            prefix = IPNetwork(subnet.network).prefixlen
            for node, nic_port, ip in subnet.hosts:
                nic = next(n for n in nodes[node].profile.nics(ft.fabric.role.nic_role) if n.index + 1 == nic_port)
                ports, unnamed = out.setdefault(node, ([], []))
                if not nic.netdev:
                    unnamed.append(nic.port)
                    continue
                comment = f"{ft.fabric.name} rail {subnet.rail} ({nic.port}, {nic.dev or 'no RDMA device'})"
                ports.append(IpoibPort(checked(NETDEV, nic.netdev, "netdev"), f"{ip}/{prefix}", comment))
    return out


def render(topology: Topology) -> list[Artifact]:
    source = PurePosixPath(topology.cluster.source).name
    out = []
    for node, (ports, unnamed) in sorted(_ports(topology).items()):
        if ports:
            out.append(Artifact(f"hosts/{checked(DEVICE_NAME, node, 'node name')}/netplan-ipoib.yaml", render_template(
                "host-ipoib/netplan-ipoib.yaml.j2", node=node, source=source, ports=ports, unnamed=unnamed,
                mtu=IPOIB_MTU)))
    return out
