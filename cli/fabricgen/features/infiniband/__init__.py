"""InfiniBand: the subnet manager section (routing, partitions, QoS, keys, GUIDs), the fabric as the SM sees it,
its checks, the OpenSM files and IPoIB host addresses, and ``fabricgen verify`` against a discovered fabric."""

from __future__ import annotations

from fabricgen.features.feature import Feature, Target, per_fabric
from fabricgen.features.infiniband import build, checks, ipoib, render

FEATURE = Feature(
    "infiniband",
    build=per_fabric(build.build),
    checks=(checks.infiniband_subnet,),
    targets=(Target("infiniband", render.render), Target("host-ipoib", ipoib.render)),
)
