"""SR-IOV: the ``sriov`` section of each fabric (VF counts and addresses), the check of VF GUIDs against the
fabric's own, and the hosts' VF setup, its boot unit and the GPUDirect RDMA preflight (``host-sriov``)."""

from __future__ import annotations

from fabricgen.features.feature import Feature, Target
from fabricgen.features.sriov import build, render

FEATURE = Feature(
    "sriov",
    build=build.build,
    checks=(build.check_vf_guids,),
    targets=(Target("host-sriov", render.render),),
)
