"""Target ``host-roce``: the host side of every RoCE fabric with a lossless class (``qos``).

- ``hosts/<profile>/roce-qos.sh`` (0755): per node profile, sets the NIC end of the lossless chain on each RoCE
  port: trust DSCP, PFC on the lossless priority only, DSCP -> priority for the lossless and CNP DSCPs, ECN
  (DCQCN) on the lossless priority, the CNP DSCP and priority, ARP settings for several ports on one host, and
  the host MTU. Idempotent, ``--dry-run``, ``SYSFS_ROOT``/``PROCFS_ROOT`` and ``MLNX_QOS``/``IP`` overrides.
  A BlueField port must run in NIC mode: the script reads INTERNAL_CPU_OFFLOAD_ENGINE with mstconfig (its current
  value) and refuses, changing nothing, a port in DPU mode, where host-side mlnx_qos is undefined; the profile's
  ``bluefield_mode: nic`` has nic-firmware.sh (target ``host-firmware``) select NIC mode, and the refusal says so.
- ``hosts/<profile>/roce-qos.service``: a oneshot unit running the script at every boot (its settings do not
  survive one), loading rdma_ucm first (rdma_cm's configfs directory exists only then), after the RoCE ports'
  netdevs and the SR-IOV VFs, before the network is online (LNet, kubelet, slurmd).
- ``hosts/<node>/netplan-roce.yaml``: per node of a fabric with ``addressing``: each RoCE port's address from the
  plan, the host MTU, a route to the fabric's host pool via the port's leaf (no default route) and a per-port
  routing table chosen by source address, so traffic from a port's address leaves through that port.
- ``hosts/<node>/netplan-inband.yaml``: the same for the in-band fabric (its ports, or the bond over them).
  A bond (``bonds`` of the profile) takes the address the plan gives its primary member; the other members join
  it without one.
- ``hosts/<profile>/roce-firewall.nft``: an nftables table accepting RoCE v2 (UDP 4791) on the RoCE ports.

A profile attached to several RoCE fabrics gets one script covering all its RoCE ports; a port that would get
two different settings is an error. Ports without a ``netdev`` in the profile cannot be configured: the
artifacts list them in a comment.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import PurePosixPath

from netaddr import IPAddress, IPNetwork

from fabricgen.core.artifacts import Artifact
from fabricgen.core.naming import DEVICE_NAME, IDENTIFIER, LABEL, NETDEV, PCI_ADDRESS, checked
from fabricgen.core.templating import render_template
from fabricgen.model.cluster import Attachment, Fabric, FabricRole, FabricType
from fabricgen.model.nodes import Bond, Node, NodeProfile
from fabricgen.model.topology import FabricTopology, Topology

ROCE_V2_PORT = 4791  # IANA: RoCE v2 is UDP to this port
# NVIDIA's DPU family: in DPU mode (embedded CPU function ownership, the DPU's default) the Arm owns the port and
# "using mlnx_qos on both the host and Arm will result with undefined behavior. Users must only use mlnx_qos from
# the Arm" (BlueField BSP 4.5.4, QoS Configuration); roce-qos.sh refuses such a port and configures NIC mode only
BLUEFIELD = "BlueField"
# Per-port routing tables (and main-table route metrics) are base + 1, + 2, ... per node and plane; the planes
# number apart so the RoCE and in-band files of one host never share a table (each rule's priority is its table)
TABLE_BASES = {"roce": 100, "inband": 200}

INSTALL_DIR = "/etc/fabricgen"  # where the unit expects roce-qos.sh (host-sriov installs there too)


@dataclass(frozen=True)
class RocePort:
    """One RoCE port of a profile and the lossless class it must carry."""

    netdev: str
    dev: str
    port: str
    fabrics: tuple[str, ...]
    dscp: int
    priority: int
    cnp_dscp: int
    cnp_priority: int
    mtu: int
    switch_mtu: int
    hca_port: int = 1  # the RDMA device's port number (rdma_cm's configfs ports/<n>)
    bluefield: bool = False  # a BlueField port: configured from the host in NIC mode only (module doc)
    # a VPI port (its card also runs InfiniBand) at this PCI function: roce-qos.sh turns its LINK_TYPE_P<n> to
    # Ethernet when it comes up InfiniBand, which has no Ethernet netdev for anything else to configure
    pci: str = ""
    link_port: int = 0

    @property
    def tos(self) -> int:
        """rdma_cm's default RoCE type of service: the lossless DSCP << 2 | ECT(0), as NCCL_IB_TC for NCCL."""
        return self.dscp << 2 | 2

    @property
    def pfc(self) -> str:
        """mlnx_qos --pfc bitmap: PFC on the lossless priority only."""
        return ",".join("1" if p == self.priority else "0" for p in range(8))

    @property
    def settings(self) -> tuple[int, ...]:
        return self.dscp, self.priority, self.cnp_dscp, self.cnp_priority, self.mtu


@dataclass(frozen=True)
class FabricClass:
    """A fabric's lossless class, for the script header."""

    name: str
    dscp: int
    priority: int
    pfc: str
    tc: int
    cnp_dscp: int
    cnp_priority: int
    mtu: int
    switch_mtu: int


@dataclass(frozen=True)
class Route:
    to: str
    via: str = ""
    metric: int = 0
    table: int = 0
    scope: str = ""


@dataclass(frozen=True)
class NetplanPort:
    netdev: str
    comment: str
    mtu: int
    address: str
    source: str
    table: int
    routes: tuple[Route, ...]
    bond: Bond | None = None  # a bond (netdev = its name) over these members, carrying the primary's address
    # keep the address without carrier (RoCE ports): LNet and rdma_cm need it to exist when a leaf is down at boot
    ignore_carrier: bool = False


def _inband_fabrics(topology: Topology) -> Iterator[FabricTopology]:
    """Ethernet fabrics of the in-band role, whose hosts get their in-band interfaces (bonds included)."""
    return (ft for ft in topology.fabrics if ft.fabric.type.ethernet and ft.fabric.role is FabricRole.INBAND)


def _qos_fabrics(topology: Topology) -> Iterator[FabricTopology]:
    """RoCE fabrics with a lossless class, in spec order."""
    return (ft for ft in topology.fabrics if ft.fabric.type is FabricType.ROCE and ft.fabric.qos is not None)


def _fabric_class(fabric: Fabric) -> FabricClass:
    q = fabric.qos
    assert q is not None
    for what, value, top in (("lossless DSCP", q.lossless.dscp, 63), ("CNP DSCP", q.cnp.dscp, 63),
                             ("lossless priority", q.lossless.priority, 7), ("CNP priority", q.cnp.priority, 7)):
        if not 0 <= value <= top:
            raise ValueError(f"fabric {fabric.name}: {what} {value} is outside 0..{top}")
    if not 68 <= fabric.host_mtu <= 65535:
        raise ValueError(f"fabric {fabric.name}: host MTU {fabric.host_mtu} is outside 68..65535")
    pfc = ",".join("1" if p == q.lossless.priority else "0" for p in range(8))
    return FabricClass(checked(IDENTIFIER, fabric.name, "fabric name"), q.lossless.dscp, q.lossless.priority, pfc,
                       q.nccl_tc, q.cnp.dscp, q.cnp.priority, fabric.host_mtu, fabric.mtu)


def _attached(topology: Topology, fabric: Fabric) -> list[Node]:
    groups = set(fabric.node_groups)
    return [n for n in topology.cluster.nodes if n.group in groups and n.profile.nics(fabric.role.nic_role)]


@dataclass
class _ProfilePorts:
    profile: NodeProfile
    fabrics: dict[str, FabricClass]
    ports: dict[str, RocePort]
    unnamed: list[str]  # rear-panel labels of RoCE ports without a netdev


def _profile_ports(topology: Topology) -> dict[str, _ProfilePorts]:
    """Per attached profile (sorted by name), its RoCE ports in fabric then NIC order."""
    out: dict[str, _ProfilePorts] = {}
    for ft in _qos_fabrics(topology):
        fabric = ft.fabric
        cls = _fabric_class(fabric)
        profiles = {n.profile.name: n.profile for n in _attached(topology, fabric)}
        for name, profile in sorted(profiles.items()):
            entry = out.setdefault(name, _ProfilePorts(profile, {}, {}, []))
            entry.fabrics[fabric.name] = cls
            for nic in profile.nics(fabric.role.nic_role):
                label = f"{checked(LABEL, nic.port, 'port label')} ({fabric.name})"
                if not nic.netdev:
                    entry.unnamed.append(label)
                    continue
                netdev = checked(NETDEV, nic.netdev, f"profile {name}: netdev")
                model = topology.cluster.nic_models.get(nic.model)
                vpi = bool(nic.pci) and model is not None and "ib" in model.link_types
                pci = checked(PCI_ADDRESS, nic.pci, f"profile {name}: PCI address") if vpi else ""
                port = RocePort(netdev, checked(LABEL, nic.dev, "RDMA device") if nic.dev else "", nic.port,
                                (fabric.name,), cls.dscp, cls.priority, cls.cnp_dscp, cls.cnp_priority, cls.mtu,
                                cls.switch_mtu, profile.hca_port(nic), nic.model.startswith(BLUEFIELD),
                                pci, int(pci[-1]) + 1 if pci else 0)
                known = entry.ports.get(netdev)
                if known is None:
                    entry.ports[netdev] = port
                elif known.settings == port.settings:
                    entry.ports[netdev] = replace(known, fabrics=(*known.fabrics, fabric.name))
                else:
                    raise ValueError(f"profile {name}: {netdev} would carry two lossless classes (fabrics "
                                     f"{', '.join(known.fabrics)} and {fabric.name} differ); give each fabric its "
                                     "own node groups and profiles, or the same qos")
    return {name: out[name] for name in sorted(out)}


def _qos_script(name: str, entry: _ProfilePorts, source: str) -> bytes:
    return render_template("host-roce/roce-qos.sh.j2", profile=checked(IDENTIFIER, name, "profile name"), source=source,
                           classes=list(entry.fabrics.values()), ports=list(entry.ports.values()),
                           unnamed=entry.unnamed, nic_firmware=entry.profile.bluefield_mode == "nic")


def _firewall(name: str, entry: _ProfilePorts, source: str) -> bytes:
    return render_template("host-roce/roce-firewall.nft.j2", profile=checked(IDENTIFIER, name, "profile name"),
                           source=source, port=ROCE_V2_PORT, ports=list(entry.ports.values()), unnamed=entry.unnamed)


def _netplan_ports(topology: Topology, fabrics: Iterable[FabricTopology], table_base: int, ignore_carrier: bool
                   ) -> dict[str, tuple[list[NetplanPort], list[str]]]:
    """Per node with an address on one of ``fabrics``: its netplan ports (a bond in place of its members) and its
    ports without a netdev; tables numbered from ``table_base``."""
    per_node: dict[str, list[tuple[Fabric, int, IPNetwork, str, str, str, str]]] = {}
    for ft in fabrics:
        plan = topology.addresses.get(ft.fabric.name)
        if ft.fabric.addressing is None or plan is None:
            continue
        for subnet in plan.hosts:
            network = IPNetwork(subnet.network)
            for node, nic_port, ip in subnet.hosts:
                per_node.setdefault(node, []).append((ft.fabric, nic_port, network, subnet.gateway, ip, subnet.leaf,
                                                      subnet.peer))
    nodes = {n.name: n for n in topology.cluster.nodes}
    out: dict[str, tuple[list[NetplanPort], list[str]]] = {}
    for node_name in sorted(per_node):
        checked(DEVICE_NAME, node_name, "node name")
        profile = nodes[node_name].profile
        ports: list[NetplanPort] = []
        unnamed: list[str] = []
        for fabric, nic_port, network, gateway, ip, leaf, peer in per_node[node_name]:
            nics = {nic.index + 1: nic for nic in profile.nics(fabric.role.nic_role)}
            nic = nics[nic_port]
            if not nic.netdev:
                unnamed.append(f"{checked(LABEL, nic.port, 'port label')} ({fabric.name})")
                continue
            bond = profile.bond_of(nic.netdev)
            if bond is not None and bond.members[0] != nic.netdev:
                continue  # a backup (or second LACP) member: the bond carries the primary's address
            if bond is not None:
                bond = bond.on(fabric.topology.attachment is Attachment.MLAG)
            netdev = checked(NETDEV, bond.name if bond else nic.netdev, f"profile {profile.name}: netdev")
            if str(IPAddress(ip)) != ip or IPAddress(ip) not in network:
                raise ValueError(f"{node_name} {netdev}: address {ip} is not in its leaf subnet {network}")
            assert fabric.addressing is not None
            # the host pool, and the switches' loopback and p2p pools: a spine's ICMP (traceroute, unreachables)
            # comes from its /31 and rp_filter drops what the host has no route back to
            pools = [str(IPNetwork(pool).cidr) for pool in (fabric.addressing.hosts, fabric.addressing.loopbacks,
                                                            fabric.addressing.p2p) if pool]
            table = table_base + len(ports) + 1
            cidr = str(network.cidr)
            routes = (*(Route(pool, gateway, metric=table) for pool in pools), Route(cidr, scope="link", table=table),
                      *(Route(pool, gateway, table=table) for pool in pools))
            leaves = checked(DEVICE_NAME, leaf, "leaf name")
            if peer:  # an MLAG pair's subnet: both leaves hold the gateway
                leaves = f"{leaves} and {checked(DEVICE_NAME, peer, 'leaf name')}, anycast"
            comment = (f"{nic.dev + ', ' if nic.dev else ''}port {checked(LABEL, nic.port, 'port label')}, fabric "
                       f"{fabric.name}, {'leaves' if peer else 'leaf'} {leaves} ({cidr}, gateway {gateway})")
            if bond is not None:
                comment = f"bond {bond.name} ({bond.mode}) over {', '.join(bond.members)}: {comment}"
            ports.append(NetplanPort(netdev, comment, fabric.host_mtu, f"{ip}/{network.prefixlen}", ip, table,
                                     routes, bond, ignore_carrier and bond is None))
        if len({p.netdev for p in ports}) != len(ports):
            raise ValueError(f"{node_name}: a RoCE port has two addresses")
        out[node_name] = (ports, unnamed)
    return out


def render(topology: Topology) -> list[Artifact]:
    """The host artifacts of every RoCE fabric with qos: see the module docstring."""
    source = PurePosixPath(topology.cluster.source).name
    out = []
    for name, entry in _profile_ports(topology).items():
        if not entry.ports:
            continue  # no RoCE port of this profile has a netdev: nothing a script could configure
        out.append(Artifact(f"hosts/{name}/roce-qos.sh", _qos_script(name, entry, source), 0o755))
        out.append(Artifact(f"hosts/{name}/roce-qos.service", render_template(
            "host-roce/roce-qos.service.j2", profile=checked(IDENTIFIER, name, "profile name"), source=source,
            install_dir=INSTALL_DIR,
            devices=[f"sys-subsystem-net-devices-{p.netdev}.device" for p in entry.ports.values()])))
        out.append(Artifact(f"hosts/{name}/roce-firewall.nft", _firewall(name, entry, source)))
    for plane, fabrics in (("roce", _qos_fabrics), ("inband", _inband_fabrics)):
        base = TABLE_BASES[plane]
        for node, (ports, unnamed) in _netplan_ports(topology, fabrics(topology), base, plane == "roce").items():
            if not ports:
                continue
            out.append(Artifact(f"hosts/{node}/netplan-{plane}.yaml", render_template(
                f"host-roce/netplan-{plane}.yaml.j2", node=node, source=source, ports=ports, unnamed=unnamed,
                table_base=base)))
    return out
