"""Lustre clients: the ``lustre`` section (MGS NIDs, LNet, tunables, layouts), the named storage servers' NIDs
from the address plan (compile), the check of MGS addresses against the plan's announced subnets, the client and
storage-admin files, and the read-back of LNet's ToS on a RoCE fabric."""

from __future__ import annotations

from fabricgen.features.feature import Feature, Target
from fabricgen.features.lustre import build, readback, render

FEATURE = Feature(
    "lustre",
    build=build.build,
    compile=build.server_nids,
    checks=(build.check_mgs_addresses,),
    targets=(Target("lustre", render.render),),
    readback=readback.readback,
)
