"""What one fabric's lab is made of (pure): a namespace per switch and per sampled host, and a veth pair per
planned cable between two of them, each switch end named as the switch's NOS names the port its read-back puts at
that cage, each host end as the host's netdev. The cables are the plan's, the port names and everything configured
on them the rendered artifacts'."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from fabricgen.core.errors import ConfigReadError
from fabricgen.model.cabling import Cable
from fabricgen.model.nodes import Node
from fabricgen.model.routing import SwitchRouting
from fabricgen.model.topology import NODE_LEAF, FabricTopology, Link, Port

PREFIX = "fg-"      # every namespace the lab makes starts so, and `down` deletes no other
IFNAMSIZ = 15       # Linux interface names: at most 15 bytes (IFNAMSIZ 16 with its NUL)
SERVER_ROLE = "storage"  # a profile of this role serves the fabric: its nodes are in every lab, sampled or not


@dataclass(frozen=True)
class Veth:
    """One planned cable as a veth pair: (namespace, interface) at each end, and the cable's label."""

    a_namespace: str
    a_interface: str
    z_namespace: str
    z_interface: str
    label: str = ""


@dataclass(frozen=True)
class LabFabric:
    """One fabric's namespaces (switch name -> namespace, in name order; host name -> namespace) and cables."""

    fabric: str
    namespaces: Mapping[str, str]
    veths: tuple[Veth, ...]
    hosts: Mapping[str, str] | None = None

    @property
    def host_namespaces(self) -> Mapping[str, str]:
        return self.hosts or {}

    def every_namespace(self) -> list[str]:
        return [*self.namespaces.values(), *self.host_namespaces.values()]

    def cable_at(self, namespace: str, interface: str) -> Veth | None:
        """The cable plugged into ``interface`` of ``namespace``."""
        return next((v for v in self.veths if (v.a_namespace, v.a_interface) == (namespace, interface)
                     or (v.z_namespace, v.z_interface) == (namespace, interface)), None)


def lab_id(cluster: str, fabric: str) -> str:
    """Eight hex digits naming one cluster's fabric in namespace and state names (the spec's names stay out)."""
    return hashlib.sha256(f"{cluster}\0{fabric}".encode()).hexdigest()[:8]


def sample_hosts(ft: FabricTopology, nodes: Mapping[str, Node], per_leaf: int | None) -> tuple[str, ...]:
    """The hosts a lab runs, in plan order: every host (``per_leaf`` None), else the first ``per_leaf`` hosts of
    each leaf in its port order, and every node of a server role (the storage servers every host must reach). A
    dual-homed host comes with all its ports, so both leaves of its pair see it."""
    host_links = [link for link in ft.links if link.tier == NODE_LEAF]
    chosen = {link.a.device for link in host_links
              if per_leaf is None or (link.a.device in nodes and nodes[link.a.device].profile.role == SERVER_ROLE)}
    if per_leaf is not None:
        per: dict[str, list[str]] = {}
        for link in sorted(host_links, key=lambda k: (k.z.device, k.z.number)):
            leaf = per.setdefault(link.z.device, [])
            if link.a.device not in leaf and len(leaf) < per_leaf:
                leaf.append(link.a.device)
        chosen |= {h for leaf in per.values() for h in leaf}
    order = list(dict.fromkeys(link.a.device for link in host_links))
    return tuple(h for h in order if h in chosen)


def _labels(cables: Iterable[Cable]) -> dict[tuple[str, str], str]:
    """(device, port) -> the label of the cable at it, for both ends."""
    out = {}
    for c in cables:
        out[(c.a.device, c.a.port)] = out[(c.z.device, c.z.port)] = c.label
    return out


def lab_fabric(cluster: str, ft: FabricTopology, switches: Mapping[str, SwitchRouting],
               hosts: Iterable[str] = (), cables: Iterable[Cable] = ()) -> LabFabric:
    """The lab of one fabric from its plan, the switches' read-back routing and the hosts to run; ConfigReadError
    naming every planned cable whose switch end the configuration has no port for, or whose host end no netdev."""
    tag = lab_id(cluster, ft.fabric.name)
    namespaces = {name: f"{PREFIX}{tag}-{n}" for n, name in enumerate(sorted(s.name for s in ft.switches))}
    host_ns = {name: f"{PREFIX}{tag}-h{n}" for n, name in enumerate(hosts)}
    ports = {(s.name, p.panel): p.name for s in switches.values() for p in s.ports}
    labels = _labels(cables)
    veths: list[Veth] = []
    problems: list[str] = []
    for link in ft.links:
        if link.tier == NODE_LEAF and link.a.device not in host_ns:
            continue
        ends = [_end(link, end, namespaces, host_ns, ports, problems) for end in (link.a, link.z)]
        if ends[0] and ends[1]:
            veths.append(Veth(*ends[0], *ends[1], labels.get((link.a.device, link.a.name), "")))
    if problems:
        raise ConfigReadError("\n".join(f"fabric {ft.fabric.name}: {p}" for p in problems))
    return LabFabric(ft.fabric.name, namespaces, tuple(veths), host_ns)


def _end(link: Link, end: Port, namespaces: Mapping[str, str], host_ns: Mapping[str, str],
         ports: Mapping[tuple[str, str], str], problems: list[str]) -> tuple[str, str] | None:
    """(namespace, interface) of one end of ``link``, or None with the problem noted."""
    device, panel = end.device, end.name
    cable = f"cable {link.a.device}:{link.a.name} - {link.z.device}:{link.z.name}"
    if device in host_ns:
        name = link.nic.netdev if link.nic is not None else ""
        if not name:
            problems.append(f"{device} port {panel} ({cable}) has no netdev in its profile")
            return None
    else:
        found = ports.get((device, panel))
        if found is None or device not in namespaces:
            problems.append(f"{device} port {panel} ({cable}) is in no port of its configuration")
            return None
        name = found
    if len(name.encode()) > IFNAMSIZ:
        problems.append(f"{device} port {name} is longer than Linux's {IFNAMSIZ}-byte interface names")
        return None
    return (host_ns.get(device) or namespaces[device]), name
