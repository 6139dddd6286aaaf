"""Target ``addressing``: every fabric's address plan as the IPAM team reads it (NetBox's files: ``netbox``).

addressing/<fabric>.csv lists each address once (ports named as on the cable sheets and in NetBox): switch
loopbacks and management addresses, both ends of every /31 point-to-point link, each leaf's gateway on its host
subnet, each host port's address (IPoIB rail subnets on InfiniBand fabrics), and each leaf's pod gateway.
Interfaces are named as each switch's network OS names them (``interface_names``).
addressing/<fabric>-pod-ranges.csv (routed fabrics with VF or host-device pods): each leaf's pod range, its gateway
and the nodes behind it, the per-leaf list an IPAM (nv-ipam pools, whereabouts ranges) is configured from.
"""

from __future__ import annotations

from collections.abc import Iterator

from netaddr import IPNetwork

from fabricgen.core.artifacts import Artifact
from fabricgen.core.templating import csv_bytes
from fabricgen.features.ethernet.nos import systems
from fabricgen.features.ethernet.switch_view import HOST_VLAN
from fabricgen.features.infiniband.view import MANAGEMENT_INTERFACE
from fabricgen.model.addressing import FabricAddresses
from fabricgen.model.cluster import FabricType, Tier
from fabricgen.model.topology import NODE_LEAF, FabricTopology, Topology

PLAN_COLUMNS = ("fabric", "device", "interface", "address", "role", "network", "gateway", "peer", "peer_interface")

Row = tuple[str, ...]
UNCONFIGURED = ("loopback", "management", f"vlan{HOST_VLAN}")  # interface names on a switch without nos


def interface_names(ft: FabricTopology, tier: Tier) -> tuple[str, str, str]:
    """Names of a switch's loopback, management port and host-subnet gateway (a VLAN interface), from its NOS's
    data; an InfiniBand switch has only its management port, a switch fabricgen does not configure (no nos)
    generic names."""
    if ft.fabric.type is FabricType.INFINIBAND:
        return "", MANAGEMENT_INTERFACE, ""
    if not ft.fabric.nos:
        return UNCONFIGURED
    nos = systems()[ft.fabric.nos[tier]].data
    return nos.interface("loopback"), nos.management_interface, nos.interface("vlan", vlan=HOST_VLAN)


def plan_rows(ft: FabricTopology, plan: FabricAddresses) -> Iterator[Row]:
    """The plan's addresses in a fixed order: per switch (loopback, management), links, host subnets."""
    name = ft.fabric.name
    port_names = {(p.device, p.number): p.name for link in ft.links for p in (link.a, link.z)}
    pool = ft.fabric.addressing.management if ft.fabric.addressing else None
    management_prefix = IPNetwork(pool).prefixlen if pool else 32
    for sw in ft.switches:
        loopback, management, _ = interface_names(ft, sw.tier)
        if sw.name in plan.loopbacks:
            yield name, sw.name, loopback, f"{plan.loopbacks[sw.name]}/32", "loopback", "", "", "", ""
        if sw.name in plan.management:
            yield (name, sw.name, management, f"{plan.management[sw.name]}/{management_prefix}", "management", "",
                   "", "", "")
    for p2p in plan.p2p:
        lower, upper = port_names[(p2p.lower, p2p.lower_port)], port_names[(p2p.upper, p2p.upper_port)]
        network = str(IPNetwork(p2p.lower_ip).cidr)
        yield name, p2p.lower, lower, p2p.lower_ip, "p2p", network, "", p2p.upper, upper
        yield name, p2p.upper, upper, p2p.upper_ip, "p2p", network, "", p2p.lower, lower
    tiers = {sw.name: sw.tier for sw in ft.switches}
    cabled = {(link.a.device, link.a.number): link.z.device for link in ft.links if link.tier == NODE_LEAF}
    for subnet in plan.hosts:
        prefix = IPNetwork(subnet.network).prefixlen
        leaves = tuple(leaf for leaf in (subnet.leaf, subnet.peer) if leaf)  # an MLAG pair: both hold the gateway
        if subnet.gateway:
            for leaf in leaves:
                svi = interface_names(ft, tiers[leaf])[2]
                yield name, leaf, svi, f"{subnet.gateway}/{prefix}", "gateway", subnet.network, "", "", ""
            for leaf, own in zip(leaves, subnet.leaf_addresses, strict=False):  # MLAG: each leaf's own SVI address
                yield (name, leaf, interface_names(ft, tiers[leaf])[2], f"{own}/{prefix}", "svi", subnet.network, "",
                       "", "")
        for node, nic_port, ip in subnet.hosts:
            yield (name, node, port_names[(node, nic_port)], f"{ip}/{prefix}", "host", subnet.network,
                   subnet.gateway, cabled.get((node, nic_port), subnet.leaf) if subnet.peer else subnet.leaf, "")
    for pod in plan.pods:
        svi = interface_names(ft, tiers[pod.leaf])[2]
        yield (name, pod.leaf, svi, f"{pod.gateway}/{IPNetwork(pod.network).prefixlen}", "pod-gateway", pod.network,
               "", "", "")


POD_COLUMNS = ("fabric", "leaf", "network", "gateway", "range_start", "range_end", "nodes")


def _pod_rows(ft: FabricTopology, plan: FabricAddresses) -> Iterator[Row]:
    """Each leaf's pod range as an IPAM takes it (nv-ipam IPPool, whereabouts): the range past the gateway, the
    gateway, and the nodes whose ports on that leaf pods take (their VFs, or the PFs themselves with host-device)."""
    for pod in plan.pods:
        network = IPNetwork(pod.network)
        yield (ft.fabric.name, pod.leaf, pod.network, pod.gateway, str(network[2]), str(network[-2]),
               " ".join(pod.nodes))


def render(topology: Topology) -> list[Artifact]:
    artifacts = []
    for ft in topology.fabrics:
        plan = topology.addresses.get(ft.fabric.name)
        if plan is None:
            continue
        rows = list(plan_rows(ft, plan))
        artifacts.append(Artifact(f"addressing/{ft.fabric.name}.csv", csv_bytes(PLAN_COLUMNS, rows)))
        if plan.pods:
            artifacts.append(Artifact(f"addressing/{ft.fabric.name}-pod-ranges.csv",
                                      csv_bytes(POD_COLUMNS, _pod_rows(ft, plan))))
    return artifacts
