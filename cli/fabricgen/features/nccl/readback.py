"""NCCL's side of the cross-layer check: on a RoCE compute fabric, the traffic class every nccl.env gives NCCL's
queue pairs carries the fabric's lossless DSCP, with ECT(0) so switches can mark it."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from fabricgen.core.artifacts import Artifact
from fabricgen.core.errors import Finding
from fabricgen.features.feature import mismatch
from fabricgen.model.cluster import Fabric, FabricRole
from fabricgen.model.ethernet import RoceQos
from fabricgen.model.topology import Topology


def _nccl(path: str, content: bytes, fabric: Fabric, qos: RoceQos) -> Iterator[Finding]:
    env = dict(line.split("=", 1) for line in content.decode().splitlines() if line and not line.startswith("#"))
    if "NCCL_IB_TC" not in env:
        yield mismatch(path, f"NCCL sets no NCCL_IB_TC, so its QPs send on TC 0 while the fabric's lossless class is "
                             f"DSCP {qos.lossless.dscp}", fabric)
        return
    tc = int(env["NCCL_IB_TC"])
    if tc >> 2 != qos.lossless.dscp:
        yield mismatch(path, f"NCCL_IB_TC {tc} carries DSCP {tc >> 2}, but the switches treat DSCP "
                             f"{qos.lossless.dscp} as lossless", fabric)
    if tc & 0b11 != 0b10:
        yield mismatch(path, f"NCCL_IB_TC {tc} has ECN bits {tc & 3:02b}, not ECT(0) 10: switches cannot mark it",
                       fabric)


def readback(topology: Topology, artifacts: Mapping[str, Artifact]) -> Iterator[Finding]:
    """Every nccl.env against the compute fabric's lossless class, when it has one."""
    compute = next((ft.fabric for ft in topology.fabrics if ft.fabric.role is FabricRole.COMPUTE), None)
    if compute is None or compute.qos is None:
        return
    for path in sorted(artifacts):
        if path.rpartition("/")[2] == "nccl.env":
            yield from _nccl(path, artifacts[path].content, compute, compute.qos)
