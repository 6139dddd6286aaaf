"""GPUDirect Storage: the ``gds`` section (per node profile: the Lustre file systems and NVMe tier its GPUs read
directly, cuFile's settings), refused without GPUs, GPUDirect NICs, an RDMA LNet network or a GDS-capable Lustre
client; each node's /etc/cufile.json and the profile's GDS preflight (target ``gds``), and the read-back of cufile.json
against the Lustre client's lnet.conf and fstab."""

from __future__ import annotations

from fabricgen.features.feature import Feature, Target
from fabricgen.features.gds import build, readback, render

FEATURE = Feature(
    "gds",
    build=build.build,
    targets=(Target("gds", render.render),),
    readback=readback.readback,
)
