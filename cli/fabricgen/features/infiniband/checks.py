"""Checks of an InfiniBand fabric as its subnet manager will see it: NodeDescriptions, the routing engine's
preconditions, GUIDs known and all used, and VFs that need virtualization."""

from __future__ import annotations

from collections.abc import Iterator

from fabricgen.core.errors import Finding, Severity
from fabricgen.features.feature import fabric_error, fabric_warning
from fabricgen.features.infiniband.view import NODE_DESCRIPTION_BYTES, ib_fabric, routing_engines
from fabricgen.model.cluster import FabricType
from fabricgen.model.topology import Topology


def infiniband_subnet(topology: Topology) -> Iterator[Finding]:
    """NodeDescriptions unique and within 64 bytes, routing-engine preconditions, GUIDs known and all used."""
    for ft in topology.fabrics:
        sm = ft.fabric.subnet_manager
        if ft.fabric.type is not FabricType.INFINIBAND or sm is None:
            continue
        ib = ib_fabric(topology, ft)
        seen: set[str] = set()
        for node in ib.nodes:
            if len(node.description.encode()) > NODE_DESCRIPTION_BYTES:
                yield fabric_error(ft.fabric, "node-description", node.description,
                                   f"is {len(node.description.encode())} bytes; InfiniBand NodeDescription holds "
                                   f"{NODE_DESCRIPTION_BYTES}", "shorten the name")
            if node.description in seen:
                yield fabric_error(ft.fabric, "node-description", node.description, "is not unique on the fabric")
            seen.add(node.description)
        if "ftree" in routing_engines(sm.engines, ft.tiers) and ft.tiers < 2:
            yield fabric_error(ft.fabric, "routing-engine", ft.fabric.name,
                               "ftree needs at least two switch tiers; this fabric has one switch",
                               "use routing_engine: minhop for a single switch")
        if ib.missing_guids:
            yield fabric_warning(ft.fabric, "guids", ft.fabric.name,
                                 f"GUIDs of {len(ib.missing_guids)} devices are unknown (e.g. {ib.missing_guids[0]}): "
                                 "root-guids.conf, cn-guids.conf, node-name-map and partition members are incomplete",
                                 "set subnet_manager.guids to the site inventory file (or simulated for a lab)")
        if ft.fabric.sriov is not None and sm.flavor == "opensm":
            yield fabric_warning(ft.fabric, "sr-iov", ft.fabric.name,
                                 "carries InfiniBand VFs, which need a subnet manager with virtualization "
                                 "(virt_enabled 2); upstream OpenSM 3.3.23 has none, so the VFs get no LID and stay "
                                 "down",
                                 "run NVIDIA's OpenSM or UFM: subnet_manager.flavor: ufm")
        planned = {n.description for n in ib.nodes}
        for key, entry in sorted(sm.inventory.items()):
            if key not in planned:
                yield Finding(Severity.ERROR, "guids", key, "is in the GUID inventory but not in the plan",
                              "check the device name and RDMA device", entry.position)
