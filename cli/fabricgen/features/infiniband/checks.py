"""Checks of an InfiniBand fabric as its subnet manager will see it: NodeDescriptions, the routing engine's
preconditions, GUIDs known and all used, VFs that need virtualization, and a partition plan on which every host can
talk: NCCL and IPoIB peers sharing a full-member partition at the P_Key index they use, no partition whose only full
members are switches, VF GUIDs in the partition their pods use."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

from fabricgen.core.errors import Finding, Severity, SourcePosition
from fabricgen.features.feature import fabric_error, fabric_warning
from fabricgen.features.infiniband.build import opensm_needed
from fabricgen.features.infiniband.ipoib import child_interface
from fabricgen.features.infiniband.sharp import sharp_findings
from fabricgen.features.infiniband.view import NODE_DESCRIPTION_BYTES, ib_fabric, routing_engines, uses_ftree
from fabricgen.model.cluster import Fabric, FabricRole, FabricType
from fabricgen.model.infiniband import SubnetManager
from fabricgen.model.nodes import Nic, Node
from fabricgen.model.topology import FabricTopology, Topology

IFNAMSIZ = 15  # the longest Linux interface name
# Routing engines that choose each path's SL for deadlock freedom (their path_sl hook: osm_ucast_lash.c,
# osm_ucast_dfsssp.c, osm_torus.c, osm_ucast_nue.c); the SA hands it out in path records, which NCCL never asks for.
SL_ROUTING = ("lash", "dfsssp", "torus-2QoS", "nue")


def _error(check: str, subject: str, message: str, hint: str, where: SourcePosition | None) -> Finding:
    return Finding(Severity.ERROR, check, subject, message, hint, where)


def _ports(topology: Topology, fabric: Fabric) -> Iterator[tuple[Node, Nic]]:
    groups = set(fabric.node_groups)
    role = fabric.role.nic_role
    for node in topology.cluster.nodes:
        if node.group in groups:
            for nic in node.profile.nics(role):
                yield node, nic


def _port(node: Node, nic: Nic) -> str:
    return f"{node.name} {nic.dev or nic.port}"


def _examples(ports: list[str]) -> str:
    return ", ".join(ports[:3]) + (f" and {len(ports) - 3} more" if len(ports) > 3 else "")


def _compute(topology: Topology, fabric: Fabric, sm: SubnetManager) -> Iterator[Finding]:
    """NCCL peers: every HCA port of a compute node is a full member of exactly one compute partition (its P_Key
    index 0), the same for all ports of a node, since NCCL connects any rail of a node to its peers."""
    none: list[str] = []
    several: dict[tuple[str, ...], list[str]] = defaultdict(list)
    mixed: list[str] = []
    for node, nic in _ports(topology, fabric):
        if node.profile.role != "compute":
            continue
        found = sm.compute_partitions(node, nic)
        if not found:
            none.append(_port(node, nic))
        elif len(found) > 1:
            several[tuple(p.name for p in found)].append(_port(node, nic))
    for node in topology.cluster.nodes:
        if node.group in fabric.node_groups and node.profile.role == "compute":
            tenants = {p.name for nic in node.profile.nics(fabric.role.nic_role)
                       for p in sm.compute_partitions(node, nic)[:1]}
            if len(tenants) > 1:
                mixed.append(f"{node.name} ({', '.join(sorted(tenants))})")
    where = sm.position
    if none:
        limited = [p.name for p in sm.partitions if p.name in sm.compute and p.membership == "limited"]
        why = (f"; {', '.join(limited)} makes them limited members, and the HCAs drop queue pairs between two "
               "limited members") if limited else ""
        yield _error("ib-compute-partition", fabric.name,
                     f"{len(none)} HCA ports of compute nodes are full members of no compute partition "
                     f"({', '.join(sm.compute)}), so NCCL has no partition to run on: {_examples(none)}{why}",
                     "name the partition NCCL uses in traffic.compute and make these nodes its full members", where)
    for names, ports in sorted(several.items()):
        yield _error("ib-compute-partition", fabric.name,
                     f"{len(ports)} HCA ports are full members of several compute partitions ({', '.join(names)}), "
                     f"which all want P_Key index 0: {_examples(ports)}",
                     "a port belongs to one tenant's compute partition", where)
    if mixed:
        yield _error("ib-compute-partition", fabric.name,
                     f"{len(mixed)} compute nodes have ports in different compute partitions, so NCCL between their "
                     f"rails has no shared P_Key: {_examples(mixed)}", "give all rails of a node one partition", where)
    profiles = sorted({n.profile.name for n in topology.cluster.nodes
                       if n.group in fabric.node_groups and n.profile.role == "compute"})
    for name in profiles:
        used = sm.profile_partitions(topology.cluster.nodes, fabric.node_groups, fabric.role.nic_role, name)
        if len({p.sl for p in used}) > 1:
            yield _error("ib-service-level", name,
                         f"nodes of profile {name} run NCCL in partitions with different SLs "
                         f"({', '.join(f'{p.name} SL {p.sl}' for p in used)}), but share one nccl.env "
                         "(NCCL_IB_SL)", "give these tenants' partitions one QoS level", where)


def _ipoib(topology: Topology, fabric: Fabric, sm: SubnetManager) -> Iterator[Finding]:
    """IPoIB peers: every port the IPoIB plan addresses on a compute node or a storage server (whose IPoIB address is
    its LNet o2ib NID: rdma_cm resolves it over IPoIB) is a full member of exactly one IPoIB partition, which has a
    broadcast group; a child interface's name fits Linux's limit. Management nodes may stay off IPoIB."""
    if topology.addresses.get(fabric.name) is None or fabric.addressing is None:
        return
    none: list[str] = []
    several: dict[tuple[str, ...], list[str]] = defaultdict(list)
    no_group: dict[str, list[str]] = defaultdict(list)
    long: list[str] = []
    for node, nic in _ports(topology, fabric):
        found = sm.ipoib_partitions(node, nic)
        if not found:
            if node.profile.role in ("compute", "storage"):
                none.append(_port(node, nic))
            continue
        if len(found) > 1:
            several[tuple(p.name for p in found)].append(_port(node, nic))
        if found[0].ipoib is None:
            no_group[found[0].name].append(_port(node, nic))
        child = child_interface(sm, node, nic)
        if child and len(child) > IFNAMSIZ:
            long.append(f"{node.name} {child}")
    if none:
        yield _error("ib-ipoib-partition", fabric.name,
                     f"{len(none)} IPoIB ports of compute nodes or storage servers are full members of no IPoIB "
                     f"partition ({', '.join(sm.ipoib)}): their addresses (a server's LNet NID) reach no peer: "
                     f"{_examples(none)}",
                     "name the IPoIB partition in traffic.ipoib and make these nodes its full members", sm.position)
    for names, ports in sorted(several.items()):
        yield _error("ib-ipoib-partition", fabric.name,
                     f"{len(ports)} ports are full members of several IPoIB partitions ({', '.join(names)}) but "
                     f"carry one IPoIB address: {_examples(ports)}", "a port's IPoIB runs on one partition",
                     sm.position)
    for name, ports in sorted(no_group.items()):
        yield _error("ib-ipoib-partition", fabric.name,
                     f"IPoIB of {len(ports)} ports runs on partition {name}, which has no broadcast group: "
                     f"{_examples(ports)}", f"give partition {name} an ipoib section (OpenSM then creates its "
                     "broadcast group), or name another partition in traffic.ipoib", sm.partition(name).position)
    if long:
        yield _error("ib-ipoib-partition", fabric.name,
                     f"{len(long)} IPoIB child interface names are longer than {IFNAMSIZ} characters: "
                     f"{_examples(long)}", "shorten the netdev names in the node profile", sm.position)


def _empty(topology: Topology, fabric: Fabric, sm: SubnetManager) -> Iterator[Finding]:
    """A partition (other than Default, which only has to reach the SA on the SM's own port) in which no HCA port
    is a full member: its limited members can talk to nobody but switches and the SM."""
    full: set[str] = set()
    for node, nic in _ports(topology, fabric):
        full |= {p.name for p in sm.partitions if p.full_member(node, nic)}
    for p in sm.partitions:
        if not p.is_default and p.name not in full:
            yield _error("ib-partition-members", p.name,
                         f"partition {p.name} has no HCA port as a full member: its only full members are the switches "
                         "(and the SM's own port), and limited members cannot talk to each other",
                         "make the hosts that use it full members", p.position)


def _vfs(topology: Topology, ft: FabricTopology, sm: SubnetManager) -> Iterator[Finding]:
    """VF GUIDs join their node port's compute partition (their pods see it at the VF's P_Key index 0, for NCCL and
    IPoIB alike); a VF port in no compute partition is in no partition its pods use, and pod networks over IPoIB need
    that partition's broadcast group."""
    sriov = ft.fabric.sriov
    if sriov is None or sriov.guid_base is None:
        return
    role = ft.fabric.role.nic_role
    outside: list[str] = []
    no_group: dict[str, list[str]] = defaultdict(list)
    k8s = topology.cluster.kubernetes
    pods = k8s is not None and ft.fabric.name in k8s.fabrics
    for node in topology.cluster.nodes:
        if node.group not in sriov.groups:
            continue
        for nic in sriov.ports(node.profile, role):
            partition = sm.compute_partition(node, nic)
            if partition is None:
                outside.append(_port(node, nic))
            elif pods and partition.ipoib is None:
                no_group[partition.name].append(_port(node, nic))
    if outside:
        yield _error("ib-vf-partition", ft.fabric.name,
                     f"the VF GUIDs of {len(outside)} ports are outside every partition their pods use: the ports are "
                     f"full members of no compute partition ({', '.join(sm.compute)}): {_examples(outside)}",
                     "give these nodes a compute partition, or leave them out of sriov.nodes", sriov.position)
    for name, ports in sorted(no_group.items()):
        yield _error("ib-vf-partition", ft.fabric.name,
                     f"pods on {ft.fabric.name} get IPoIB addresses on VFs whose partition {name} has no broadcast "
                     f"group: {_examples(ports)}", f"give partition {name} an ipoib section",
                     sm.partition(name).position)


def _rates(ft: FabricTopology, sm: SubnetManager) -> Iterator[Finding]:
    """An IPoIB broadcast group faster than the hosts' links: OpenSM creates it, but no port can join it."""
    link = ft.fabric.speed.gbps
    for p in sm.partitions:
        if p.ipoib is not None and p.ipoib.rate_gbps is not None and p.ipoib.rate_gbps > link:
            yield _error("ib-ipoib-rate", p.name,
                         f"partition {p.name}'s broadcast group runs at {p.ipoib.rate_gbps:g} Gb/s, faster than the "
                         f"hosts' {ft.fabric.speed.name} links ({link:g} Gb/s): no port can join it",
                         f"set ipoib.rate_gbps to at most {link:g}", p.position)


def _lustre(topology: Topology, ft: FabricTopology, sm: SubnetManager) -> Iterator[Finding]:
    """LNet names its o2ib interfaces by the profile's netdevs: it cannot follow IPoIB onto a child interface."""
    for fs in topology.cluster.lustre:
        if fs.fabric != ft.fabric.name:
            continue
        children = [f"{node.name} {child}" for node, nic in _ports(topology, ft.fabric)
                    if node.group in fs.groups and (child := child_interface(sm, node, nic))]
        if children:
            yield _error("ib-ipoib-partition", fs.name,
                         f"Lustre {fs.name} runs o2ib on {ft.fabric.name}, whose IPoIB is on child interfaces "
                         f"({_examples(children)}); lnet.conf would name the parent interfaces",
                         "put the IPoIB partition at P_Key index 0 (make it the compute partition), or mount over "
                         "another fabric", fs.position)


def infiniband_subnet(topology: Topology) -> Iterator[Finding]:
    """NodeDescriptions unique and within 64 bytes, routing-engine preconditions, GUIDs known and all used, and a
    partition plan on which NCCL, IPoIB and the pods' VFs can talk."""
    for ft in topology.fabrics:
        sm = ft.fabric.subnet_manager
        if ft.fabric.type is not FabricType.INFINIBAND or sm is None:
            continue
        ib = ib_fabric(topology, ft)
        seen: set[str] = set()
        for node in ib.nodes:
            if len(node.description.encode()) > NODE_DESCRIPTION_BYTES:
                yield fabric_error(ft.fabric, "node-description", node.description,
                                   f"is {len(node.description.encode())} bytes; InfiniBand NodeDescription holds "
                                   f"{NODE_DESCRIPTION_BYTES}", "shorten the name")
            if node.description in seen:
                yield fabric_error(ft.fabric, "node-description", node.description, "is not unique on the fabric")
            seen.add(node.description)
        engines = routing_engines(sm, ft.tiers, ft.fabric.speed.name)
        if uses_ftree(engines) and ft.tiers < 2:
            yield fabric_error(ft.fabric, "routing-engine", ft.fabric.name,
                               "ftree needs at least two switch tiers; this fabric has one switch",
                               "use routing_engine: minhop for a single switch")
        yield from sharp_findings(topology, ft, sm)
        if ib.missing_guids:
            yield fabric_warning(ft.fabric, "guids", ft.fabric.name,
                                 f"GUIDs of {len(ib.missing_guids)} devices are unknown (e.g. {ib.missing_guids[0]}): "
                                 "root-guids.conf, cn-guids.conf, node-name-map and partition members are incomplete",
                                 "set subnet_manager.guids to the site inventory file (or simulated for a lab)")
        needed = opensm_needed(ft.fabric.speed.name)
        if sm.flavor == "opensm" and needed is not None and not sm.opensm_version:
            yield fabric_warning(ft.fabric, "opensm-version", ft.fabric.name,
                                 f"runs {ft.fabric.speed.name} on an OpenSM of unstated release (Debian 12 ships "
                                 f"3.3.23): {needed[1]}",
                                 "state the release on the SM hosts in subnet_manager.opensm_version (3.3.24 or later "
                                 "for NDR, NVIDIA's 5.x for XDR), or use flavor: ufm")
        if ft.fabric.sriov is not None and not sm.nvidia:
            yield fabric_warning(ft.fabric, "sr-iov", ft.fabric.name,
                                 "carries InfiniBand VFs, which need a subnet manager with virtualization "
                                 "(virt_enabled 2); upstream OpenSM has none, so the VFs get no LID and stay down",
                                 "run NVIDIA's OpenSM from DOCA-OFED and state it (subnet_manager.opensm_version: "
                                 "5.x; fabricgen then writes virt_enabled 2), or UFM (flavor: ufm)")
        planned = {n.description for n in ib.nodes}
        for key, entry in sorted(sm.inventory.items()):
            if key not in planned:
                yield Finding(Severity.ERROR, "guids", key, "is in the GUID inventory but not in the plan",
                              "check the device name and RDMA device", entry.position)
        sl_engines = [e for e in engines if e in SL_ROUTING]
        if sl_engines and ft.fabric.role is FabricRole.COMPUTE:
            yield _error("ib-service-level", ft.fabric.name,
                         f"routing engine {sl_engines[0]} picks each path's SL to avoid deadlocks, but NCCL never asks "
                         "the SA for a path: it sends on NCCL_IB_SL, one SL for every peer",
                         "use ftree (or updn/minhop) on the compute fabric", sm.position)
        yield from _compute(topology, ft.fabric, sm)
        yield from _ipoib(topology, ft.fabric, sm)
        yield from _empty(topology, ft.fabric, sm)
        yield from _vfs(topology, ft, sm)
        yield from _rates(ft, sm)
        yield from _lustre(topology, ft, sm)

