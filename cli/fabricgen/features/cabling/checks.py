"""The cable plan against the compiled links: a cable per link and per port, lengths within reach, splitters
that are one object (one medium, connector and length for all legs; a cable-plug splitter alone in its cage), and
no switch cage with more plugs than it takes."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator

from fabricgen.core.errors import Finding, Severity
from fabricgen.features.cabling.plan import switch_cage, switch_connector
from fabricgen.features.feature import fabric_error, fabric_warning
from fabricgen.model.cabling import Cable
from fabricgen.model.topology import Topology


def cable_plan(topology: Topology) -> Iterator[Finding]:
    """Cables match the compiled links tier by tier, every port has one cable, lengths are within reach, the
    legs of every splitter share its medium, switch connector and length, no more of them than it has, and a
    cable-plug splitter (a DAC or AOC, no switch transceiver) is the only cable in its switch cage."""
    for ft in topology.fabrics:
        links = Counter(link.tier for link in ft.links)
        cables = Counter(c.tier for c in topology.cables if c.fabric == ft.fabric.name)
        if links != cables:
            yield fabric_error(ft.fabric, "cable-count", ft.fabric.name,
                               f"cables per tier {dict(cables)} differ from links per tier {dict(links)}")
    ports: Counter[tuple[str, str]] = Counter()
    splitters: dict[str, list[Cable]] = {}
    plugs: dict[tuple[str, str], str] = {}  # switch cage -> the cable-plug splitter that fills it
    for cable in topology.cables:
        ports[(cable.a.device, cable.a.port)] += 1
        ports[(cable.z.device, cable.z.port)] += 1
        if cable.leg:
            splitters.setdefault(cable.physical, []).append(cable)
            if cable.medium.switch_optic is None:
                plugs.setdefault((cable.z.device, switch_cage(cable.z.port)), cable.physical)
        elif cable.physical != cable.id:
            yield Finding(Severity.ERROR, "cable-splitter", cable.id, f"is not a splitter leg but names physical "
                                                                      f"cable {cable.physical}")
        if not cable.run_m <= cable.length_m <= cable.medium.reach_m:
            yield Finding(Severity.ERROR, "cable-length", cable.id, f"{cable.length_m:g} m cable for a "
                                                                    f"{cable.run_m:g} m run exceeds or misses the "
                                                                    f"{cable.medium.reach_m:g} m reach")
    for (device, port), count in sorted(item for item in ports.items() if item[1] > 1):  # sort only the few bad
        if count > 1:
            yield Finding(Severity.ERROR, "cable-ports", device, f"port {port} has {count} cables")
    for physical, legs in splitters.items():
        yield from _splitter(physical, legs)
    if plugs:
        yield from _shared_plug_cages(topology.cables, plugs)
    yield from cage_plugs(topology)


CAGE_EXAMPLES = 3  # cages named in a cage-plugs finding; the rest are counted


def cage_plugs(topology: Topology) -> Iterator[Finding]:
    """One plug per switch cage (two for a twin-port transceiver, one per connector): a cage split into logical
    ports (SN4700 QSFP-DD at 2 x 200G or 4 x 100G) cabled with a straight QSFP56/QSFP28 cable per port has no room
    for the second plug, and a QSFP56/QSFP28 plug drives lanes 0-3 only, so the cage's other ports never link.
    A warning per fabric (naming the first cages), not an error, while fabricgen has no medium for those cages
    (README "Not yet implemented")."""
    plugs: dict[tuple[str, str], set[str]] = {}
    room: dict[tuple[str, str], int] = {}
    fabric_of: dict[tuple[str, str], str] = {}
    for cable in topology.cables:
        ends = ((cable.z, cable.z_optic),) if cable.tier == "node-leaf" else ((cable.a, cable.a_optic),
                                                                               (cable.z, cable.z_optic))
        for end, optic in ends:
            cage = (end.device, switch_cage(end.port))
            plugs.setdefault(cage, set()).add(cable.physical)
            room[cage] = max(room.get(cage, 1), optic.connections if optic is not None else 1)
            fabric_of[cage] = cable.fabric
    full: dict[str, list[str]] = {}
    for cage, physical in sorted(plugs.items(), key=lambda item: (item[0][0], int(item[0][1]) if item[0][1].isdigit()
                                                                    else 0, item[0][1])):
        if len(physical) > room[cage]:
            full.setdefault(fabric_of[cage], []).append(f"{cage[0]} cage {cage[1]} ({len(physical)} cables)")
    for ft in topology.fabrics:
        cages = full.get(ft.fabric.name)
        if cages:
            more = f" and {len(cages) - CAGE_EXAMPLES} more" if len(cages) > CAGE_EXAMPLES else ""
            yield fabric_warning(
                ft.fabric, "cage-plugs", ft.fabric.name,
                f"{len(cages)} switch cages get more plugs than they take: {', '.join(cages[:CAGE_EXAMPLES])}{more}; "
                "one straight cable per logical port of a split cage cannot be plugged, and only the first port of "
                "each would link", "run those cages unsplit, or cable them with a splitter or breakout the catalog "
                "lists (catalog.media); see README \"Not yet implemented\"")


def _shared_plug_cages(cables: Iterable[Cable], plugs: dict[tuple[str, str], str]) -> Iterator[Finding]:
    """A DAC or AOC splitter's switch plug takes the whole cage: no other physical cable may end in it."""
    for cable in cables:
        for device, port in ((cable.a.device, cable.a.port), (cable.z.device, cable.z.port)):
            owner = plugs.get((device, switch_cage(port)))
            if owner is not None and cable.physical != owner:
                yield Finding(Severity.ERROR, "cable-splitter", owner, f"plugs into the whole cage "
                              f"{switch_cage(port)} of {device}, but {cable.id} also ends there ({port})")


def _splitter(physical: str, legs: list[Cable]) -> Iterator[Finding]:
    """One physical splitter: its legs (cables sharing ``physical``) agree on what is one object."""
    first = legs[0]
    medium, length = first.medium, first.length_m
    connector = (first.z.device, switch_connector(first.z.port, medium.legs))

    def error(message: str) -> Finding:
        return Finding(Severity.ERROR, "cable-splitter", physical, message)

    if medium.legs < 2:
        yield error(f"has legs but its medium {medium.name} is not a splitter")
    if len(legs) > medium.legs:
        yield error(f"has {len(legs)} legs; {medium.name} is a 1:{medium.legs} splitter")
    numbers = [c.leg for c in legs]
    if len(set(numbers)) != len(numbers) or not all(1 <= n <= medium.legs for n in numbers):
        yield error(f"legs are numbered {numbers}; each must be distinct, 1..{medium.legs}")
    for cable in legs[1:]:
        if cable.medium != medium:
            yield error(f"leg {cable.id} uses {cable.medium.name}, its first leg {medium.name}")
        if cable.length_m != length or cable.part != first.part:
            yield error(f"leg {cable.id} is {cable.part} ({cable.length_m:g} m), its first leg {first.part} "
                        f"({length:g} m)")
        if (cable.z.device, switch_connector(cable.z.port, medium.legs)) != connector:
            yield error(f"leg {cable.id} ends at {cable.z.device}:{cable.z.port}, another switch connector than "
                        f"{first.z.device}:{first.z.port}")
