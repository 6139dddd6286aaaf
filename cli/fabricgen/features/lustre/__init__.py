"""Lustre: the ``lustre`` section (MGS NIDs, LNet, tunables, layouts, the servers' targets), the named storage
servers' NIDs from the address plan (compile), the checks of MGS addresses against the plan's announced subnets and
the planned MGT, the client, server and storage-admin files, and the read-back of LNet's ToS on a RoCE fabric."""

from __future__ import annotations

from fabricgen.features.feature import Feature, Target
from fabricgen.features.lustre import build, readback, render, servers

FEATURE = Feature(
    "lustre",
    build=build.build,
    compile=servers.server_nids,
    checks=(build.check_mgs_addresses, servers.check_mgs, servers.check_inband),
    targets=(Target("lustre", render.render),),
    readback=readback.readback,
)
