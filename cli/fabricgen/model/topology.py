"""The compiled topology: switches, ports and links per fabric, with the cluster's cables and address plans.

Compile (:mod:`fabricgen.stages.compile`) makes it; checks, renderers and the read-back only read it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar, cast

from fabricgen.model.addressing import FabricAddresses
from fabricgen.model.cabling import Cable
from fabricgen.model.cluster import Cluster, Fabric, Tier
from fabricgen.model.hardware import SwitchModel
from fabricgen.model.nodes import Nic

NODE_LEAF, LEAF_SPINE, SPINE_CORE = "node-leaf", "leaf-spine", "spine-core"
LEAF_LEAF = "leaf-leaf"  # an MLAG pair's peer link: layer 2, no address, no BGP session
LINK_TIERS = (NODE_LEAF, LEAF_SPINE, SPINE_CORE, LEAF_LEAF)
ROUTED_TIERS = (LEAF_SPINE, SPINE_CORE)  # switch-to-switch links with a /31 and an eBGP session each

V = TypeVar("V")


@dataclass(frozen=True, slots=True)
class Port:
    """One end of a link: device name, logical port number (1-based) and physical port name."""

    device: str
    number: int
    name: str


@dataclass(frozen=True, slots=True)
class Link:
    """One physical link, listed once; ``a`` is always the lower-tier end (node below leaf below spine)."""

    fabric: str
    tier: str
    a: Port
    z: Port
    speed: str
    rail: int | None = None
    su: int | None = None
    nic: Nic | None = None


@dataclass(frozen=True, slots=True)
class Switch:
    name: str
    fabric: str
    tier: Tier
    model: SwitchModel
    index: int
    down_ports: int
    up_ports: int
    su: int | None = None
    rail: int | None = None
    pod: int | None = None
    rack: str | None = None
    u: int | None = None
    # the host ports ``topology.server_ports`` keeps for servers on this leaf (the first leaf, or each of the first
    # pair), which no compute node takes, as the one port numbering names them; () on every other switch
    server_block: tuple[Port, ...] = ()
    # the faceplate as the port layout lays it out: the cages of its downlinks (a leaf's host ports, a spine's leaf
    # links) and of its uplinks (and an MLAG pair's peer link), cabled yet or not; shared by the switches of a
    # layout (compile's cache)
    downlink_cages: frozenset[int] = frozenset()
    uplink_cages: frozenset[int] = frozenset()


@dataclass(frozen=True)
class FabricTopology:
    fabric: Fabric
    tiers: int
    switches: tuple[Switch, ...]
    links: tuple[Link, ...]
    host_ports: int
    scalable_units: int
    rails: int
    pods: int

    def switches_in(self, tier: Tier) -> tuple[Switch, ...]:
        return tuple(s for s in self.switches if s.tier is tier)

    def links_in(self, tier: str) -> tuple[Link, ...]:
        return tuple(link for link in self.links if link.tier == tier)


@dataclass(frozen=True)
class Topology:
    """The compiled cluster: its fabrics (switches and links), their cables and address plans.

    Views that several checks and renderers read (of a fabric: the subnet manager's view of an InfiniBand
    fabric, the Ethernet switch views; of the whole topology: the cable sheets' rows) are not fields: each is
    computed on first use by :meth:`derived` or :meth:`shared` and kept with this object. Computing them in
    compile instead would make this module import the modules that define them (which import it), tax every
    compile with views only some targets read, and leave a ``dataclasses.replace`` copy holding views of the
    fields it replaced; kept here, a copy starts empty and a view lives exactly as long as the topology it was
    computed from.
    """

    cluster: Cluster
    fabrics: tuple[FabricTopology, ...]
    cables: tuple[Cable, ...] = ()
    addresses: Mapping[str, FabricAddresses] = field(default_factory=dict)
    _derived: dict[tuple[Callable[..., object], str | None], object] = field(
        default_factory=dict, init=False, repr=False, compare=False)

    def fabric(self, name: str) -> FabricTopology:
        return next(f for f in self.fabrics if f.fabric.name == name)

    def derived(self, view: Callable[[Topology, FabricTopology], V], ft: FabricTopology) -> V:
        """``view(self, ft)`` for one of this topology's fabrics, computed once and then shared.

        ``view`` must be a pure function of the topology and the fabric (it is the memo key, with the fabric's
        name). The render stage forks its workers after the checks, so views the checks read are computed
        once in the parent; a view only renderers read is computed in each worker that reads it.
        """
        if not any(f is ft for f in self.fabrics):
            raise ValueError(f"fabric {ft.fabric.name!r} is not one of this topology's fabrics")
        key = (view, ft.fabric.name)
        if key not in self._derived:
            self._derived[key] = view(self, ft)
        return cast(V, self._derived[key])

    def shared(self, view: Callable[[Topology], V]) -> V:
        """``view(self)``, computed once and then shared: a view of the whole topology that several renderers
        read (the render stage runs the targets that share a view, ``Target.shares``, in one worker, in turn)."""
        key = (view, None)
        if key not in self._derived:
            self._derived[key] = view(self)
        return cast(V, self._derived[key])
