"""Lustre's side of the cross-layer check: over a lossless RoCE fabric, every LNet local NI's o2iblnd ToS in
lnet.conf carries the fabric's lossless DSCP (else Lustre's RDMA traffic rides a lossy class); and each Lustre
server's LNet interfaces, as its netplan configures them, carry exactly the NIDs the clients mount and the targets
are formatted with (LNet takes a NI's NID from its interface's IPv4 address), each with its own source rule (a
multi-homed node's replies leave by the port of their address)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from fabricgen.core.artifacts import Artifact
from fabricgen.core.errors import Finding
from fabricgen.core.yamldata import safe_load as safe_yaml
from fabricgen.features.feature import fabric_error, mismatch
from fabricgen.model.cluster import Fabric
from fabricgen.model.topology import Topology


def _lnet(path: str, content: bytes, networks: Mapping[str, Fabric]) -> Iterator[Finding]:
    """Lustre over a lossless RoCE fabric: every local NI's o2iblnd ToS carries the fabric's lossless DSCP and
ECT(0)."""
    for net in safe_yaml(content).get("net") or []:
        fabric = networks.get(net.get("net type", ""))
        if fabric is None or fabric.qos is None:
            continue
        dscp = fabric.qos.lossless.dscp
        for ni in net.get("local NI(s)") or []:
            tos = (ni.get("lnd tunables") or {}).get("tos")
            if not isinstance(tos, int) or tos >> 2 != dscp or tos & 3 != 0b10:
                interface = (ni.get("interfaces") or {}).get(0, "?")
                yield mismatch(f"{path} {net['net type']} {interface}",
                               f"LNet ToS {tos} (DSCP {tos >> 2 if isinstance(tos, int) else None}) but fabric "
                               f"{fabric.name}'s lossless DSCP is {dscp} with ECT(0)", fabric,
                               "Lustre RDMA traffic would ride a lossy class, or be dropped by WRED instead of "
                               "ECN-marked (ToS = DSCP << 2 | ECT(0), as NCCL_IB_TC)")


def _netplan_ports(node: str, artifacts: Mapping[str, Artifact]) -> dict[str, Mapping[str, Any]]:
    """The interfaces the node's netplan files declare (ethernets and bonds), by name."""
    ports: dict[str, Mapping[str, Any]] = {}
    for path in sorted(artifacts):
        if path.startswith(f"hosts/{node}/netplan-") and path.endswith(".yaml"):
            network = (safe_yaml(artifacts[path].content) or {}).get("network") or {}
            for kind in ("ethernets", "bonds"):
                ports.update(network.get(kind) or {})
    return ports


def _servers(topology: Topology, artifacts: Mapping[str, Artifact]) -> Iterator[Finding]:
    """Each server's LNet NIs (its profile's lnet.conf) against its netplan: the addresses are its planned NIDs."""
    fabrics = {ft.fabric.name: ft.fabric for ft in topology.fabrics}
    nodes = {n.name: n for n in topology.cluster.nodes}
    for fs in topology.cluster.lustre:
        for server, nids in fs.server_nids.items():
            conf = artifacts.get(f"hosts/{nodes[server].profile.name}/lustre/lnet.conf")
            ports = _netplan_ports(server, artifacts)
            if conf is None or not ports:
                continue  # no netplan (IPoIB is networkd's): nothing to read the addresses from
            nets = [n for n in safe_yaml(conf.content).get("net") or [] if n.get("net type") == fs.lnet.network]
            have = []
            for ni in nets[0].get("local NI(s)") if nets else ():
                port = ports.get((ni.get("interfaces") or {}).get(0, ""), {})
                addresses = [str(a).split("/", 1)[0] for a in port.get("addresses") or []]
                rules = {str(r.get("from")) for r in port.get("routing-policy") or []}
                have += [f"{ip}@{fs.lnet.network}" for ip in addresses[:1]]
                if addresses and addresses[0] not in rules:
                    yield fabric_error(fabrics[fs.fabric], "lustre-server-lnet", f"{server} {ni['interfaces'][0]}",
                                       f"LNet interface {ni['interfaces'][0]} ({addresses[0]}) has no source rule of "
                                       "its own", "a multi-homed LNet node needs a routing table per port, chosen "
                                                  "by source address")
            if sorted(have) != sorted(nids):
                yield fabric_error(fabrics[fs.fabric], "lustre-server-lnet", f"{server} {fs.lnet.network}",
                                   f"LNet would give {server} the NIDs {', '.join(have) or 'none'} (lnet.conf over "
                                   f"its netplan), but clients mount and targets are formatted with "
                                   f"{', '.join(nids)}", "the server's LNet interfaces must be its planned ports")


_CONFIGURE = re.compile(r"^configure '([^']+)'", re.MULTILINE)


def _configured(path: str, content: bytes, artifacts: Mapping[str, Artifact], networks: Mapping[str, Fabric]
                ) -> Iterator[Finding]:
    """Every LNet NI on a RoCE fabric is a port its profile's roce-qos.sh configures: the lossless class and the
    multi-homed node's ARP and link-down sysctls (arp_ignore=1, arp_announce=2, ignore_routes_with_linkdown=1)."""
    script = artifacts.get(path.replace("/lustre/lnet.conf", "/roce-qos.sh"))
    if script is None:
        return
    ports = set(_CONFIGURE.findall(script.content.decode()))
    for net in safe_yaml(content).get("net") or []:
        fabric = networks.get(net.get("net type", ""))
        if fabric is None or fabric.qos is None:
            continue
        for ni in net.get("local NI(s)") or []:
            interface = (ni.get("interfaces") or {}).get(0, "?")
            if interface not in ports:
                yield mismatch(f"{path} {net['net type']} {interface}",
                               f"LNet interface {interface} is not a port roce-qos.sh configures", fabric,
                               "without it the port has no lossless class and no per-port ARP sysctls: a "
                               "multi-homed node answers ARP for one port's address on the other")


def readback(topology: Topology, artifacts: Mapping[str, Artifact]) -> Iterator[Finding]:
    """Every lnet.conf against the lossless class of the fabric each of its networks runs on; every Lustre server's
    LNet NIDs against the plan's."""
    fabrics = {ft.fabric.name: ft.fabric for ft in topology.fabrics}
    networks = {fs.lnet.network: fabrics[fs.fabric] for fs in topology.cluster.lustre}
    for path in sorted(artifacts):
        if path.startswith("hosts/") and path.rpartition("/")[2] == "lnet.conf":
            yield from _lnet(path, artifacts[path].content, networks)
            yield from _configured(path, artifacts[path].content, artifacts, networks)
    yield from _servers(topology, artifacts)
