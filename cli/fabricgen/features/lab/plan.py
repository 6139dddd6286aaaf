"""What one fabric's lab is made of (pure): a namespace per switch and a veth pair per planned cable between two
switches, each end named as the switch's NOS names the port its read-back puts at that cage. The cables are the
plan's, the port names and everything configured on them the rendered artifacts'. Hosts come in a later slice."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass

from fabricgen.core.errors import ConfigReadError
from fabricgen.model.routing import SwitchRouting
from fabricgen.model.topology import NODE_LEAF, FabricTopology

PREFIX = "fg-"      # every namespace the lab makes starts so, and `down` deletes no other
IFNAMSIZ = 15       # Linux interface names: at most 15 bytes (IFNAMSIZ 16 with its NUL)


@dataclass(frozen=True)
class Veth:
    """One planned cable as a veth pair: (namespace, interface) at each end."""

    a_namespace: str
    a_interface: str
    z_namespace: str
    z_interface: str


@dataclass(frozen=True)
class LabFabric:
    """One fabric's namespaces (switch name -> namespace, in name order) and cables."""

    fabric: str
    namespaces: Mapping[str, str]
    veths: tuple[Veth, ...]


def lab_id(cluster: str, fabric: str) -> str:
    """Eight hex digits naming one cluster's fabric in namespace and state names (the spec's names stay out)."""
    return hashlib.sha256(f"{cluster}\0{fabric}".encode()).hexdigest()[:8]


def lab_fabric(cluster: str, ft: FabricTopology, switches: Mapping[str, SwitchRouting]) -> LabFabric:
    """The lab of one fabric from its plan and the switches' read-back routing; ConfigReadError naming every
    planned cable whose end the configuration has no port for."""
    tag = lab_id(cluster, ft.fabric.name)
    namespaces = {name: f"{PREFIX}{tag}-{n}" for n, name in enumerate(sorted(s.name for s in ft.switches))}
    ports = {(s.name, p.panel): p.name for s in switches.values() for p in s.ports}
    veths, problems = [], []
    for link in ft.links:
        if link.tier == NODE_LEAF:
            continue
        ends = []
        for end in (link.a, link.z):
            name = ports.get((end.device, end.name))
            if name is None or end.device not in switches:
                problems.append(f"{end.device} port {end.name} (cable {link.a.device}:{link.a.name} - "
                                f"{link.z.device}:{link.z.name}) is in no port of its configuration")
            elif len(name.encode()) > IFNAMSIZ:
                problems.append(f"{end.device} port {name} is longer than Linux's {IFNAMSIZ}-byte interface names")
            else:
                ends.append((namespaces[end.device], name))
        if len(ends) == 2:
            veths.append(Veth(*ends[0], *ends[1]))
    if problems:
        raise ConfigReadError("\n".join(f"fabric {ft.fabric.name}: {p}" for p in problems))
    return LabFabric(ft.fabric.name, namespaces, tuple(veths))
