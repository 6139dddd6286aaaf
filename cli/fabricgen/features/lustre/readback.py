"""Lustre's side of the cross-layer check: over a lossless RoCE fabric, every LNet local NI's o2iblnd ToS in
lnet.conf carries the fabric's lossless DSCP (else Lustre's RDMA traffic rides a lossy class)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import yaml

from fabricgen.core.artifacts import Artifact
from fabricgen.core.errors import Finding
from fabricgen.features.feature import mismatch
from fabricgen.model.cluster import Fabric
from fabricgen.model.topology import Topology


def _lnet(path: str, content: bytes, networks: Mapping[str, Fabric]) -> Iterator[Finding]:
    """Lustre over a lossless RoCE fabric: every local NI's o2iblnd ToS carries the fabric's lossless DSCP and
ECT(0)."""
    for net in yaml.safe_load(content).get("net") or []:
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


def readback(topology: Topology, artifacts: Mapping[str, Artifact]) -> Iterator[Finding]:
    """Every client's lnet.conf against the lossless class of the fabric each of its networks runs on."""
    fabrics = {ft.fabric.name: ft.fabric for ft in topology.fabrics}
    networks = {fs.lnet.network: fabrics[fs.fabric] for fs in topology.cluster.lustre}
    for path in sorted(artifacts):
        if path.startswith("hosts/") and path.rpartition("/")[2] == "lnet.conf":
            yield from _lnet(path, artifacts[path].content, networks)
