"""GDS's side of the cross-layer check: each node's cufile.json read back against the Lustre client files of its
profile as LNet and mount read them. Every address cuFile may pick must be a local NI of lnet.conf on the file
system's network (an address LNet does not serve moves no data), and every mount_table entry a mount point of the
profile's fstab (cuFile matches mounts by path)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping

from fabricgen.core.artifacts import Artifact
from fabricgen.core.errors import Finding, Severity
from fabricgen.core.yamldata import safe_load as safe_yaml
from fabricgen.model.gds import GdsProfile
from fabricgen.model.topology import Topology


def _error(gds: GdsProfile, subject: str, message: str, hint: str) -> Finding:
    return Finding(Severity.ERROR, "gds-lustre", subject, message, hint, gds.position)


def _lnet_nis(content: bytes) -> set[tuple[str, str]]:
    """(network, interface) of every local NI of an lnet.conf."""
    return {(net.get("net type", ""), interface)
            for net in safe_yaml(content).get("net") or []
            for ni in net.get("local NI(s)") or []
            for interface in (ni.get("interfaces") or {}).values()}


def _profile(topology: Topology, gds: GdsProfile, artifacts: Mapping[str, Artifact]) -> Iterator[Finding]:
    base = f"hosts/{gds.profile}"
    filesystems = [fs for fs in topology.cluster.lustre if fs.name in gds.filesystems]
    lnet, fstab = artifacts.get(f"{base}/lustre/lnet.conf"), artifacts.get(f"{base}/lustre/fstab")
    if lnet is None or fstab is None:
        return  # the lustre target was not rendered: nothing to hold cufile.json against
    nis = _lnet_nis(lnet.content)
    mounts = {line.split()[1] for line in fstab.content.decode().splitlines() if line and not line.startswith("#")}
    networks = {fs.lnet.network for fs in filesystems}
    netdevs = {}  # (node, address) -> the netdev the plan gives it
    for fs in filesystems:
        fabric = next(f.fabric for f in topology.fabrics if f.fabric.name == fs.fabric)
        by_port = {nic.index + 1: nic.netdev for nic in topology.cluster.profiles[gds.profile].nics(
            fabric.role.nic_role)}
        for subnet in topology.addresses[fs.fabric].hosts:
            netdevs.update({(node, ip): (fs.lnet.network, by_port.get(port, "")) for node, port, ip in subnet.hosts})
    for path in sorted(p for p in artifacts if p.startswith(f"{base}/gds/cufile/")):
        node = path.rpartition("/")[2].removesuffix(".json")
        lustre = json.loads(artifacts[path].content)["fs"]["lustre"]
        for ip in lustre.get("rdma_dev_addr_list", []):
            network, netdev = netdevs.get((node, ip), ("", ""))
            if (network, netdev) not in nis or network not in networks:
                yield _error(gds, f"{path} {ip}", f"cuFile may use {ip} of {node}, but lnet.conf of {gds.profile} "
                                                  f"runs no LNet NI on it ({netdev or 'no port of the plan'})",
                             "cuFile's Lustre addresses must be the client's LNet NIs (lnetctl net show)")
        for mountpoint in lustre.get("mount_table", {}):
            if mountpoint not in mounts:
                yield _error(gds, f"{path} {mountpoint}", f"mount_table names {mountpoint}, which the fstab of "
                                                          f"{gds.profile} does not mount",
                             "cuFile matches mount_table entries by mount point")


def readback(topology: Topology, artifacts: Mapping[str, Artifact]) -> Iterator[Finding]:
    """Every GDS profile's cufile.json files against its lnet.conf and fstab."""
    for gds in topology.cluster.gds:
        if gds.filesystems:
            yield from _profile(topology, gds, artifacts)
