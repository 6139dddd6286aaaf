"""Target ``host-ipoib``: each node's IPoIB addresses on an InfiniBand fabric whose spec gives an IPoIB address plan
(``addressing.hosts``), on the interface that carries the port's IPoIB partition.

The kernel's parent interface (``ibp24s0``) runs on the partition at P_Key index 0 of its port (Linux
Documentation/infiniband/ipoib.rst); a port whose IPoIB partition sits elsewhere needs a child interface created
with that P_Key (``ibp24s0.8002``, the full-member P_Key in its name, as ``create_child`` names it).
- parent: ``hosts/<node>/netplan-ipoib.yaml``: datagram mode, the partition's IPoIB MTU, the address, no gateway.
- child: systemd-networkd files in ``hosts/<node>/systemd-network/`` (netplan 0.106 cannot create IPoIB children):
  the parent's .network (no address, ``IPoIB=`` names the child), the child's .netdev (``Kind=ipoib``,
  ``PartitionKey``) and its .network (the address).
- ``hosts/<node>/sysctl-ipoib.conf``: arp_ignore/arp_announce per addressed interface, so a node's rails (one
  broadcast domain per partition) answer ARP only for their own address.
No port holds up boot: netplan marks each ``optional``, networkd's files say ``RequiredForOnline=no`` (one dead rail
would otherwise stall systemd-networkd-wait-online for two minutes).
Ports of nodes that are full members of no IPoIB partition (management nodes; compute nodes and storage servers are
refused by the check) are left unconfigured and listed. Lustre NIDs over o2ib and the IB pod networks use these
addresses.
"""

from __future__ import annotations

from dataclasses import dataclass

from netaddr import IPNetwork

from fabricgen.core.artifacts import Artifact
from fabricgen.core.naming import DEVICE_NAME, NETDEV, checked
from fabricgen.core.templating import render_template
from fabricgen.model.cluster import FabricType
from fabricgen.model.infiniband import FULL_MEMBER, SubnetManager
from fabricgen.model.nodes import Nic, Node
from fabricgen.model.topology import Topology

IPOIB_HEADER = 4  # bytes of IPoIB encapsulation: datagram-mode MTU = the broadcast group's IB MTU - 4
DEFAULT_IB_MTU = 4096


def child_interface(sm: SubnetManager, node: Node, nic: Nic) -> str:
    """The IPoIB child interface the port needs ("" when the parent carries its IPoIB partition, or it has none)."""
    partition = sm.ipoib_partition(node, nic)
    if partition is None or partition == sm.index0_partition(node, nic):
        return ""
    return f"{nic.netdev}.{partition.pkey | FULL_MEMBER:04x}"


@dataclass(frozen=True)
class IpoibPort:
    netdev: str  # the interface holding the address: the parent, or its child
    parent: str
    pkey: str  # the child's PartitionKey (full member), "" on the parent
    address: str  # "10.24.0.1/24"
    mtu: int
    comment: str


def ipoib_ports(topology: Topology) -> dict[str, tuple[list[IpoibPort], list[str]]]:
    """Per node: its addressed IPoIB ports, and the ports it leaves unconfigured (with why)."""
    nodes = {n.name: n for n in topology.cluster.nodes}
    out: dict[str, tuple[list[IpoibPort], list[str]]] = {}
    for ft in topology.fabrics:
        plan = topology.addresses.get(ft.fabric.name)
        sm = ft.fabric.subnet_manager
        if ft.fabric.type is not FabricType.INFINIBAND or plan is None or sm is None:
            continue
        for subnet in plan.hosts:
            prefix = IPNetwork(subnet.network).prefixlen
            for name, nic_port, ip in subnet.hosts:
                node = nodes[name]
                nic = next(n for n in node.profile.nics(ft.fabric.role.nic_role) if n.index + 1 == nic_port)
                ports, unconfigured = out.setdefault(name, ([], []))
                partition = sm.ipoib_partition(node, nic)
                if not nic.netdev:
                    unconfigured.append(f"{nic.port} (no netdev in the node profile)")
                    continue
                if partition is None:
                    unconfigured.append(f"{nic.netdev} (a full member of no IPoIB partition: "
                                        f"{', '.join(sm.ipoib)})")
                    continue
                parent = checked(NETDEV, nic.netdev, "netdev")
                child = child_interface(sm, node, nic)
                mtu = (partition.ipoib.mtu if partition.ipoib else DEFAULT_IB_MTU) - IPOIB_HEADER
                index0 = sm.index0_partition(node, nic)
                where = "at P_Key index 0, on the parent" if not child else (
                    f"on a child (index 0 holds {index0.name if index0 else 'no partition'})")
                comment = (f"{ft.fabric.name} rail {subnet.rail} ({nic.port}, {nic.dev or 'no RDMA device'}), "
                           f"partition {partition.name} (0x{partition.pkey:04x}) {where}")
                pkey = f"0x{partition.pkey | FULL_MEMBER:04x}" if child else ""
                ports.append(IpoibPort(child or parent, parent, pkey, f"{ip}/{prefix}", mtu, comment))
    return out


def render(topology: Topology) -> list[Artifact]:
    source = topology.cluster.source
    out = []
    for node, (ports, unconfigured) in sorted(ipoib_ports(topology).items()):
        host = f"hosts/{checked(DEVICE_NAME, node, 'node name')}"
        if ports:
            out.append(Artifact(f"{host}/sysctl-ipoib.conf", render_template(
                "host-ipoib/sysctl-ipoib.conf.j2", node=node, source=source, ports=ports)))
        parents = [p for p in ports if not p.pkey]
        children = [p for p in ports if p.pkey]
        if parents:
            out.append(Artifact(f"{host}/netplan-ipoib.yaml", render_template(
                "host-ipoib/netplan-ipoib.yaml.j2", node=node, source=source, ports=parents,
                unconfigured=unconfigured)))
        for port in children:
            names = {"parent": port.parent, "child": port.netdev}
            for template, target in (("ipoib-parent.network.j2", f"61-fabricgen-{port.parent}.network"),
                                     ("ipoib-child.netdev.j2", f"61-fabricgen-{port.netdev}.netdev"),
                                     ("ipoib-child.network.j2", f"61-fabricgen-{port.netdev}.network")):
                out.append(Artifact(f"{host}/systemd-network/{target}", render_template(
                    f"host-ipoib/{template}", node=node, source=source, port=port, **names)))
    return out
