"""Target ``infiniband``: per InfiniBand fabric, the subnet manager's configuration and the expected topology.

``flavor: opensm`` (upstream OpenSM, run by systemd on each SM host): opensm.conf starts from upstream OpenSM's own
defaults (opensm-3.3.23.conf beside this module, `opensm -c`) and overrides only what fabricgen decides, each
override preceded by a comment saying why; partitions.conf, qos-policy.conf, the ftree GUID files and the node name
map live in the spec's ``config_dir``; opensm-keys.sh writes the runtime copy with the keys, run by each SM host's
systemd unit opensm-<fabric>.service (the HA pair: one unit per host, each with its priority).

``flavor: ufm`` (NVIDIA UFM Enterprise, which runs its own OpenSM): the files UFM itself reads, named as UFM names
them (UFM user manual, "Appendix - SM Default Files" and "Appendix - Partitioning"): the settings fabricgen decides,
merged into /opt/ufm/files/conf/opensm/opensm.conf; the partitions in /opt/ufm/files/conf/partitions.conf.user_ext,
which UFM merges into the partitions.conf it generates (UFM owns Default); qos-policy.conf, the GUID files and
ib-node-name-map under /opt/ufm/files/conf/opensm/. ufm-install.sh puts them there. No opensm unit: UFM starts its
SM itself.

Keys never appear in any artifact: the install scripts read them on the SM host.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

from fabricgen.core.artifacts import Artifact
from fabricgen.core.templating import render_template
from fabricgen.core.yamldata import safe_load as safe_yaml
from fabricgen.features.infiniband.build import SHARP_OPERATIONAL_VLS
from fabricgen.features.infiniband.sharp import capacity, sharp_am_settings
from fabricgen.features.infiniband.view import (
    IbFabric,
    IbNode,
    am_ucx_ports,
    device_of,
    hca_description,
    ib_fabric,
    routing_engines,
    uses_ftree,
    uses_roots,
)
from fabricgen.model.cluster import FabricType
from fabricgen.model.infiniband import Partition, Qos, SubnetManager
from fabricgen.model.nodes import Nic, Node
from fabricgen.model.topology import NODE_LEAF, FabricTopology, Topology

MTU_CODES = {256: 1, 512: 2, 1024: 3, 2048: 4, 4096: 5}
KEY_FILES = ("sm_key", "sa_key", "m_key")
UFM_CONF = "/opt/ufm/files/conf"  # UFM Enterprise's configuration tree (UFM user manual, SM Default Files)
UFM_SM_DIR = f"{UFM_CONF}/opensm"
SHARP_AM_CFG = "/etc/sharp/sharp_am.cfg"  # where a standalone sharp_am reads its settings (SHARP manual, HPC-X)
SHIELD_MODES = {"off": "0", "no-pfrn": "2"}  # shield_mode values NVIDIA documents; "on" keeps NVIDIA's default
# OpenSM 3.3.23's QoS defaults (include/opensm/osm_base.h, OSM_DEFAULT_QOS_*), which its default file leaves unset
OPENSM_QOS_DEFAULTS = {
    "max_vls": "15",
    "vlarb_high": "0:4,1:0,2:0,3:0,4:0,5:0,6:0,7:0,8:0,9:0,10:0,11:0,12:0,13:0,14:0",
    "vlarb_low": "0:0,1:4,2:4,3:4,4:4,5:4,6:4,7:4,8:4,9:4,10:4,11:4,12:4,13:4,14:4",
    "sl2vl": "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,7",
}


@cache
def _defaults() -> tuple[str, ...]:
    return tuple((Path(__file__).with_name("opensm-3.3.23.conf")).read_text(encoding="utf-8").splitlines())


@cache
def _rate_codes() -> dict[float, int]:
    data = safe_yaml((Path(__file__).with_name("rates.yaml")).read_text(encoding="utf-8"))
    return {float(k): int(v) for k, v in data["rates"].items()}


def _guid(value: int | None) -> str:
    return f"0x{value:016x}" if value is not None else ""


@dataclass(frozen=True)
class _Files:
    """Where the SM host keeps each file: opensm's config_dir, or UFM's own paths."""

    partitions: str
    qos_policy: str
    roots: str
    compute_nodes: str
    io_nodes: str
    node_names: str

    @classmethod
    def of(cls, sm: SubnetManager) -> _Files:
        if sm.flavor == "ufm":
            return cls(f"{UFM_CONF}/partitions.conf.user_ext", f"{UFM_SM_DIR}/qos-policy.conf",
                       f"{UFM_SM_DIR}/root-guids.conf", f"{UFM_SM_DIR}/cn-guids.conf", f"{UFM_SM_DIR}/io-guids.conf",
                       f"{UFM_SM_DIR}/ib-node-name-map")
        d = sm.config_dir
        return cls(f"{d}/partitions.conf", f"{d}/qos-policy.conf", f"{d}/root-guids.conf", f"{d}/cn-guids.conf",
                   f"{d}/io-guids.conf", f"{d}/node-name-map")


def _qos_origin(sm_qos: Qos, setting: str, value: str) -> str:
    """Why a QoS table has its value: the spec's, or fabricgen's default, said against OpenSM's own."""
    if setting in sm_qos.stated:
        return "from the spec"
    opensm = OPENSM_QOS_DEFAULTS[setting]
    return "fabricgen default (= OpenSM's)" if value == opensm else f"fabricgen default (OpenSM's: {opensm})"


def _overrides(sm: SubnetManager, ib: IbFabric, ft: FabricTopology) -> dict[str, tuple[str, str]]:
    """setting -> (value, why) for every opensm.conf line fabricgen decides."""
    files = _Files.of(sm)
    fabric, tiers, vfs = ft.fabric.name, ft.tiers, ft.fabric.sriov is not None
    chosen = routing_engines(sm, tiers, ft.fabric.speed.name)
    engines = [*chosen, *([] if sm.fallback_to_minhop else ["no_fallback"])]
    origin = "engines from the spec" if sm.engines else f"default for a {tiers}-tier fabric"
    fallback = (", each next engine routing when the one before fails" if len(chosen) > 1 else "") + (
        " (updn: credit-loop free on any topology, from the same roots)"
        if any(e in ("updn", "ar_updn") for e in chosen[1:]) else "")
    out = {
        "routing_engine": (",".join(engines), origin + fallback + (
            "; no_fallback: when every engine fails routing stops instead of a silent fall back to minhop"
            if not sm.fallback_to_minhop else "; falls back to minhop if every engine fails")),
        "lmc": (str(sm.lmc), "from the spec" + ("; ftree requires 0" if uses_ftree(chosen) else "")),
        "sweep_interval": (str(sm.sweep_interval), "seconds between light sweeps, from the spec"),
        "consolidate_ipv6_snm_req": ("TRUE", "one multicast group (one MLID) for every IPv6 solicited-node "
                                             "address of a partition, not one per IPoIB port and VF"),
    }
    if sm.flavor == "opensm":  # UFM keeps its own partitions.conf (merging the user_ext file) and its own log
        out["partition_config_file"] = (files.partitions, "partitions generated by fabricgen")
        out["log_file"] = (f"/var/log/opensm-{fabric}.log", "one log per fabric")
    else:
        top = max(priority for _, priority in sm.hosts) if sm.hosts else 0
        out["sm_priority"] = (str(top), "UFM's SM fails over within the HA pair with this config: it must win against "
                                        "any other SM on the fabric (e.g. a switch's)")
    if not ib.missing_guids:
        out["node_name_map_name"] = (files.node_names, "GUID -> planned name, for logs and infiniband-diags")
        if uses_roots(chosen):
            out["root_guid_file"] = (files.roots, f"roots of ftree and updn: the {len(ib.roots)} "
                                                  f"{ib.top_tier.value} switches of the top tier")
        if uses_ftree(chosen):
            out["cn_guid_file"] = (files.compute_nodes, f"ftree compute nodes: {len(ib.compute_hcas)} HCA ports of "
                                                        "compute nodes")
            if ib.io_hcas:
                out["io_guid_file"] = (files.io_nodes, f"ftree I/O nodes: {len(ib.io_hcas)} HCA ports of "
                                                       f"{ib.io_roles()}; ftree routes them after the compute "
                                                       "nodes, as it does every HCA absent from cn_guid_file "
                                                       "(osm_ucast_ftree.c), so with max_reverse_hops 0 this file "
                                                       "changes no route: it names the storage servers")
    if sm.qos is not None:
        q = sm.qos
        cut = ("; cut to SHARP's 2 operational VLs (max_op_vls 2): OpenSM masks every VL of these tables to VL & 1 "
               "(osm_qos.c), which would fold the entries of VLs 2-14 onto VLs 0-1" if sm.sharp is not None else "")
        out |= {
            "qos": ("TRUE", "QoS levels from the spec"),
            "qos_policy_file": (files.qos_policy, "SL per partition/ULP, generated by fabricgen"),
            "qos_max_vls": (str(q.max_vls), _qos_origin(q, "max_vls", str(q.max_vls)) + cut),
            "qos_high_limit": (str(q.high_limit), "high-priority VL arbitration limit (units of 4 KiB): 0 lets one "
                                                  "packet through before the low-priority VLs get a turn, 255 would "
                                                  "let the high table starve them"),
            "qos_vlarb_high": (q.vlarb_high, _qos_origin(q, "vlarb_high", q.vlarb_high) + cut),
            "qos_vlarb_low": (q.vlarb_low, _qos_origin(q, "vlarb_low", q.vlarb_low) + cut),
            "qos_sl2vl": (q.sl2vl, _qos_origin(q, "sl2vl", q.sl2vl) + cut),
        }
    for name, secret in sm.keys:
        where = f"${secret.env}" if secret.env else secret.file
        installer = "opensm-keys.sh" if sm.flavor == "opensm" else "ufm-install.sh"
        out[name] = (("0x0000000000000000" if name == "m_key" else "0x0000000000000001"),
                     f"placeholder: {installer} substitutes the real key from {where} on the SM host")
    if sm.m_key_protection_level:
        out["m_key_protection_level"] = (str(sm.m_key_protection_level), "M_Key ProtectBits: 2 = neither queries "
                                         "nor changes without the M_Key (0 would hand the key to any query)"
                                         if sm.m_key_protection_level >= 2 else "M_Key ProtectBits from the spec")
        out["m_key_lease_period"] = (str(sm.m_key_lease_period), "seconds after a bad M_Key before a port drops "
                                     "its protection, so a fabric whose SM lost the key can be recovered")
        if sm.nvidia:  # NVIDIA's OpenSM (UFM's or 5.x standalone); upstream 3.3.23 has one subnet-wide m_key
            out["m_key_per_port"] = ("TRUE", "a unique M_Key per HCA port and switch port 0, kept in the SM's "
                                             "guid2mkey file (UFM's SM default properties: one subnet-wide m_key is "
                                             "not recommended, a leaked key would unlock every port)")
            out["m_key_lookup"] = ("TRUE", "a new master looks up the per-port M_Keys of ports it does not know "
                                           "(UFM's default since 6.x; FALSE in older releases)")
    ar = sm.adaptive_routing
    if ar is not None and ar.shield != "on":
        out["shield_mode"] = (SHIELD_MODES[ar.shield], {
            "off": "SHIELD off: a switch no longer routes around a failed link itself, the SM's next sweep does "
                   "(NVIDIA's InfiniBand cluster bring-up procedure: 0 disables SHIELD)",
            "no-pfrn": "SHIELD without PFRN: switches recover from their own failed links but send no notification "
                       "to peers (NVIDIA OpenSM 5.11 release notes: \"to disable PFRN, set shield_mode value to 2\")"}[
            ar.shield])
    if ar is not None and ar.service_levels is not None:
        mask = sum(1 << sl for sl in ar.service_levels)
        out["ar_sl_mask"] = (f"0x{mask:04x}", f"adaptive routing on SLs {', '.join(map(str, ar.service_levels))} "
                                              "only (NVIDIA's default 0xffff: all), the compute partitions' among them")
    if sm.sharp is not None:
        out["max_op_vls"] = (str(SHARP_OPERATIONAL_VLS),
                             "SHARP streaming aggregation: NVIDIA advises 2 operational VLs in the subnet (SHARP "
                             "deployment guide, Reducing the Number of Operational VLs in the Subnet in OpenSM); the "
                             "compute and IPoIB SLs map to VLs 0-1 (checked)")
    if sm.nvidia and vfs:
        out["virt_enabled"] = ("2", "the fabric's HCAs carry SR-IOV VFs; 2 = virtualization on, each VF a virtual "
                                    "port with its own LID (NVIDIA's OpenSM; upstream 3.3.23 has no such setting)")
    return out


def _opensm_conf(sm: SubnetManager, ib: IbFabric, ft: FabricTopology, source: str) -> bytes:
    """Upstream OpenSM's complete default file with fabricgen's settings in place."""
    overrides = _overrides(sm, ib, ft)
    fabric = ft.fabric.name
    lines = [f"# OpenSM configuration of fabric {fabric}. Generated by fabricgen from {source}; do not edit.",
             "# Every setting fabricgen decides is preceded by a '# fabricgen:' line saying why; all others are",
             "# upstream OpenSM 3.3.23 defaults.", ""]
    seen = set()
    for line in _defaults()[2:]:
        key = line.split(" ", 1)[0] if line and not line.startswith("#") else ""
        if key in overrides:
            value, why = overrides[key]
            lines += [f"# fabricgen: {why}", f"{key} {value}"]
            seen.add(key)
        else:
            lines.append(line)
    missing = [key for key in overrides if key not in seen]
    if missing and not sm.nvidia:
        raise ValueError(f"opensm defaults lack settings {missing}")
    if missing:  # NVIDIA's OpenSM 5.x reads settings upstream's option table lacks (adaptive routing, SHIELD)
        lines += ["", f"# NVIDIA OpenSM {sm.opensm_version} settings, absent from upstream 3.3.23's option table"]
        for key in missing:
            value, why = overrides[key]
            lines += [f"# fabricgen: {why}", f"{key} {value}"]
    return ("\n".join(lines) + "\n").encode()


def _ufm_settings(sm: SubnetManager, ib: IbFabric, ft: FabricTopology, source: str) -> bytes:
    """Only the settings fabricgen decides, for ufm-install.sh to set in UFM's own opensm.conf (which carries
    NVIDIA's OpenSM defaults, so it is edited, never replaced)."""
    fabric = ft.fabric.name
    lines = [f"# OpenSM settings of fabric {fabric} for UFM's SM. Generated by fabricgen from {source}; do not edit.",
             f"# ufm-install.sh sets each of them in {UFM_SM_DIR}/opensm.conf and leaves every other line as UFM",
             "# wrote it."]
    for key, (value, why) in _overrides(sm, ib, ft).items():
        lines += ["", f"# fabricgen: {why}", f"{key} {value}"]
    return ("\n".join(lines) + "\n").encode()


def _sharp_am(sm: SubnetManager, topology: Topology, ft: FabricTopology, source: str, ufm: bool) -> bytes:
    """sharp_am's settings fabricgen decides: under UFM for ufm-install.sh to set in UFM's own sharp_am.cfg (which
    carries UFM's defaults); standalone, the whole /etc/sharp/sharp_am.cfg, sharp_am taking its factory defaults for
    every other parameter."""
    fabric = ft.fabric.name
    if ufm:
        lines = [f"# sharp_am settings of fabric {fabric} for UFM's aggregation manager. Generated by fabricgen from "
                 f"{source}; do not edit.", f"# ufm-install.sh sets each of them in {UFM_CONF}/sharp/sharp_am.cfg and "
                                             "leaves every other line as UFM wrote it."]
    else:
        lines = [f"# sharp_am configuration of fabric {fabric}. Generated by fabricgen from {source}; do not edit.",
                 f"# Install as {SHARP_AM_CFG} on the SM hosts (NVIDIA's OpenSM master runs sharp_am beside it:",
                 "# $HPCX_SHARP_DIR/sbin/sharp_daemons_setup.sh -s -d sharp_am); every parameter not set here keeps",
                 "# sharp_am's factory default (sharp_am -c FILE writes them all)."]
    limit = capacity(ft)
    if limit:
        lines.append(f"# {limit}")
    am_ports = am_ucx_ports(sm, ib_fabric(topology, ft))
    for key, (value, why) in sharp_am_settings(sm, ft, ufm, device_of(am_ports[0]) if am_ports else "").items():
        lines += ["", f"# fabricgen: {why}", f"{key} {value}"]
    return ("\n".join(lines) + "\n").encode()


@dataclass(frozen=True)
class _NetNode:
    guid: int | None
    guid_line: str
    header: str
    ports: tuple[str, ...]


def _net_id(node: IbNode) -> str:
    return ("S-" if node.kind == "switch" else "H-") + node.description.replace(" ", "-")


def _topology_net(ib: IbFabric, width_speed: str) -> list[_NetNode]:
    by_desc = {n.description: n for n in ib.nodes}
    ports: dict[str, list[tuple[int, str]]] = {n.description: [] for n in ib.nodes}
    for link in ib.links:
        a, z = by_desc[link.a], by_desc[link.z]
        ports[link.a].append((link.a_port, f'[{link.a_port}]\t"{_net_id(z)}"[{link.z_port}]\t\t# "{z.description}" '
                                           f"lid 0 {width_speed}"))
        ports[link.z].append((link.z_port, f'[{link.z_port}]\t"{_net_id(a)}"[{link.a_port}]\t\t# "{a.description}" '
                                           f"lid 0 {width_speed}"))
    out = []
    for node in ib.nodes:
        kind = "Switch" if node.kind == "switch" else "Ca"
        extra = " base port 0 lid 0 lmc 0" if node.kind == "switch" else ""
        guid_line = f"{'switchguid' if node.kind == 'switch' else 'caguid'}={_guid(node.node_guid)}"
        out.append(_NetNode(node.node_guid, guid_line, f'{kind}\t{node.ports} "{_net_id(node)}"\t\t# '
                                                       f'"{node.description}"{extra}',
                            tuple(text for _, text in sorted(ports[node.description]))))
    return out


@dataclass(frozen=True)
class _PartitionText:
    comment: str
    head: str
    members: tuple[str, ...]
    incomplete: str
    management: str = ""  # a second definition of the partition for the switches (and the SM) without indx0


def _ports(topology: Topology, ft: FabricTopology) -> list[tuple[Node, int, Nic]]:
    """(node, index of the node in the cluster, NIC) of every HCA port on the fabric, in link order."""
    index = {n.name: i for i, n in enumerate(topology.cluster.nodes)}
    nodes = topology.cluster.nodes
    return [(nodes[index[link.a.device]], index[link.a.device], link.nic) for link in ft.links
            if link.tier == NODE_LEAF and link.nic is not None]


def _members(p: Partition, sm: SubnetManager, topology: Topology, ft: FabricTopology,
             guids: dict[str, int | None]) -> tuple[list[str], int, list[str]]:
    """Port GUIDs of the partition's HCAs, the count of those without a known GUID, and the GUIDs of the VFs whose
    pods use the partition (it is their node port's compute partition: a VF sees it at its own P_Key index 0)."""
    hcas, vfs, unknown = [], [], 0
    role = ft.fabric.role.nic_role
    sriov = ft.fabric.sriov
    for node, node_index, nic in _ports(topology, ft):
        if p.has_member(node, nic):
            guid = guids.get(hca_description(node.name, nic.dev))
            if guid is None:
                unknown += 1
            else:
                hcas.append(f"{_guid(guid)}={p.membership_of(node, nic)}")
        if sriov is not None and node.group in sriov.groups and nic in sriov.ports(node.profile, role) \
                and sm.compute_partition(node, nic) == p:
            vfs += [f"{_guid(g)}=full" for g in sriov.vf_guids(node_index, nic)]
    return hcas, unknown, vfs


def _flags(p: Partition, sm: SubnetManager, index0: bool = True) -> str:
    flags = ", indx0" if p.index0 and index0 else ""
    if p.ipoib:
        flags += f", ipoib, mtu={MTU_CODES[p.ipoib.mtu]}"
        if p.ipoib.rate_gbps is not None:
            flags += f", rate={_rate_codes()[float(p.ipoib.rate_gbps)]}"
    if sm.qos is not None:  # without QoS OpenSM forces SL 0 (osm_prtn_config.c); with it, paths take this SL
        flags += f", sl={p.sl}"
    return flags


def _uses(p: Partition, sm: SubnetManager) -> str:
    roles = [role for role, names in (("compute traffic (NCCL, UCX) at P_Key index 0", sm.compute),
                                      ("IPoIB", sm.ipoib)) if p.name in names]
    return f"; carries {' and '.join(roles)}" if roles else ""


def _partition_text(p: Partition, sm: SubnetManager, topology: Topology, ft: FabricTopology,
                    guids: dict[str, int | None], sm_ports: set[str], am_ports: tuple[IbNode, ...]
                    ) -> _PartitionText:
    """One partition's definition. An ``indx0`` partition would also take P_Key index 0 of every switch port 0 and
    of the SM's port (osm_prtn_config.c passes indx0 for ALL_SWITCHES and SELF), so those are listed in a second
    definition of the same partition without it (osm_prtn.c then clears their indx0): they keep Default (UFM's
    management partition) at index 0. SELF stays in the first only when an SM host's own port is a member. sharp_am's
    UCX ports (``am_ports``, see view.am_ucx_ports) are full members in SHARP's indx0 definition: the jobs' HCAs hold
    SHARP's partition at index 0, and UCX connects two ports only on one P_Key (UCX ib_iface.c,
    uct_ib_iface_dev_addr_is_reachable: "local pkey ... differs from remote pkey")."""
    head = f"{p.name}=0x{p.pkey:04x}{_flags(p, sm)}, defmember={p.membership}"
    hcas, unknown, vfs = _members(p, sm, topology, ft, guids)
    sm_member = any(p.has_member(node, nic) and hca_description(node.name, nic.dev) in sm_ports
                    for node, _, nic in _ports(topology, ft))
    am = am_ports if sm.sharp is not None and sm.sharp.partition == p.name and p.index0 else ()
    listed = {m.split("=")[0] for m in hcas}
    hcas_am = [f"{_guid(n.port_guid)}=full" for n in am if n.port_guid is not None and _guid(n.port_guid) not in listed]
    inline = ("ALL_SWITCHES=full", "SELF=full") if not p.index0 else ("SELF=full",) if sm_member else ()
    second = [m for m in ("ALL_SWITCHES=full", "SELF=full") if m not in inline]
    management = (f"{p.name}=0x{p.pkey:04x}{_flags(p, sm, index0=False)}, defmember={p.membership} : "
                  f"{', '.join(second)} ;") if second else ""
    about = (f" and the {len(vfs)} VFs whose pods use it" if vfs else "") + (
        f", SL {p.sl}" if sm.qos is not None else "") + _uses(p, sm) + (
        f"; sharp_am's UCX ports ({', '.join(n.description for n in am)}) hold it at index 0, as the jobs' HCAs do, "
        "while the SM's port keeps 0x7fff there" if am else "")
    if p.members_all:
        added = " (added by fabricgen: the spec names no Default)" if p.implicit else ""
        return _PartitionText(f"{p.name}{added}: every HCA ({p.membership}){about}", head,
                              (f"ALL_CAS={p.membership}", *vfs, *inline), "", management)
    limited = p.limited
    what = ", ".join(filter(None, [f"groups {', '.join(p.groups)}" if p.groups else "",
                                   f"nodes {', '.join(p.nodes)}" if p.nodes else "",
                                   f"rails {', '.join(map(str, p.rails))}" if p.rails is not None else ""]))
    if limited is not None:
        what += "; limited: " + ", ".join(filter(None, [
            f"groups {', '.join(limited.groups)}" if limited.groups else "",
            f"nodes {', '.join(limited.nodes)}" if limited.nodes else "",
            f"rails {', '.join(map(str, limited.rails))}" if limited.rails is not None else ""]))
    incomplete = f"{unknown} member port GUIDs unknown (subnet_manager.guids)" if unknown else ""
    count = f"{len(hcas) + unknown} HCA ports, {p.membership}"
    if limited is not None:
        count = f"{sum(1 for h in hcas if h.endswith('=limited'))} of {len(hcas) + unknown} HCA ports limited"
    return _PartitionText(f"{p.name}: {what} ({count}){about}", head,
                          (*hcas, *hcas_am, *vfs, *inline), incomplete, management)


def _sm_ports(sm: SubnetManager, ib: IbFabric) -> dict[str, IbNode]:
    """SM host -> the HCA port its SM binds to: the host's first HCA port on the fabric."""
    ports: dict[str, IbNode] = {}
    for n in ib.hcas:
        ports.setdefault(n.description.split(" ")[0], n)
    return {host: ports[host] for host, _ in sm.hosts if host in ports}


def _partitions_conf(sm: SubnetManager, topology: Topology, ft: FabricTopology, ib: IbFabric, source: str) -> bytes:
    guids = {n.description: n.port_guid for n in ib.hcas}
    ufm = sm.flavor == "ufm"
    sm_ports = {n.description for n in _sm_ports(sm, ib).values()}
    am_ports = am_ucx_ports(sm, ib)
    texts = [_partition_text(p, sm, topology, ft, guids, sm_ports, am_ports) for p in sm.partitions
             if not (ufm and p.is_default)]
    return render_template("infiniband/partitions.conf.j2", fabric=ft.fabric.name, source=source, partitions=texts,
                           ufm=ufm)


def _qos_rules(sm: SubnetManager) -> list[str]:
    assert sm.qos is not None
    pkeys = {p.name: p.pkey for p in sm.partitions}
    rules = []
    for level in sm.qos.levels:
        if level.partition is not None:
            rules.append(f"any, pkey 0x{pkeys[level.partition]:04x} : {level.sl}")
        elif level.ulp in (None, "default"):
            rules.append(f"default : {level.sl}")
        else:
            rules.append(f"{level.ulp} : {level.sl}")
    return rules


def _guid_list(nodes: tuple[IbNode, ...], port: bool, title: str) -> bytes:
    lines = [f"# {title}. Generated by fabricgen; do not edit."]
    lines += [_guid(n.port_guid if port else n.node_guid) for n in nodes if n.node_guid is not None]
    missing = [n.description for n in nodes if n.node_guid is None]
    if missing:
        lines.insert(1, f"# INCOMPLETE: GUIDs of {len(missing)} devices are unknown (subnet_manager.guids), "
                        f"e.g. {missing[0]}")
    return ("\n".join(lines) + "\n").encode()


def _keys(sm: SubnetManager) -> list[dict[str, str]]:
    return [{"name": k, "env": s.env, "file": s.file} for k, s in sm.keys]


def _fabric_artifacts(topology: Topology, ft: FabricTopology, source: str) -> list[Artifact]:
    sm = ft.fabric.subnet_manager
    assert sm is not None, "build gives every InfiniBand fabric a subnet manager"
    ib = ib_fabric(topology, ft)
    name = ft.fabric.name
    base = f"infiniband/{name}"
    width_speed = ft.fabric.speed.ibsim or f"4x{ft.fabric.speed.name}"
    guids = {"simulated": "simulated (deterministic, for labs and simulators)",
             "inventory": "from the site inventory", "unknown": "unknown"}[ib.guids]
    net = render_template("infiniband/topology.net.j2", fabric=name, source=source, guids=guids,
                          with_guids=not ib.missing_guids, nodes=_topology_net(ib, width_speed))
    names = ("".join(f'{_guid(n.node_guid)} "{n.description}"\n' for n in ib.nodes if n.node_guid is not None)
             or "# no GUIDs known\n").encode()
    files = {
        "topology.net": net,
        "root-guids.conf": _guid_list(ib.roots, False, f"ftree roots of {name}: node GUIDs of the "
                                                       f"{ib.top_tier.value} switches"),
        "cn-guids.conf": _guid_list(ib.compute_hcas, True, f"ftree compute nodes of {name}: HCA port GUIDs of the "
                                                           "compute nodes"),
    }
    if ib.io_hcas:
        files["io-guids.conf"] = _guid_list(ib.io_hcas, True, f"ftree I/O nodes of {name}: HCA port GUIDs of the "
                                                              f"{ib.io_roles()}")
    if sm.qos is not None:
        files["qos-policy.conf"] = render_template("infiniband/qos-policy.conf.j2", fabric=name, source=source,
                                                   rules=_qos_rules(sm))
    partitions = _partitions_conf(sm, topology, ft, ib, source)
    if sm.flavor == "ufm":
        files |= {"opensm-settings.conf": _ufm_settings(sm, ib, ft, source),
                  "partitions.conf.user_ext": partitions, "ib-node-name-map": names}
        if sm.sharp is not None:
            files["sharp_am-settings.conf"] = _sharp_am(sm, topology, ft, source, ufm=True)
        installed = sorted(f for f in files if f not in ("topology.net", "opensm-settings.conf",
                                                          "partitions.conf.user_ext", "sharp_am-settings.conf"))
        artifacts = [Artifact(f"{base}/{f}", content) for f, content in sorted(files.items())]
        artifacts.append(Artifact(f"{base}/ufm-install.sh", render_template(
            "infiniband/ufm-install.sh.j2", fabric=name, source=source, sm_dir=UFM_SM_DIR, conf_dir=UFM_CONF,
            files=installed, keys=_keys(sm), hosts=[h for h, _ in sm.hosts], sharp=sm.sharp is not None), 0o755))
        return artifacts
    files |= {"opensm.conf": _opensm_conf(sm, ib, ft, source), "partitions.conf": partitions,
              "node-name-map": names}
    if sm.sharp is not None:
        files["sharp_am.cfg"] = _sharp_am(sm, topology, ft, source, ufm=False)
    artifacts = [Artifact(f"{base}/{f}", content) for f, content in sorted(files.items())]
    artifacts.append(Artifact(f"{base}/opensm-keys.sh", render_template(
        "infiniband/opensm-keys.sh.j2", fabric=name, config_dir=sm.config_dir, keys=_keys(sm)), 0o755))
    ports = _sm_ports(sm, ib)
    unit = f"opensm-{name}.service"
    for host, priority in sm.hosts:
        port = ports.get(host)
        artifacts.append(Artifact(f"{base}/hosts/{host}/{unit}", render_template(
            "infiniband/opensm.service.j2", host=host, fabric=name, priority=priority, unit=unit,
            config_dir=sm.config_dir, port_guid=_guid(port.port_guid if port else None),
            peers=[h for h, _ in sm.hosts if h != host])))
    return artifacts


def render(topology: Topology) -> list[Artifact]:
    source = topology.cluster.source
    return [a for ft in topology.fabrics if ft.fabric.type is FabricType.INFINIBAND
            for a in _fabric_artifacts(topology, ft, source)]
