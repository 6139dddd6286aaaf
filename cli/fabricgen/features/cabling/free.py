"""cabling/free-ports.csv: every switch connector no cable plugs into and every leg of a plugged splitter no device
takes, with what an engineer needs to use one (field review, 2026-12-03): the port as the switch's NOS and NetBox
name it (SONiC ``Ethernet384``, NVUE ``swp49s0``, EOS ``Ethernet49/1``: the NOS module's own ``port_name``, the
one NetBox's interfaces and the switch configs name ports by), the speed and breakout the switch's rendered
configuration gives it and whether that configuration leaves it admin down (the NOS module's ``port_setting``,
read from the structures its renderer writes the file from), its role in the faceplate as compile lays it out
(a leaf's host port, a switch's downlink or uplink, or outside the plan: ``Switch.downlink_cages``,
``uplink_cages``), and what the port is kept for: the declared ``topology.server_ports`` block of the first leaf
(pair), the slot of a management node on a rail-optimized fabric (the UFM's, whose other rails no GPU node may
take), growth (any other free host port: a node added to the spec may take it, where the compile says), else a
spare (no node's).

Connectors are numbered as the cable ids number them (``plan.connector_numbering``, the one faceplate numbering),
so a free connector's ``cable_id`` is the id a cable plugged there takes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from typing import NamedTuple

from fabricgen.features.cabling.plan import connector_numbering, connectors_per_cage, switch_lane
from fabricgen.features.ethernet.nos import Nos, PortSetting, fabric_nos
from fabricgen.model.cabling import Cable
from fabricgen.model.cluster import Tier, TopologyKind
from fabricgen.model.hardware import SwitchModel, port_name
from fabricgen.model.topology import NODE_LEAF, FabricTopology, Switch, Topology

SPARE = "spare"  # a free port of the switches' own links (an uplink, a downlink to switches) or outside the plan
GROWTH = "growth"  # a free host port of a leaf: a node added to the spec may take it (the compile says which)
# a free port's place in the faceplate as compile lays it out (Switch.downlink_cages, uplink_cages)
HOST_PORT, DOWNLINK, UPLINK, UNPLANNED = "host port", "downlink", "uplink", "outside the plan"

Numbering = Callable[[SwitchModel, str, str], int]


@dataclass(frozen=True)
class FreePort:
    """A switch connector no cable plugs into, or a leg of a plugged splitter that no device takes: where a cable
    added later goes, the id it will carry, and how the switch's configuration leaves the port."""

    fabric: str
    device: str
    model: str
    rack: str
    u: int
    number: int  # the connector's number across the switch (the number in its cable ids)
    cage: int  # the faceplate cage
    cage_connector: int  # 1 or 2 of a twin-port cage's connectors; 0 where a cage has one
    port: str  # the faceplate port, as cables.csv names it (at the tier's speed; a leg's at its splitter's)
    form_factor: str
    kind: str  # "connector" (nothing plugged) or "breakout leg" (a splitter's leg no device takes)
    optic: str  # "installed": the cage's optic is there already (its other connector is cabled), else ""
    cable_id: str  # the id a cable plugged here takes (a connector names its cable; a leg is <splitter>/L<leg>)
    # the NOS's names of the connector's logical ports (a leg's one), space-separated, as the configuration leaves
    # its cage (NVUE: ``swp33`` for a cage it does not split); "": no NOS names them (InfiniBand), or none splits so
    interface: str = ""
    alias: str = ""  # the NOS's aliases of those ports (SONiC ``etp31a etp31b``), space-separated
    setting: PortSetting | None = None  # how the rendered configuration leaves it; None: no configuration written
    role: str = UNPLANNED  # host port, downlink, uplink, or outside the plan (no compile of a grown spec cables it)
    # what it is kept for: "growth" (a free host port), "server block (server_ports 10)", "management slot
    # (ufm01+ufm02)", else "spare"
    reserved: str = SPARE


def free_ports(topology: Topology) -> tuple[FreePort, ...]:
    """Every switch connector no cable of its fabric plugs into, and every leg of a plugged splitter no device
    takes, per switch in fabric and switch order, in faceplate order: the spare ports a site team grows into (a
    node added, a spine link, a replacement), each with the port's faceplate and NOS names, its configuration and
    what it is kept for, and the cable id a cable there takes. A management port is not a connector of the
    fabric's cages."""
    twin = connectors_per_cage(topology.cluster.media)
    number_of = connector_numbering(twin)
    used, legs = _cabled(topology, number_of)
    reserved = _reservations(topology, number_of)
    faceplates: dict[tuple[str, str], tuple[_Connector, ...]] = {}  # a model's connectors at a speed, listed once
    names: dict[tuple[str, str, str, int], str] = {}
    free: list[FreePort] = []
    for ft in topology.fabrics:
        for sw in ft.switches:
            speed = (ft.fabric.speed if sw.tier is Tier.LEAF else ft.fabric.uplink_speed).name
            if (sw.model.name, speed) not in faceplates:
                faceplates[sw.model.name, speed] = tuple(_connectors_of(sw.model, twin, speed, number_of))
            faceplate = faceplates[sw.model.name, speed]
            cabled = used.get(sw.name, set())
            cabled_cages = {c.cage for c in faceplate if c.number in cabled}
            at = _Switch(topology, sw, fabric_nos(ft.fabric, sw.tier), names)
            grows = (_host_cages(sw.model, speed) - sw.uplink_cages if sw.tier is Tier.LEAF
                     and ft.fabric.topology.kind is TopologyKind.TOP_OF_RACK else frozenset())
            for connector in faceplate:
                role = _role(sw, connector.cage, grows)
                kept = reserved.get((sw.name, connector.number), GROWTH if role == HOST_PORT else SPARE)
                plugged = legs.get((sw.name, connector.number))
                if plugged:
                    free.extend(at.free(connector, (port,), "breakout leg", "installed", cable_id, role, kept)
                                for port, cable_id in _free_legs(connector, plugged))
                elif connector.number not in cabled:
                    optic = "installed" if connector.cage_connector and connector.cage in cabled_cages else ""
                    free.append(at.free(connector, connector.ports, "connector", optic,
                                        f"{sw.name}-{connector.number:03d}", role, kept))
    return tuple(free)


class _Connector(NamedTuple):
    """One connector of a switch model's faceplate at a speed (see :class:`FreePort`)."""

    number: int
    cage: int
    cage_connector: int
    ports: tuple[str, ...]  # its logical ports at the speed, the first its name (``31/1``, ``31/2`` at 2 x 200G)
    form_factor: str
    split: int  # logical ports of its cage at the speed; a cage that cannot run it (a leaf's uplink cage): unsplit


def _cabled(topology: Topology, number_of: Numbering) -> tuple[dict[str, set[int]], dict[tuple[str, int], list[Cable]]]:
    """Each switch's cabled connectors, and each switch connector's splitter legs."""
    switches = {sw.name: sw for ft in topology.fabrics for sw in ft.switches}
    used: dict[str, set[int]] = {}
    legs: dict[tuple[str, int], list[Cable]] = {}
    for c in topology.cables:
        for end in (c.a, c.z):
            sw = switches.get(end.device)
            if sw is None or sw.fabric != c.fabric:
                continue
            number = number_of(sw.model, end.port, c.speed)
            used.setdefault(sw.name, set()).add(number)
            if end is c.z and c.medium.legs > 1:
                legs.setdefault((sw.name, number), []).append(c)
    return used, legs


class _Switch:
    """One switch's free ports with their NOS names and configuration; ``names`` keeps each NOS's name of a (model,
    port, split), shared by the switches of a free-port list (a 16k-GPU cluster has ~24,000 free ports of a few
    hundred names)."""

    def __init__(self, topology: Topology, sw: Switch, nos: Nos | None,
                 names: dict[tuple[str, str, str, int], str]) -> None:
        self.topology, self.sw, self.nos, self.names = topology, sw, nos, names

    def free(self, connector: _Connector, ports: Sequence[str], kind: str, optic: str, cable_id: str, role: str,
             reserved: str) -> FreePort:
        """The free ``ports`` of ``connector`` (all its logical ports, or a splitter's leg) with their NOS names and
        the setting the configuration gives them (the first's: a cage's ports share its breakout and state)."""
        sw, nos = self.sw, self.nos
        names = self.interfaces(nos, connector, ports) if nos is not None else ()
        settings = ([nos.port_setting(self.topology, sw.name, connector.cage, name) for name in names]
                    if nos is not None and nos.port_setting else [])
        return FreePort(sw.fabric, sw.name, sw.model.name, sw.rack or "", sw.u or 0, connector.number, connector.cage,
                        connector.cage_connector, ports[0], connector.form_factor, kind, optic, cable_id,
                        " ".join(names), " ".join(s.alias for s in settings if s and s.alias),
                        settings[0] if settings else None, role, reserved)

    def interfaces(self, nos: Nos, connector: _Connector, ports: Sequence[str]) -> tuple[str, ...]:
        """The NOS's names of ``ports`` as the configuration splits their cage (field review: a cage NVUE leaves
        whole is the one port ``swp33``, not the ``swp33s0`` its tier's speed would split it into), each once."""
        split = connector.split
        if nos.cage_split:
            split = nos.cage_split(self.topology, self.sw.name, connector.cage) or split
        if split == 1:
            ports = (port_name(connector.cage, 1, 1),)
        return tuple(dict.fromkeys(name for name in (self.name(nos, port, split) for port in ports) if name))

    def name(self, nos: Nos, port: str, split: int) -> str:
        """The NOS's name of ``port`` on a cage split ``split`` ways; "" where the NOS names no ports (InfiniBand)
        or splits the cage no such way."""
        key = (nos.data.name, self.sw.model.name, port, split)
        if key not in self.names:
            try:
                self.names[key] = nos.port_name(self.sw.model, port, split) if nos.port_name and split else ""
            except ValueError:  # no SKU (SONiC) or breakout (NVUE, EOS lanes) splits the cage so
                self.names[key] = ""
        return self.names[key]


def _role(sw: Switch, cage: int, grows: frozenset[int]) -> str:
    """Where ``cage`` sits in the switch's faceplate as compile lays it out: its downlinks' cages (a leaf's host
    ports), its uplinks', or neither (field review: a rail-optimized leaf's cages past its uplinks were offered as
    spares a node could take, which no compile of a grown spec cables). ``grows``: the cages more nodes take on a
    top-of-rack leaf, whose host ports are as many as its rack's nodes (any cage that runs the host speed and
    carries no uplink). A spine's or core's free cage is a downlink but for its uplinks' cages."""
    if sw.tier is not Tier.LEAF:  # a spine's or core's free cages take the lower tier's growth (more leaves)
        return UPLINK if cage in sw.uplink_cages else DOWNLINK
    if cage in sw.downlink_cages or cage in grows:
        return HOST_PORT
    return UPLINK if cage in sw.uplink_cages else UNPLANNED


@cache
def _host_cages(model: SwitchModel, speed: str) -> frozenset[int]:
    """The cages of ``model`` that run ``speed``."""
    return frozenset(cage for cage, group in model.cages() if group.per_cage(speed))


def _reservations(topology: Topology, number_of: Numbering) -> dict[tuple[str, int], str]:
    """(switch, connector) -> what the connector is kept for, where it is kept for something: the declared server
    block's ports (``Switch.server_block``), and on a rail-optimized fabric every leaf's port of a slot a
    management or storage node takes on some rail (the UFM's slot: its free rails are no GPU node's)."""
    kept: dict[tuple[str, int], str] = {}
    for ft in topology.fabrics:
        speed = ft.fabric.speed.name
        for sw in ft.switches:
            for p in sw.server_block:
                kept[sw.name, number_of(sw.model, p.name, speed)] = (
                    f"server block (server_ports {ft.fabric.topology.server_ports})")
        if ft.fabric.topology.kind is TopologyKind.RAIL_OPTIMIZED:
            kept |= _server_slots(topology, ft, number_of)
    return kept


def _server_slots(topology: Topology, ft: FabricTopology, number_of: Numbering) -> dict[tuple[str, int], str]:
    """Every leaf port of a slot a server takes (rail-optimized: one slot is a port of each rail's leaf of its SU,
    all numbered alike), named by the servers' roles and names."""
    roles = {n.name: n.profile.role for n in topology.cluster.nodes if n.profile.role != "compute"}
    slots: dict[tuple[int | None, str], set[str]] = {}
    for link in ft.links_in(NODE_LEAF):
        if link.a.device in roles:
            slots.setdefault((link.su, link.z.name), set()).add(link.a.device)
    kept: dict[tuple[str, int], str] = {}
    speed = ft.fabric.speed.name
    for sw in ft.switches_in(Tier.LEAF):
        for (su, port), nodes in slots.items():
            if su == sw.su:
                role = "+".join(sorted({roles[n] for n in nodes}))
                kept[sw.name, number_of(sw.model, port, speed)] = f"{role} slot ({'+'.join(sorted(nodes))})"
    return kept


def _free_legs(connector: _Connector, plugged: Sequence[Cable]) -> Iterator[tuple[str, str]]:
    """The legs of the splitter in ``connector`` no device takes, each (port, cable id): leg n is the splitter's
    nth logical port of the cage, the ports its cabled legs show (``<cage>/<lane>``, lane = leg + the connector's
    first lane - 1), its id ``<splitter>/L<n>``."""
    first = plugged[0]
    offset = switch_lane(first.z.port) - first.leg
    taken = {c.leg for c in plugged}
    for leg in range(1, first.medium.legs + 1):
        if leg not in taken:
            yield f"{connector.cage}/{leg + offset}", f"{first.physical}/L{leg}"


def _connectors_of(model: SwitchModel, twin: dict[str, int], speed: str, number_of: Numbering
                   ) -> Iterator[_Connector]:
    """All of a switch model's cage connectors in faceplate order, each named by its first logical port at ``speed``
    (a cage that cannot run it, such as an OOB leaf's QSFP28 uplink cage at the RJ45 ports' 1G: by the cage and
    connector, at its native split) and numbered by ``number_of``, the cable ids' numbering."""
    for cage, group in model.cages():
        k = twin.get(group.form_factor, 1)
        split = group.per_cage(speed)
        per_connector = max(1, split // k)
        for j in range(1, k + 1):
            ports = (tuple(port_name(cage, lane, split) for lane in range((j - 1) * per_connector + 1,
                                                                          j * per_connector + 1)) if split
                     else (f"{cage}/{j}" if k > 1 else str(cage),))
            yield _Connector(number_of(model, ports[0], speed), cage, j if k > 1 else 0, ports, group.form_factor,
                             split or group.native_split)
