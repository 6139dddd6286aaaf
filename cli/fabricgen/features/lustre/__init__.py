"""Lustre clients: the ``lustre`` section (MGS NIDs, LNet, tunables, layouts), the check of MGS addresses against
the address plan, the client and storage-admin files, and the read-back of LNet's ToS on a RoCE fabric."""

from __future__ import annotations

from fabricgen.features.feature import Feature, Target
from fabricgen.features.lustre import build, readback, render

FEATURE = Feature(
    "lustre",
    build=build.build,
    checks=(build.check_mgs_addresses,),
    targets=(Target("lustre", render.render),),
    readback=readback.readback,
)
