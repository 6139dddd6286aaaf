"""InfiniBand: the subnet manager section (routing, partitions and the traffic they carry, QoS, keys, GUIDs), the
fabric as the SM sees it, its checks, the OpenSM (or UFM) files and IPoIB host interfaces, the read-back of
partitions, QoS policy and NCCL against each other, and ``fabricgen verify`` against a discovered fabric."""

from __future__ import annotations

from fabricgen.features.feature import Feature, Target, per_fabric
from fabricgen.features.infiniband import build, checks, ipoib, readback, render

FEATURE = Feature(
    "infiniband",
    build=per_fabric(build.build),
    checks=(checks.infiniband_subnet,),
    targets=(Target("infiniband", render.render), Target("host-ipoib", ipoib.render)),
    readback=readback.readback,
)
