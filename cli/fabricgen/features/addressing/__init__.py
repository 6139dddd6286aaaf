"""Address plans: the ``addressing`` section of a fabric, the plan compile allocates from its pools (loopbacks,
management, /31s, leaf or IPoIB rail subnets, ASNs), the check of ASNs shared across fabrics, and the
``addressing`` target (the plan as CSV and NetBox imports)."""

from __future__ import annotations

from fabricgen.core.artifacts import Table
from fabricgen.features.addressing import build, plan, render
from fabricgen.features.feature import Feature, Target, per_fabric

FEATURE = Feature(
    "addressing",
    build=per_fabric(build.build),
    compile=plan.plan,
    checks=(plan.asn_overlap,),
    targets=(Target("addressing", render.render),),
    # An address is its device, interface and role, and reads with its value: oob-agg01:1 10.45.0.0/31 (p2p).
    tables=(Table("addressing/*.csv", "address", ("device", "interface", "role"),
                  "{device}:{interface} {address} ({role})", devices=("device",)),),
)
