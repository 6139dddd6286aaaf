"""The cable plan: every compiled link becomes one physical cable with both ends located (site, row, rack,
U, device, port), a run length from the facility geometry, a medium chosen from the catalog and an orderable
standard length.

Geometry (documented in the README): racks stand side by side in their row (``rack_width_m`` apart) and rows
``row_pitch_m`` apart in spec order. A run inside one rack goes straight between the two devices; between
racks it rises from the device to the top of its rack, through the tray (``tray_height_m`` above the racks),
along the row and across rows (Manhattan distance), and down to the far device. ``slack_m`` is added to every
run. The medium is the first catalog entry (spec overrides first) that serves the link's speed and end kind
and reaches the run; the cable is its shortest standard length at least as long as the run.

Direction is fixed: A is the lower tier (node below leaf below spine below core), Z the upper, and every
physical link appears exactly once, numbered among the cables of its Z switch (``_switch_ids``).

Splitters: a medium with ``legs`` > 1 is one physical cable whose single switch-side connector serves ``legs``
consecutive logical ports of a cage (``<cage>/1`` and ``<cage>/2`` share the first connector of the cage at 1:2,
``<cage>/3`` and ``<cage>/4`` the second) and whose legs go to as many host ports. Its switch plug fills the
cage: ``legs`` times the connectors of that plug (a twin-port transceiver's ``connections``, 1 for a cable
plug such as a DAC) is the cage's logical port count at the link's speed, so a 1:2 DAC serves a cage split
2 ways, a 1:4 DAC one split 4 ways, a 1:2 fiber on a twin-port transceiver one split 4 ways. The plan keeps one
:class:`Cable` per link (the unit checks, NetBox and the InfiniBand verify work on); the legs of one splitter share
``physical`` (the physical cable's id) and carry ``leg`` 1..legs (their ids ``<physical>/L<leg>``). When the first
fitting medium of a host link is a splitter, the links of each connector group take together the first medium that
serves every one of them, at the orderable length of the longest run, so all legs of a splitter are one part; a
group that no splitter of its size serves is cabled as the smaller connectors of the next smaller splitter listed (a
cage out of a 1:4 DAC's reach becomes two 1:2 fibers on a twin-port transceiver), each choosing again.

A switch-to-switch splitter is a breakout: its plug in the upper cage, its legs in lower-tier switch cages it names
(``host_form_factors``; a QSFP-DD DR4 to four QSFP28 DR1). Switch links between two cages split alike that no medium
serves link by link share one cable per lane-aligned cage pair (a media row's ``cage_pair``), each link a ``leg``
numbered by its port in the cage. Each switch numbers the physical cables of its switch side in physical port order,
without gaps (``_switch_ids``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace

from fabricgen.core.errors import SpecError, SpecIssue
from fabricgen.model.cabling import Cable, CableEnd
from fabricgen.model.cluster import Cluster
from fabricgen.model.hardware import (
    HOST_SWITCH,
    SWITCH_SWITCH,
    Medium,
    Optic,
    SwitchModel,
    cage_of,
    serves_split_cage,
)
from fabricgen.model.nodes import Facility, Rack
from fabricgen.model.topology import FabricTopology, Link, Port, Topology

RACK_UNIT_M = 0.04445  # EIA-310: 1U = 1.75 in
CAGE_PAIR = "cage-pair"  # the choices key of the media that carry a lane-aligned pair of split cages
MAX_REPORTED = 20  # out-of-reach cables named one by one; beyond this a count


@dataclass(frozen=True)
class _Place:
    rack: Rack
    u: int
    height: int
    switch: SwitchModel | None = None  # the cage form factor of a switch end comes from its model


class _Geometry:
    """Rack coordinates and run lengths for one facility."""

    def __init__(self, facility: Facility) -> None:
        self.f = facility

    def mid_height(self, place: _Place) -> float:
        return (place.u - 1 + place.height / 2) * RACK_UNIT_M

    def run(self, a: _Place, z: _Place) -> float:
        f = self.f
        if a.rack.name == z.rack.name:
            run = abs(self.mid_height(a) - self.mid_height(z))
        else:
            top = f.rack_units * RACK_UNIT_M + f.tray_height_m
            rise = (top - self.mid_height(a)) + (top - self.mid_height(z))
            along = abs(a.rack.index - z.rack.index) * f.rack_width_m
            across = abs(a.rack.row_index - z.rack.row_index) * f.row_pitch_m
            run = rise + along + across
        return round(run + f.slack_m, 2)


def _places(cluster: Cluster, fabrics: Sequence[FabricTopology]) -> dict[str, _Place]:
    racks = {r.name: r for r in cluster.facility.racks}
    places = {n.name: _Place(n.rack, n.u, n.profile.height_u) for n in cluster.nodes}
    for ft in fabrics:
        for sw in ft.switches:
            assert sw.rack is not None and sw.u is not None, "switches are placed before cabling"
            places[sw.name] = _Place(racks[sw.rack], sw.u, sw.model.height_u, sw.model)
    return places


def _end(port: Port, place: _Place, link: Link, lower: bool, host_form_factor: str | None = None) -> CableEnd:
    """A switch end knows its cage's form factor and vendor; a node end its NIC's form factor and chassis cage."""
    nic = link.nic if lower else None
    if place.switch is not None:
        return CableEnd(place.rack.row, place.rack.name, place.u, port.device, port.name, port.number,
                        nic.gpu if nic else None, nic.dev if nic else "", nic.netdev if nic else "",
                        _cage_form_factor(place, port), place.switch.vendor)
    return CableEnd(place.rack.row, place.rack.name, place.u, port.device, port.name, port.number,
                    nic.gpu if nic else None, nic.dev if nic else "", nic.netdev if nic else "",
                    host_form_factor or "", cage=nic.host_cage if nic else port.name)


def _candidates(media: Sequence[Medium]) -> dict[tuple[str, str], tuple[Medium, ...]]:
    """Media by (speed, end kind) in preference order (a switch-switch splitter's legs go to lower-tier
    switches, as a breakout from a spine cage to leaf uplinks)."""
    keys = {(s, e) for m in media for s in m.speeds for e in m.ends}
    options = {k: tuple(m for m in media if k[0] in m.speeds and k[1] in m.ends) for k in keys}
    for speed in {s for m in media for s in m.cage_pair}:
        options[(speed, CAGE_PAIR)] = tuple(m for m in media if speed in m.cage_pair and SWITCH_SWITCH in m.ends
                                            and m.legs == 1)
    return options


def _cage_form_factor(place: _Place, port: Port) -> str:
    assert place.switch is not None
    return place.switch.port_group(port.name).form_factor


@dataclass(frozen=True, slots=True)
class _HostLink:
    """A host link's first-fit cable and what its medium must fit, kept to regroup a cage into splitters."""

    index: int  # position in the fabric's cable list
    cable: Cable
    host: str | None
    cages: tuple[str, ...]
    lane: int
    cage_ports: int  # logical ports of the switch cage at the link's speed

    def takes(self, medium: Medium) -> bool:
        """Whether ``medium`` plugs into this link's cages and, for a splitter, fills the switch cage."""
        return _fits(medium, self.cages, self.host) and _fills_cage(medium, self.cage_ports)


def _fits(medium: Medium, cages: tuple[str, ...], host: str | None) -> bool:
    """Whether the parts plug into the link's ends: a host link's switch cage and NIC, or a switch link's two
    cages; a switch-to-switch splitter (a breakout) has its plug in the upper cage and its legs, like a host
    splitter's, in the lower ones, which it must name (``host_form_factors``)."""
    if medium.legs > 1 and host is None:
        return bool(medium.host_form_factors) and medium.fits(cages[-1:], cages[0])
    return medium.fits(cages, host)


def _fills_cage(medium: Medium, cage_ports: int) -> bool:
    """A splitter's switch plug serves a whole cage: ``legs`` logical ports on each of its connectors (the
    ``connections`` of a twin-port transceiver, 1 for a cable plug). An ordinary cable always passes."""
    connectors = medium.switch_optic.connections if medium.switch_optic else 1
    return medium.legs == 1 or medium.legs * connectors == cage_ports


def _first_fit(options: tuple[Medium, ...], host: str | None, cages: tuple[str, ...], run: float, cage_ports: int
               ) -> tuple[Medium, tuple[float, str]] | None:
    """The first medium that plugs into the link's ends (a splitter: fills its switch cage of ``cage_ports``
    logical ports) and reaches the run, with its orderable (length, part); None when none does."""
    for medium in options:
        if not _fits(medium, cages, host) or (medium.legs > 1 and not _fills_cage(medium, cage_ports)):
            continue
        picked = medium.standard_length(run)
        if picked is not None:
            return medium, picked
    return None


def _fabric_cables(ft: FabricTopology, places: dict[str, _Place], geometry: _Geometry,
                   choices: dict[tuple[str, str], tuple[Medium, ...]], nic_form_factors: dict[str, str],
                   unreachable: list[str]) -> list[Cable]:
    name = ft.fabric.name
    cables: list[Cable | None] = []
    # Host links of speeds a splitter may serve, by switch cage: (position, first-fit cable, link, host form factor,
    # cages); a cage where some first fit is a splitter is regrouped by connector.
    by_cage: dict[tuple[str, str], list[tuple[int, Cable, Link, str | None, tuple[str, ...]]]] = {}
    splitting = {key for key, options in choices.items() if any(m.legs > 1 for m in options)}
    # A link's first fit depends on its speed, ends, cages, run and (for a splitter) its cage's split only: a few
    # thousand distinct ones among a 16k-GPU cluster's 67,000 links
    first_fits: dict[tuple[str, str, str | None, tuple[str, ...], float, int],
                     tuple[Medium, tuple[float, str]] | None] = {}
    for link in ft.links:
        a_place, z_place = places[link.a.device], places[link.z.device]
        run = geometry.run(a_place, z_place)
        ends = HOST_SWITCH if link.tier == "node-leaf" else SWITCH_SWITCH
        host = nic_form_factors.get(link.nic.model, "") if link.nic else None
        cages = (_cage_form_factor(z_place, link.z),) if host is not None else (
            _cage_form_factor(a_place, link.a), _cage_form_factor(z_place, link.z))
        cable_id = cable_name(link.z)
        split = (link.speed, ends) in splitting
        # the z cage's logical ports matter to a splitter only
        cage_ports = _cage_ports(z_place, link.z, link.speed) if split else 0
        key = (link.speed, ends, host, cages, run, cage_ports)
        if key not in first_fits:
            first_fits[key] = _first_fit(choices.get((link.speed, ends), ()), host, cages, run, cage_ports)
        fit = first_fits[key]
        if fit is not None:
            medium, (length, part) = fit
            cable = Cable(cable_id, name, link.tier, link.speed, link.rail, link.su,
                          _end(link.a, a_place, link, True, host), _end(link.z, z_place, link, False), run,
                          length, part, medium, cable_id)
            if split:
                by_cage.setdefault((link.z.device, switch_cage(link.z.name)), []).append(
                    (len(cables), cable, link, host, cages))
            cables.append(cable)
        else:
            cables.append(None)
            between = " to ".join(filter(None, (host, *cages)))
            unreachable.append(f"{cable_id} {link.a.device}:{link.a.name} -> {link.z.device}:{link.z.name} "
                               f"needs {run:g} m at {link.speed} ({ends}, {between})")
    for cage_links in by_cage.values():
        if any(first.medium.legs > 1 for _, first, _, _, _ in cage_links):
            hosts = [_HostLink(i, first, host, cages, switch_lane(link.z.name),
                               _cage_ports(places[link.z.device], link.z, link.speed))
                     for i, first, link, host, cages in cage_links]
            for index, cable in _split_cage(hosts, choices):
                cables[index] = cable
    for index, cable in _cage_pairs(cables, places, choices):
        cables[index] = cable
    return _switch_ids([c for c in cables if c is not None], places, [m for ms in choices.values() for m in ms])


def _switch_ids(cables: list[Cable], places: dict[str, _Place], media: Sequence[Medium]) -> list[Cable]:
    """Each physical cable is numbered by the connector its switch side (Z) plugs into, ``<Z switch>-<n, 3
    digits>``, and the links of a cable of several (a splitter's legs, a cage pair's lanes) ``<that id>/L<leg>``.
    A switch's connectors are counted in faceplate order: as many per cage as the most plugs a cage of its form
    factor takes (a twin-port OSFP transceiver's two, else one), so a QM9700's NDR cables read -001, -002 as cage
    1's two ports, a breakout switch's harnesses -001, -002 ... as its cages, and a 1:2 splitter on a twin-port
    transceiver as its connector. The number is the connector's, not a count of the cables before it: a cable
    keeps its id while it stays plugged where it is, whatever comes or goes around it (field review, 2026-12-03:
    h100-4su without gpu121-127 gave gpu121's id to the UFM), and no id is ever another cable's. A switch whose
    twin-port cages take one whole-cage plug each (a 1:2 DAC) skips the second connector's number."""
    connector = connector_numbering(connectors_per_cage(media))
    first: dict[str, tuple[int, str]] = {}  # physical cable -> (its connector number, its Z switch)
    for c in cables:
        model = places[c.z.device].switch
        assert model is not None, "a cable's Z end is a switch"
        number = connector(model, c.z.port, c.speed)
        if c.physical not in first or number < first[c.physical][0]:
            first[c.physical] = (number, c.z.device)
    names: dict[str, str] = {}
    taken: Counter[str] = Counter()
    # provisional ids are <switch>-<port, 3 digits>: as text, in port order
    for physical, (number, device) in sorted(first.items(), key=lambda item: (item[1], item[0])):
        name = f"{device}-{number:03d}"
        taken[name] += 1  # two plugs in a cage of one connector (the cage-plugs check refuses them) stay distinct
        names[physical] = name if taken[name] == 1 else f"{name}.{taken[name]}"
    return [c.renumbered(f"{names[c.physical]}/L{c.leg}" if c.leg else names[c.physical], names[c.physical])
            for c in cables]


def connectors_per_cage(media: Sequence[Medium]) -> dict[str, int]:
    """The most plugs a switch cage of each form factor takes: a twin-port transceiver's connections where a
    catalog medium puts one in such a cage (OSFP), else 1."""
    most: dict[str, int] = {}
    for medium in media:
        for form_factor in {*medium.switch_form_factors, *(ff for ff, _ in medium.switch_optics)}:
            optic = medium.switch_optic_for(form_factor)
            if optic is not None:
                most[form_factor] = max(most.get(form_factor, 1), optic.connections)
    return most


def connector_numbering(twin: dict[str, int]) -> Callable[[SwitchModel, str, str], int]:
    """:func:`_connector_number` with ``twin`` (:func:`connectors_per_cage`), each (model, port, speed) counted
    once: a model's few hundred among a 16k-GPU plan's 67,000 cables. The one faceplate numbering: cable ids and
    free ports (``free.py``) both number a connector by it."""
    numbers: dict[tuple[str, str, str], int] = {}

    def number(model: SwitchModel, port: str, speed: str) -> int:
        key = (model.name, port, speed)
        if key not in numbers:
            numbers[key] = _connector_number(model, port, speed, twin)
        return numbers[key]

    return number


def _connector_number(model: SwitchModel, port: str, speed: str, twin: dict[str, int]) -> int:
    """The 1-based number of the connector a switch port is plugged through, counted across the switch's cages in
    faceplate order: a cage split ``split`` ways with ``k`` connectors gives each connector ``split / k`` of its
    logical ports (a QM9700 cage at NDR200: /1 and /2 the first, /3 and /4 the second)."""
    cage, lane = cage_of(port), switch_lane(port)
    number = 0
    for group in model.port_groups:
        k = twin.get(group.form_factor, 1)
        if cage > group.cages:
            number, cage = number + group.cages * k, cage - group.cages
            continue
        per_connector = max(1, group.per_cage(speed) // k)
        return number + (cage - 1) * k + min(k, (lane - 1) // per_connector + 1)
    raise ValueError(f"{model.name} has no port {port}")


def _cage_pairs(cables: Sequence[Cable | None], places: dict[str, _Place],
                choices: dict[tuple[str, str], tuple[Medium, ...]]) -> Iterator[tuple[int, Cable]]:
    """Switch-to-switch links between two cages split alike that no medium serves link by link (SN4700 QSFP-DD
    at 2 x 200G: a QSFP56 plug drives the cage's first port only) share one cable per cage pair: the first
    medium that carries the split across a lane-aligned pair (``cage_pair``), at the orderable length of the
    longest run; the links are its lanes (``leg`` = the port in the cage). Pairs whose ports are not on the same
    lanes at both ends keep their cables, and the cage-plugs check names them."""
    pairs: dict[tuple[str, str, str, str], list[int]] = {}
    for index, cable in enumerate(cables):
        if cable is None or cable.tier == "node-leaf" or cable.leg:
            continue
        split = _cage_ports(places[cable.a.device], _port(cable.a), cable.speed)
        if split < 2 or serves_split_cage(cable.medium, cable.a.form_factor, cable.speed, SWITCH_SWITCH, split):
            continue
        pairs.setdefault((cable.a.device, switch_cage(cable.a.port), cable.z.device, switch_cage(cable.z.port)),
                         []).append(index)
    for indices in pairs.values():
        group = [c for i in indices if (c := cables[i]) is not None]
        first = group[0]
        split = _cage_ports(places[first.a.device], _port(first.a), first.speed)
        if (_cage_ports(places[first.z.device], _port(first.z), first.speed) != split
                or any(switch_lane(c.a.port) != switch_lane(c.z.port) for c in group)):
            continue
        longest = max(c.run_m for c in group)
        cages = (first.a.form_factor, first.z.form_factor)
        for medium in choices.get((first.speed, CAGE_PAIR), ()):
            picked = medium.standard_length(longest) if medium.fits(cages, None) else None
            if picked is not None:
                for i, c in zip(indices, group, strict=True):
                    yield i, replace(c, length_m=picked[0], part=picked[1], medium=medium, physical=first.id,
                                     leg=switch_lane(c.a.port))
                break


def _port(end: CableEnd) -> Port:
    return Port(end.device, end.port_number, end.port)


def _cage_ports(place: _Place, port: Port, speed: str) -> int:
    assert place.switch is not None
    return place.switch.port_group(port.name).per_cage(speed)


def _split_cage(links: list[_HostLink], choices: dict[tuple[str, str], tuple[Medium, ...]]
                ) -> Iterator[tuple[int, Cable]]:
    """The cables of one switch cage whose first-fit medium is (for some link) a splitter, regrouped by connector:
    logical ports in lane order, ``legs`` to a connector (the largest splitter among the first fits)."""
    links = sorted(links, key=lambda h: h.lane)
    legs = max(h.cable.medium.legs for h in links)
    ends = HOST_SWITCH if links[0].cable.tier == "node-leaf" else SWITCH_SWITCH
    yield from _connectors(links, legs, choices[(links[0].cable.speed, ends)])


def _connectors(links: list[_HostLink], legs: int, options: tuple[Medium, ...]) -> Iterator[tuple[int, Cable]]:
    """Links in lane order grouped ``legs`` to a connector, each group cabled on its own."""
    groups: dict[int, list[_HostLink]] = {}
    for h in links:
        groups.setdefault((h.lane - 1) // legs, []).append(h)
    for group in groups.values():
        yield from _connector(group, legs, options)


def _connector(group: list[_HostLink], legs: int, options: tuple[Medium, ...]) -> Iterator[tuple[int, Cable]]:
    """The links on one switch connector take the first medium that serves every one of them: a splitter (one
    physical cable at the orderable length of the longest run, named after its first leg until numbered), straight
    cables, or, at a smaller splitter listed first, that splitter's smaller connectors, each group choosing again."""
    longest = max(h.cable.run_m for h in group)
    for medium in options:
        if medium.legs > legs or legs % medium.legs:
            continue
        if 1 < medium.legs < legs:
            if any(h.takes(medium) for h in group):
                yield from _connectors(group, medium.legs, options)
                return
            continue
        if not all(h.takes(medium) for h in group):
            continue
        if medium.legs > 1:
            picked = medium.standard_length(longest)
            if picked is not None:
                first = group[0].cable.id
                for h in group:
                    yield h.index, replace(h.cable, length_m=picked[0], part=picked[1], medium=medium,
                                           physical=first, leg=(h.lane - 1) % legs + 1)
                return
            continue
        straight = [medium.standard_length(h.cable.run_m) for h in group]
        if all(p is not None for p in straight):
            for h, p in zip(group, straight, strict=True):
                assert p is not None
                yield h.index, replace(h.cable, length_m=p[0], part=p[1], medium=medium, physical=h.cable.id, leg=0)
            return
    for h in group:  # no one medium serves the whole connector: every link is cabled on its own
        yield h.index, _alone(h, legs, options)


def _alone(h: _HostLink, legs: int, options: tuple[Medium, ...]) -> Cable:
    """A link no medium serves together with its connector's others: the first medium that serves it alone
    within the connector's size, but no cable-plug splitter (its plug would fill the cage others need); else
    its own first fit, a splitter's spare legs unused."""
    for medium in options:
        if (medium.legs > legs or legs % medium.legs or (medium.legs > 1 and medium.switch_optic is None)
                or not h.takes(medium)):
            continue
        picked = medium.standard_length(h.cable.run_m)
        if picked is not None:
            cable = replace(h.cable, length_m=picked[0], part=picked[1], medium=medium)
            break
    else:
        cable = h.cable
    legs_of = cable.medium.legs
    return replace(cable, physical=cable.id, leg=(h.lane - 1) % legs_of + 1 if legs_of > 1 else 0)


def plan_cables(cluster: Cluster, fabrics: Sequence[FabricTopology]) -> tuple[Cable, ...]:
    """One cable per link of every fabric; runs no medium can serve are reported together as a SpecError."""
    places = _places(cluster, fabrics)
    geometry = _Geometry(cluster.facility)
    choices = _candidates(cluster.media)
    nic_form_factors = {name: model.form_factor for name, model in cluster.nic_models.items()}
    cables: list[Cable] = []
    issues: list[SpecIssue] = []
    for ft in fabrics:
        unreachable: list[str] = []
        cables.extend(_fabric_cables(ft, places, geometry, choices, nic_form_factors, unreachable))
        for text in unreachable[:MAX_REPORTED]:
            issues.append(SpecIssue(ft.fabric.position, f"fabrics.{ft.fabric.name}",
                                    f"cable {text}: no medium in the catalog serves it",
                                    "move the switches closer (placement), or add a medium via catalog.media"))
        if len(unreachable) > MAX_REPORTED:
            issues.append(SpecIssue(ft.fabric.position, f"fabrics.{ft.fabric.name}",
                                    f"cables out of reach: {len(unreachable) - MAX_REPORTED} more not listed"))
    if issues:
        raise SpecError(issues)
    return tuple(cables)


def cable_name(z: Port) -> str:
    """A link's provisional id while the plan is built, its switch-side (Z) port's, ``<switch>-<port number>``: unique,
    so it tells the physical cables apart until ``_switch_ids`` numbers them."""
    return f"{z.device}-{z.number:03d}"


def switch_cage(port_name: str) -> str:
    """The cage of a physical switch port name (``17/2`` -> ``17``); optics are counted per cage."""
    return port_name.split("/", 1)[0]


def switch_lane(port_name: str) -> int:
    """The logical port of a switch port name inside its cage, 1-based (``17/2`` -> 2, ``17`` -> 1)."""
    _, _, lane = port_name.partition("/")
    return int(lane) if lane else 1


def switch_connector(port_name: str, legs: int) -> tuple[str, int]:
    """The cage and 0-based connector of a switch port when ``legs`` consecutive logical ports share one."""
    return switch_cage(port_name), (switch_lane(port_name) - 1) // legs


def physical_cables(cables: Iterable[Cable]) -> Iterator[Cable]:
    """One cable per physical cable: every ordinary cable and the first listed leg of each splitter."""
    seen: set[str] = set()
    for cable in cables:
        if cable.leg:
            if cable.physical in seen:
                continue
            seen.add(cable.physical)
        yield cable


@dataclass(frozen=True, order=True)
class BomLine:
    """One orderable item and how many: switches by model, cables by part, transceivers by part."""

    category: str
    part: str
    description: str
    count: int


def _optic_counts(cables: Sequence[Cable]) -> Counter[str]:
    """Transceivers by part: a node cage takes one per ``connections`` cables (every splitter leg) that end in it
    (a DGX twin-port cage one for its two ports, any other host port one); a switch cage one per ``connections``
    physical cables that end in it (a twin-port OSFP serves two; a splitter, a breakout and a cage-pair cable are
    one physical cable, so the breakout's legs each count at their own switch)."""
    totals: Counter[str] = Counter()
    per_cage: dict[tuple[str, str, Optic], set[str]] = {}
    for cable in cables:
        a_optic, z_optic = cable.a_optic, cable.z_optic
        if a_optic is not None and cable.tier == "node-leaf":  # a leg each: cable.id, not the splitter's
            per_cage.setdefault((cable.a.device, cable.a.cage or cable.a.port, a_optic), set()).add(cable.id)
        elif a_optic is not None:
            per_cage.setdefault((cable.a.device, switch_cage(cable.a.port), a_optic), set()).add(cable.physical)
        if z_optic is not None:
            per_cage.setdefault((cable.z.device, switch_cage(cable.z.port), z_optic), set()).add(cable.physical)
    for (_, _, optic), used in per_cage.items():
        totals[optic.part] += -(-len(used) // optic.connections)
    return totals


def _cable_text(cable: Cable) -> str:
    m = cable.medium
    if m.fanout_m:
        return (f"{m.kind} 1:{m.legs} breakout {cable.length_m:g} m, custom staggered fan-out: leg lengths per "
                "cables.csv run_m")
    return f"{m.kind} 1:{m.legs} splitter {cable.length_m:g} m" if m.legs > 1 else f"{m.kind} {cable.length_m:g} m"


def bill_of_materials(switch_models: Iterable[str], cables: Sequence[Cable]) -> tuple[BomLine, ...]:
    """Switches, physical cables (by part and length; a splitter once, at the length of its legs) and
    transceivers, sorted by category then part."""
    lines = [BomLine("switch", model, "switch", count) for model, count in Counter(switch_models).items()]
    by_cable: Counter[tuple[str, str]] = Counter((c.part, _cable_text(c)) for c in physical_cables(cables))
    lines += [BomLine("cable", part, text, count) for (part, text), count in by_cable.items()]
    lines += [BomLine("transceiver", part, "transceiver", count) for part, count in _optic_counts(cables).items()]
    return tuple(sorted(lines))


def cluster_bom(topology: Topology) -> tuple[BomLine, ...]:
    """The cluster's bill of materials (its switches and cables), which the CSV and the workbook both list: read
    through ``topology.shared`` so a render computes it once."""
    return bill_of_materials((s.model.name for f in topology.fabrics for s in f.switches), topology.cables)
