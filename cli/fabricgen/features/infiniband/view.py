"""The InfiniBand view of a compiled fabric: nodes as the subnet manager sees them (NodeDescription, GUIDs,
ports) and links between (node, port) pairs. The OpenSM renderer, the ibnetdiscover verifier and the IB
checks all read this one view, so the plan, the generated files and the verification cannot disagree.

NodeDescriptions: a switch reports its name (set it as the switch's system name); an HCA reports
``<hostname> <mlx5 device>`` as rdma-ndd sets it. HCA port numbers count the node's compute NIC ports that
share one RDMA device (a single-port ConnectX-7 OSFP is port 1 of its own HCA).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from fabricgen.model.cluster import FabricType, Tier
from fabricgen.model.infiniband import SubnetManager
from fabricgen.model.nodes import NicRole
from fabricgen.model.topology import NODE_LEAF, FabricTopology, Topology

MANAGEMENT_INTERFACE = "mgmt0"  # an NVIDIA InfiniBand switch's out-of-band port (MLNX-OS, UFM's inventory)
NODE_DESCRIPTION_BYTES = 64  # IBTA NodeDescription is a 64-byte string
SIMULATED_BASE = 0x0002C90300000000  # NVIDIA/Mellanox OUI 00:02:c9, as ibsim and lab fabrics use


@dataclass(frozen=True, slots=True)
class IbNode:
    description: str
    kind: str  # "switch" or "hca"
    ports: int
    node_guid: int | None
    port_guid: int | None  # switch: = node GUID; HCA: its port 1
    tier: Tier | None = None
    role: str = ""  # HCA: its node profile's role (compute, management for UFM/SM hosts, storage for servers)


@dataclass(frozen=True, slots=True)
class IbLink:
    a: str
    a_port: int
    z: str
    z_port: int
    speed: str
    cable: str
    label: str


@dataclass(frozen=True)
class IbFabric:
    name: str
    nodes: tuple[IbNode, ...]
    links: tuple[IbLink, ...]
    top_tier: Tier
    guids: str  # simulated | inventory | unknown

    @property
    def switches(self) -> tuple[IbNode, ...]:
        return tuple(n for n in self.nodes if n.kind == "switch")

    @property
    def hcas(self) -> tuple[IbNode, ...]:
        return tuple(n for n in self.nodes if n.kind == "hca")

    @property
    def roots(self) -> tuple[IbNode, ...]:
        return tuple(n for n in self.switches if n.tier is self.top_tier)

    @property
    def compute_hcas(self) -> tuple[IbNode, ...]:
        """HCAs of compute nodes: ftree's compute nodes (cn_guid_file), whose routes to each other it balances first."""
        return tuple(n for n in self.hcas if n.role == "compute")

    @property
    def io_hcas(self) -> tuple[IbNode, ...]:
        """HCAs of every other node (UFM appliances and SM hosts, storage servers): ftree's I/O nodes (io_guid_file).
        ftree routes every port absent from cn_guid_file after the compute nodes, on the port counters CN routing
        left (osm_ucast_ftree.c fabric_route_to_non_cns), so storage traffic does not unbalance NCCL's
        compute-to-compute routes; with max_reverse_hops 0 the file itself changes no route."""
        return tuple(n for n in self.hcas if n.role != "compute")

    def io_roles(self) -> str:
        """What the I/O nodes are, for the files that list them."""
        kinds = {"management": "management nodes (UFM, SM hosts)", "storage": "storage servers"}
        return " and ".join(kinds[r] for r in kinds if any(n.role == r for n in self.io_hcas))

    @property
    def missing_guids(self) -> tuple[str, ...]:
        return tuple(n.description for n in self.nodes if n.node_guid is None)


FTREE_ENGINES = ("ftree", "ar_ftree")  # read cn_guid_file/io_guid_file; ftree's rules (LMC 0, two tiers)
ROOTED_ENGINES = (*FTREE_ENGINES, "updn", "ar_updn")  # read root_guid_file


def routing_engines(sm: SubnetManager, tiers: int, speed: str) -> tuple[str, ...]:
    """The spec's engines, or by default: minhop for a lone switch; for a fat tree ftree, then updn when ftree
    fails (a node at the wrong rank after a cabling fault: updn is credit-loop free on any topology and roots at
    the same switches); with NVIDIA's adaptive routing (UFM, its core SM since 6.4, or NVIDIA's OpenSM 5.x) their ar_
    forms, and on XDR ar_updn alone (UFM's manual, Appendix - Adaptive Routing: "For XDR topologies, only the ar_updn
    routing mode is supported"; ar_ftree no longer is)."""
    if sm.engines:
        return sm.engines
    if tiers < 2:
        return ("minhop",)
    adaptive = sm.adaptive_routing is not None and sm.adaptive_routing.enabled
    if sm.nvidia and speed == "XDR":
        return ("ar_updn",) if adaptive else ("updn",)
    return ("ar_ftree", "ar_updn") if adaptive else ("ftree", "updn")


def uses_ftree(engines: tuple[str, ...]) -> bool:
    return any(e in FTREE_ENGINES for e in engines)


def uses_roots(engines: tuple[str, ...]) -> bool:
    return any(e in ROOTED_ENGINES for e in engines)


def hca_description(node: str, dev: str) -> str:
    return f"{node} {dev}"


def hca_ports(topology: Topology, ft: FabricTopology) -> dict[tuple[str, int], tuple[str, int]]:
    """(node, node-level NIC port) -> (HCA description, HCA port); the port as NodeProfile.hca_port numbers it,
    so topology.net and NCCL_IB_HCA agree."""
    profiles = {n.name: n.profile for n in topology.cluster.nodes}
    ports: dict[tuple[str, NicRole, int], int] = {}  # per profile NIC, not per node: thousands of nodes share one
    out: dict[tuple[str, int], tuple[str, int]] = {}
    for link in ft.links:
        if link.tier == NODE_LEAF and link.nic is not None:
            dev = link.nic.dev or f"port{link.a.number}"
            profile = profiles[link.a.device]
            key = (profile.name, link.nic.role, link.nic.index)
            if key not in ports:
                ports[key] = profile.hca_port(link.nic)
            port = ports[key]
            out[(link.a.device, link.a.number)] = (hca_description(link.a.device, dev), port)
    return out


def _guid(fabric_index: int, kind: int, serial: int) -> int:
    """A simulated GUID: the base, then 4 bits of fabric, 4 bits of device kind, 24 bits of serial (the fields
    never overlap the base's 0x03 byte, so every fabric's devices differ)."""
    if not (fabric_index < 16 and kind < 16 and serial < 1 << 24):
        raise ValueError(f"simulated GUIDs hold 16 fabrics of 16M devices, not fabric {fabric_index} device {serial}")
    return SIMULATED_BASE | (fabric_index << 28) | (kind << 24) | serial


def ib_fabric(topology: Topology, ft: FabricTopology) -> IbFabric:
    """The subnet manager's view of one InfiniBand fabric, computed once per compiled topology: the IB check,
    the SR-IOV check, the renderer and ``fabricgen verify`` share it (see ``Topology.derived``)."""
    return topology.derived(_ib_fabric, ft)


def _ib_fabric(topology: Topology, ft: FabricTopology) -> IbFabric:
    """The subnet manager's view of one InfiniBand fabric, with GUIDs simulated, from the inventory, or None."""
    sm = ft.fabric.subnet_manager
    source = sm.guids if sm else "unknown"
    inventory = sm.inventory if sm else {}
    index = [f.fabric.name for f in topology.fabrics if f.fabric.type is FabricType.INFINIBAND].index(ft.fabric.name)
    hca_port_map = hca_ports(topology, ft)
    nodes: list[IbNode] = []
    for i, sw in enumerate(ft.switches):
        guid = _guid(index, 1, i + 1) if source == "simulated" else (
            inventory[sw.name].node_guid if sw.name in inventory else None)
        nodes.append(IbNode(sw.name, "switch", sw.model.logical_ports(ft.fabric.uplink_speed.name) or
                            sw.model.logical_ports(ft.fabric.speed.name), guid, guid, sw.tier))
    port_count: Counter[str] = Counter(desc for desc, _ in hca_port_map.values())
    roles = {n.name: n.profile.role for n in topology.cluster.nodes}
    for j, desc in enumerate(dict.fromkeys(desc for desc, _ in hca_port_map.values())):
        if source == "simulated":
            node_guid: int | None = _guid(index, 2, (j + 1) << 4)
            port_guid = node_guid + 1 if node_guid is not None else None
        else:
            entry = inventory.get(desc)
            node_guid, port_guid = (entry.node_guid, entry.port_guid) if entry else (None, None)
        nodes.append(IbNode(desc, "hca", port_count[desc], node_guid, port_guid, role=roles[desc.split(" ")[0]]))
    cables = {(c.a.device, c.a.port_number, c.z.device, c.z.port_number): c for c in topology.cables
              if c.fabric == ft.fabric.name}
    links = []
    for link in ft.links:
        a, a_port = hca_port_map.get((link.a.device, link.a.number), (link.a.device, link.a.number))
        cable = cables[(link.a.device, link.a.number, link.z.device, link.z.number)]
        links.append(IbLink(a, a_port, link.z.device, link.z.number, link.speed, cable.id, cable.label))
    top = max((sw.tier for sw in ft.switches), key=list(Tier).index)
    return IbFabric(ft.fabric.name, tuple(nodes), tuple(links), top, source)


def am_ucx_ports(sm: SubnetManager, ib: IbFabric) -> tuple[IbNode, ...]:
    """The ports sharp_am talks UCX to the jobs on (smx_ucx_interface): each SM host's second HCA port on the fabric,
    one device name on every host (both read one sharp_am.cfg); empty when sharp_am does not talk UCX or a host has
    no such port (checks.py warns). A port of its own, not the SM's: SHARP's partition at index 0 there leaves the
    SM's port with Default at index 0, which UFM, its IPoIB interface and the diagnostics run from (libibmad sends
    GMPs on P_Key index 0), and needs no flip when mastership moves."""
    if sm.sharp is None or sm.sharp.smx_protocol != "ucx" or not sm.hosts:
        return ()
    by_host: dict[str, list[IbNode]] = {}
    for n in ib.hcas:
        by_host.setdefault(n.description.split(" ")[0], []).append(n)
    second = [by_host.get(host, [])[1:2] for host, _ in sm.hosts]
    ports = tuple(n for found in second for n in found)
    return ports if len(ports) == len(sm.hosts) and len({device_of(n) for n in ports}) == 1 else ()


def device_of(port: IbNode) -> str:
    """An HCA port's RDMA device (its description is "<host> <device>")."""
    return port.description.split(" ")[1]
