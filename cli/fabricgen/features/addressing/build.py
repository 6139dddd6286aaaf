"""The ``addressing`` section of a fabric: its pools and ASN numbering, as given (compile allocates from them).

A routed Ethernet fabric needs hosts, p2p and loopbacks pools; an InfiniBand fabric's addressing holds IPoIB hosts
(and management) only, and no ASNs.
"""

from __future__ import annotations

from dataclasses import replace

from fabricgen.features.feature import BuildContext
from fabricgen.model.addressing import Addressing, LeafAsn
from fabricgen.model.cluster import Cluster, Fabric, FabricType
from fabricgen.spec.validate import with_defaults

ROUTED_ONLY = ("p2p", "loopbacks", "asn")


def build(context: BuildContext, cluster: Cluster, fabric: Fabric) -> Fabric:
    path, spec = context.fabric_spec(fabric)
    if "addressing" not in spec:
        return fabric
    issues = context.issues.at(*path, "addressing")
    given = spec["addressing"]
    if fabric.type is FabricType.INFINIBAND:
        for key in ROUTED_ONLY:
            if key in given:
                issues.error((key,), f"{key} applies to routed Ethernet and RoCE fabrics only",
                             "an InfiniBand fabric's addressing holds hosts (IPoIB) and management")
    else:
        for key in ("p2p", "loopbacks"):
            if key not in given:
                issues.error((), f"an Ethernet fabric's addressing needs {key}", "give hosts, p2p and loopbacks pools")
    a = with_defaults(given, "sections/ethernet.schema.json#/$defs/addressing")
    asn = a.get("asn", {})
    leaves = tuple(LeafAsn(leaf, number, issues.position(("asn", "leaves", leaf)))
                   for leaf, number in asn.get("leaves", {}).items())
    return replace(fabric, addressing=Addressing(
        a["hosts"], a.get("p2p", ""), a.get("loopbacks", ""), a.get("management"), asn.get("core", 64900),
        asn.get("spine", 65000), asn.get("leaf_base", 65100), issues.position(()), a.get("management_gateway"),
        leaves))
