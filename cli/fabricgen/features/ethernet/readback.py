"""The RoCE fabrics' side of the cross-layer check, over the files as rendered: what the hosts mark (roce-qos.sh)
and what every switch does with it (its NOS's read-back of its configuration artifact) must agree with the
fabric's lossless class; hosts' MTU within the switches'."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping

from fabricgen.core.artifacts import Artifact
from fabricgen.core.errors import Finding
from fabricgen.features.ethernet.nos import systems
from fabricgen.features.feature import mismatch
from fabricgen.model.cluster import Fabric
from fabricgen.model.topology import Topology

_CONFIGURE = re.compile(r"^configure '([^']+)' '(\d+)' '(\d+)' '([01,]+)' '(\d+)' '(\d+)' '(\d+)' '([^']*)' '(\d+)' "
                        r"'(\d+)'$")
_PORT_FABRIC = re.compile(r"^#   (\S+) .*, fabric (.+)$")


def host_port_settings(content: bytes) -> Iterator[tuple[str, str, dict[str, int | str]]]:
    """(netdev, fabric, settings) for every port roce-qos.sh configures, read from its configure lines."""
    text = content.decode()
    fabrics = {m.group(1): m.group(2) for m in map(_PORT_FABRIC.match, text.splitlines()) if m}
    for m in filter(None, map(_CONFIGURE.match, text.splitlines())):
        netdev, dscp, prio, pfc, cnp_dscp, cnp_prio, mtu, dev, _, tos = m.groups()
        yield netdev, fabrics.get(netdev, ""), {"dscp": int(dscp), "priority": int(prio), "pfc": pfc,
                                                 "cnp_dscp": int(cnp_dscp), "cnp_priority": int(cnp_prio),
                                                 "mtu": int(mtu), "tos": int(tos) if dev else -1}


def _host(path: str, content: bytes, fabrics: Mapping[str, Fabric]) -> Iterator[Finding]:
    for netdev, name, got in host_port_settings(content):
        fabric = fabrics.get(name)
        if fabric is None or fabric.qos is None:
            continue
        q, where = fabric.qos, f"{path} {netdev}"
        expected_pfc = ",".join("1" if p == q.lossless.priority else "0" for p in range(8))
        pairs = (("DSCP", got["dscp"], q.lossless.dscp, "the switches' lossless DSCP"),
                 ("priority", got["priority"], q.lossless.priority, "the switches' PFC priority"),
                 ("PFC bitmap", got["pfc"], expected_pfc, "PFC on the lossless priority only"),
                 ("CNP DSCP", got["cnp_dscp"], q.cnp.dscp, "the switches' strict CNP class"),
                 ("CNP priority", got["cnp_priority"], q.cnp.priority, "the switches' CNP priority"),
                 ("MTU", got["mtu"], fabric.host_mtu, "the fabric's host MTU"),
                 ("rdma_cm ToS", got["tos"], q.nccl_tc if got["tos"] != -1 else -1, "the lossless DSCP << 2 | ECT(0)"))
        for what, host_value, fabric_value, side in pairs:
            if host_value != fabric_value:
                yield mismatch(where, f"host {what} is {host_value}, {side} is {fabric_value}", fabric)
        if int(got["mtu"]) > fabric.mtu:
            yield mismatch(where, f"host MTU {got['mtu']} exceeds the switch port MTU {fabric.mtu}", fabric)


def readback(topology: Topology, artifacts: Mapping[str, Artifact]) -> Iterator[Finding]:
    """Every host port's RoCE settings, then every switch's configuration, in path order."""
    roce = {ft.fabric.name: ft.fabric for ft in topology.fabrics if ft.fabric.qos is not None}
    switches = {sw.name: (ft.fabric, systems()[ft.fabric.nos[sw.tier]]) for ft in topology.fabrics
                if ft.fabric.type.ethernet and ft.fabric.nos for sw in ft.switches}
    for path in sorted(artifacts):
        folder, _, name = path.rpartition("/")
        if name == "roce-qos.sh":
            yield from _host(path, artifacts[path].content, roce)
        elif folder.startswith("switches/") and (switch := folder[len("switches/"):]) in switches:
            fabric, nos = switches[switch]
            if name == nos.data.config_file(switch):
                yield from nos.readback(switch, artifacts[path].content, fabric)
