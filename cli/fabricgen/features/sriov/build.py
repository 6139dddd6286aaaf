"""Build the ``sriov`` section of each fabric into the model, with the checks a schema cannot express: the link
type against the fabric type, VF counts against the NIC catalog, rails and devices that exist, per-link-type
settings, and VF GUID/MAC ranges unique across the whole cluster.

VF addresses: VF ``v`` of port ``p`` (a compute port's rail, any other port's index) of the ``n``-th node of the
cluster (0-based, spec order) gets ``base + n * 2^16 + p * 2^8 + v`` (:meth:`fabricgen.model.Sriov.offset`).
Ports stay below 256 and VFs below 256, so two VFs of one fabric never share an address; the ranges of two
fabrics are checked not to overlap, so the whole cluster has distinct GUIDs (and MACs).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

from fabricgen.core.errors import Finding, Severity
from fabricgen.core.hints import did_you_mean
from fabricgen.core.issues import Issues
from fabricgen.features.feature import BuildContext
from fabricgen.features.infiniband.view import ib_fabric
from fabricgen.model.cluster import Cluster, Fabric
from fabricgen.model.hardware import NicModel
from fabricgen.model.nodes import Node, NodeProfile, rail_count
from fabricgen.model.sriov import Sriov
from fabricgen.model.topology import Topology

IPOIB_DATAGRAM_MTU = 4092  # enhanced IPoIB (mlx5, VFs included) runs datagram mode only: 4096 IB MTU - 4 B header
ETHERNET_ONLY = ("mac_base", "trust", "spoofchk", "vlan", "qos", "min_tx_rate_mbps", "max_tx_rate_mbps")
_MAX_VF_SLOT = 255


def _link_type(issues: Issues, fabric: Fabric, spec: Mapping[str, Any]) -> str:
    link_type = fabric.type.link_type
    stated = spec.get("link_type")
    if stated is not None and stated != link_type:
        issues.error(("link_type",), f"link_type {stated} contradicts the fabric type {fabric.type} (ports run "
                                     f"{link_type})", "drop link_type: it follows the fabric type")
    return link_type


def _per_type_keys(issues: Issues, link_type: str, spec: Mapping[str, Any]) -> None:
    if link_type == "ib":
        for key in ETHERNET_ONLY:
            if key in spec:
                issues.error((key,), f"{key} applies to Ethernet VFs only", "InfiniBand VFs take guid_base")
        if "guid_base" not in spec:
            issues.error((), "InfiniBand VFs need guid_base",
                         "e.g. guid_base: \"0x0002c90310000000\"; a VF with a zero GUID never links up")
        return
    if "guid_base" in spec:
        issues.error(("guid_base",), "guid_base applies to InfiniBand VFs only", "Ethernet VFs take mac_base")
    if spec.get("qos", 0) and not spec.get("vlan", 0):
        issues.error(("qos",), "qos is the priority of the VF's VLAN tag but no vlan is set", "set vlan or drop qos")
    low, high = spec.get("min_tx_rate_mbps", 0), spec.get("max_tx_rate_mbps", 0)
    if high and low > high:
        issues.error(("min_tx_rate_mbps",), f"min_tx_rate {low} Mb/s is above max_tx_rate {high} Mb/s",
                     "the guaranteed rate cannot exceed the limit")


def _mtu(issues: Issues, fabric: Fabric, link_type: str, spec: Mapping[str, Any]) -> int:
    if link_type == "ib":
        mtu = int(spec.get("mtu", IPOIB_DATAGRAM_MTU))
        if mtu > IPOIB_DATAGRAM_MTU:
            issues.error(("mtu",), f"MTU {mtu} is above {IPOIB_DATAGRAM_MTU}, the most an IPoIB VF carries",
                         "enhanced IPoIB VFs run datagram mode: at most 4092 with a 4K IB MTU")
        return mtu
    mtu = int(spec.get("mtu", fabric.host_mtu))
    if mtu > fabric.host_mtu:
        issues.error(("mtu",), f"VF MTU {mtu} is above the fabric's host_mtu {fabric.host_mtu}",
                     "a VF's MTU cannot exceed its PF's")
    return mtu


def _groups(issues: Issues, fabric: Fabric, spec: Mapping[str, Any]) -> tuple[str, ...]:
    """The node groups that get VFs: the fabric's attached groups, or the listed subset of them."""
    if "nodes" not in spec:
        return fabric.node_groups
    for i, group in enumerate(spec["nodes"]):
        if group not in fabric.node_groups:
            issues.error(("nodes", i), f"node group {group!r} is not attached to this fabric",
                         did_you_mean(group, fabric.node_groups) or f"groups: {', '.join(fabric.node_groups)}")
    return tuple(g for g in fabric.node_groups if g in spec["nodes"])


def _profiles(groups: Sequence[str], nodes: Sequence[Node]) -> dict[str, NodeProfile]:
    chosen = set(groups)
    return {n.profile.name: n.profile for n in nodes if n.group in chosen}


def _selection(issues: Issues, fabric: Fabric, sriov: Sriov, attached: Mapping[str, NodeProfile],
               profiles: Mapping[str, NodeProfile]) -> None:
    """Rails and devices exist among the fabric's ports; the ports chosen on the nodes with VFs are usable."""
    role = fabric.role.nic_role
    if sriov.rails is not None:
        if fabric.role.value != "compute":
            issues.error(("rails",), "rails select compute NICs but this fabric attaches "
                                     f"{role.value} NICs", "select ports with devices")
        else:
            rails = rail_count(attached.values())
            for i, rail in enumerate(sriov.rails):
                if rail >= rails:
                    issues.error(("rails", i), f"rail {rail} does not exist", f"the fabric has rails 0..{rails - 1}")
    known = sorted({nic.dev for p in attached.values() for nic in p.nics(role) if nic.dev})
    for i, dev in enumerate(sriov.devices or ()):
        if dev not in known:
            issues.error(("devices", i), f"no {role.value} NIC of this fabric has RDMA device {dev!r}",
                         f"devices: {', '.join(known)}" if known else "the node profiles name no RDMA devices")
    ports = [(p, nic) for p in profiles.values() for nic in sriov.ports(p, role)]
    if profiles and not ports:
        issues.error((), "no NIC port of this fabric is selected", "check rails and devices")
    for profile, nic in ports:
        if not nic.netdev:
            issues.error((), f"NIC port {nic.port} of profile {profile.name} has no netdev",
                         "name its netdev in the node profile: the setup script configures it by name")
        if Sriov.slot(nic) > _MAX_VF_SLOT:
            issues.error((), f"NIC port {nic.port} of profile {profile.name} is port {Sriov.slot(nic)}",
                         "VF addresses number ports 0..255")


def _vf_counts(issues: Issues, fabric: Fabric, sriov: Sriov, profiles: Mapping[str, NodeProfile],
               nic_models: Mapping[str, NicModel]) -> None:
    """The hardware limit: VFs per PF of every NIC model in use (the catalog's max_vfs, from NVIDIA's notes)."""
    if sriov.firmware_vfs < sriov.vfs_per_port:
        issues.error(("firmware_vfs",), f"firmware_vfs {sriov.firmware_vfs} is below vfs_per_port "
                                        f"{sriov.vfs_per_port}", "the kernel cannot create more VFs than the firmware "
                                                                 "enables (sriov_totalvfs)")
    models = sorted({nic.model for p in profiles.values() for nic in sriov.ports(p, fabric.role.nic_role)})
    for name in models:
        model = nic_models.get(name)
        if model is None:
            continue  # reported with the profile
        if model.max_vfs is None:
            issues.error(("vfs_per_port",), f"the catalog gives no VF limit for NIC model {name}",
                         f"add max_vfs to catalog.nics.{name} from the vendor's documentation")
            continue
        for key, count in (("vfs_per_port", sriov.vfs_per_port), ("firmware_vfs", sriov.firmware_vfs)):
            if count > model.max_vfs:
                issues.error((key,), f"{count} VFs per port is more than a {name} allows ({model.max_vfs})",
                             f"at most {model.max_vfs}")


def build(context: BuildContext, cluster: Cluster) -> Cluster:
    """Every fabric with its SR-IOV section, then the VF address ranges checked across the cluster."""
    fabrics = []
    for fabric in cluster.fabrics:
        path, spec = context.fabric_spec(fabric)
        fabrics.append(fabric if "sriov" not in spec else replace(fabric, sriov=_sriov(
            context.issues.at(*path, "sriov"), fabric, spec["sriov"], cluster.nodes, context.nic_models)))
    check_vf_ranges(context.issues, fabrics, cluster.nodes)
    return replace(cluster, fabrics=tuple(fabrics))


def _sriov(issues: Issues, fabric: Fabric, spec: Mapping[str, Any], nodes: Sequence[Node],
           nic_models: Mapping[str, NicModel]) -> Sriov:
    """The model of one fabric's SR-IOV section."""
    link_type = _link_type(issues, fabric, spec)
    _per_type_keys(issues, link_type, spec)
    mac = spec.get("mac_base")
    mac_base = int(mac.replace(":", ""), 16) if mac else None
    if mac_base is not None and mac_base >> 40 & 1:
        issues.error(("mac_base",), f"{mac} is a multicast address", "VF MACs are unicast: clear bit 0 of the first "
                                                                     "byte (02:... is locally administered unicast)")
    guid = spec.get("guid_base")
    sriov = Sriov(link_type, spec["vfs_per_port"], spec.get("firmware_vfs", spec["vfs_per_port"]),
                  tuple(spec["rails"]) if "rails" in spec else None,
                  tuple(spec["devices"]) if "devices" in spec else None,
                  int(guid, 16) if guid and link_type == "ib" else None, mac_base if link_type == "eth" else None,
                  spec["link_state"], spec.get("trust", True), spec.get("spoofchk", True), spec.get("vlan", 0),
                  spec.get("qos", 0), spec.get("min_tx_rate_mbps", 0), spec.get("max_tx_rate_mbps", 0),
                  _mtu(issues, fabric, link_type, spec), issues.position(()), _groups(issues, fabric, spec))
    profiles = _profiles(sriov.groups, nodes)
    _selection(issues, fabric, sriov, _profiles(fabric.node_groups, nodes), profiles)
    _vf_counts(issues, fabric, sriov, profiles, nic_models)
    return sriov


def vf_range(fabric: Fabric, nodes: Sequence[Node]) -> tuple[int, int] | None:
    """First and last VF offset of a fabric (None without VFs): the span its GUIDs or MACs take from the base."""
    sriov = fabric.sriov
    if sriov is None:
        return None
    groups = set(sriov.groups)
    role = fabric.role.nic_role
    offsets = [Sriov.offset(i, Sriov.slot(nic), vf) for i, n in enumerate(nodes) if n.group in groups
               for nic in sriov.ports(n.profile, role) for vf in (0, sriov.vfs_per_port - 1)]
    return (min(offsets), max(offsets)) if offsets else None


def colons(value: int, width: int) -> str:
    """A GUID (8 bytes) or MAC (6 bytes) as ``ip link`` writes it: lower-case hex bytes joined by colons."""
    if 0 <= value < 1 << 8 * width:  # every VF address (150,000 at 16k GPUs): bytes.hex is one C call
        return value.to_bytes(width, "big").hex(":")
    text = f"{value:0{width * 2}x}"
    return ":".join(text[i:i + 2] for i in range(0, len(text), 2))


def check_vf_ranges(issues: Issues, fabrics: Sequence[Fabric], nodes: Sequence[Node]) -> None:
    """Every VF address of the cluster is distinct and valid: each range fits its width, no two ranges overlap,
    and a MAC range keeps its base's first byte (the multicast and locally administered bits live there)."""
    spans: dict[str, list[tuple[int, int, str]]] = {"guid_base": [], "mac_base": []}
    for fabric in fabrics:
        sriov, span = fabric.sriov, vf_range(fabric, nodes)
        if sriov is None or span is None:
            continue
        for key, base, bits in (("guid_base", sriov.guid_base, 64), ("mac_base", sriov.mac_base, 48)):
            if base is None:
                continue
            path = ("fabrics", fabric.name, "sriov", key)
            first, last = base + span[0], base + span[1]
            if base == 0:
                issues.error(path, "a zero base gives VF 0 of the first node a zero address",
                             "zero GUIDs and MACs are invalid")
            if last >= 1 << bits:
                issues.error(path, f"the VFs need addresses up to {last:#x}, beyond {bits} bits",
                             f"use a base at most {(1 << bits) - 1 - span[1]:#x}")
            elif key == "mac_base" and first >> 40 != last >> 40:  # the next first byte is odd: multicast
                issues.error(path, f"the VF MACs run from {colons(first, 6)} to {colons(last, 6)}, past the base's "
                                   "first byte into multicast addresses",
                             f"use a base at most {colons((first | (1 << 40) - 1) - span[1], 6)}")
            for other_first, other_last, other in spans[key]:
                if first <= other_last and other_first <= last:
                    issues.error(path, f"VF addresses {first:#x}..{last:#x} overlap those of fabric {other} "
                                       f"({other_first:#x}..{other_last:#x})",
                                 "give each fabric a base outside the others' ranges")
            spans[key].append((first, last, fabric.name))


def vf_guids(fabric: Fabric, nodes: Sequence[Node]) -> dict[int, tuple[str, str, int]]:
    """Every planned VF GUID of an InfiniBand fabric: GUID -> (node, PF netdev, VF)."""
    sriov = fabric.sriov
    if sriov is None or sriov.guid_base is None:
        return {}
    groups, role = set(sriov.groups), fabric.role.nic_role
    return {guid: (node.name, nic.netdev, vf) for i, node in enumerate(nodes) if node.group in groups
            for nic in sriov.ports(node.profile, role) for vf, guid in enumerate(sriov.vf_guids(i, nic))}


def check_vf_guids(topology: Topology) -> Iterator[Finding]:
    """No VF GUID equals a node or port GUID of its fabric's own switches and HCAs (simulated or from the site
    inventory): the subnet manager would find two ports with one GUID."""
    for ft in topology.fabrics:
        planned = vf_guids(ft.fabric, topology.cluster.nodes)
        if not planned:
            continue
        physical = {guid: node.description for node in ib_fabric(topology, ft).nodes
                    for guid in (node.node_guid, node.port_guid) if guid is not None}
        clashes = sorted(physical.keys() & planned.keys())
        if clashes:
            node, pf, vf = planned[clashes[0]]
            yield Finding(Severity.ERROR, "sriov-vf-guid", f"fabrics.{ft.fabric.name}.sriov.guid_base",
                          f"{len(clashes)} VF GUID(s) equal GUIDs of the fabric's switches and HCAs, first "
                          f"{clashes[0]:#018x}: {node} {pf} VF {vf} and {physical[clashes[0]]}",
                          "move guid_base out of the range of the fabric's own GUIDs",
                          ft.fabric.sriov.position if ft.fabric.sriov else None)
