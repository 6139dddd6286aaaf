"""The cable plan against the compiled links: a cable per link and per port, lengths within reach, splitters
that are one object (one medium, connector and length for all legs; a cable-plug splitter alone in its cage),
cage-pair cables that keep every port on its lanes, every cable pluggable (cage-plugs), and the ports of a node's
twin-port cage on one transceiver (host-cage-optics)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator

from fabricgen.core.errors import Finding, Severity
from fabricgen.features.cabling.plan import switch_cage, switch_connector, switch_lane
from fabricgen.features.feature import fabric_error
from fabricgen.model.cabling import Cable
from fabricgen.model.hardware import HOST_SWITCH, SWITCH_SWITCH, serves_split_cage
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
    yield from breakout_fanout(topology)
    yield from host_cage_optics(topology)


def host_cage_optics(topology: Topology) -> Iterator[Finding]:
    """The ports of one node cage (a DGX twin-port OSFP) share its one transceiver: their cables must take the same
    part, no more of them than it has connectors. Two runs on either side of a medium's reach (one multimode, one
    single mode) would need two transceivers in one cage. An error per fabric, naming the first cages."""
    taken: dict[tuple[str, str], tuple[str, set[str], list[Cable]]] = {}
    for cable in topology.cables:
        optic = cable.a_optic
        if cable.tier != "node-leaf" or optic is None or optic.connections < 2:
            continue
        key = (cable.a.device, cable.a.cage or cable.a.port)
        _, parts, group = taken.setdefault(key, (cable.fabric, set(), []))
        parts.add(optic.part)
        group.append(cable)
    bad: dict[str, list[str]] = {}
    for (device, cage), (fabric, parts, group) in taken.items():
        connectors = min(c.a_optic.connections for c in group if c.a_optic is not None)
        if len(parts) > 1 or len(group) > connectors:
            ports = ", ".join(f"{c.a.port} {c.a_optic.part if c.a_optic else ''} {c.run_m:g} m" for c in group)
            bad.setdefault(fabric, []).append(f"{device} cage {cage} ({ports})")
    for ft in topology.fabrics:
        if found := bad.get(ft.fabric.name):
            yield fabric_error(
                ft.fabric, "host-cage-optics", f"fabrics.{ft.fabric.name}",
                f"{len(found)} node cages need two transceivers: {_examples(found)}; the ports of one twin-port cage "
                "share one transceiver",
                "place the node nearer its leaves so both runs take the same medium, or list one medium for both "
                "(catalog.media: host_optics)")


def breakout_fanout(topology: Topology) -> Iterator[Finding]:
    """One breakout is one harness whose LC legs fan out from one trunk: its legs (the lower-tier ends) lie in one
    row, in adjacent racks no farther apart than the fan-out its medium declares (``fanout_m``). An error per
    fabric, naming the first harnesses."""
    racks = {r.name: r for r in topology.cluster.facility.racks}
    width = topology.cluster.facility.rack_width_m
    legs: dict[str, list[Cable]] = {}
    for cable in topology.cables:
        if cable.leg and cable.tier != "node-leaf" and cable.medium.legs > 1:
            legs.setdefault(cable.physical, []).append(cable)
    bad: dict[str, list[str]] = {}
    for physical, group in legs.items():
        places = [racks[c.a.rack] for c in group]
        rows = sorted({r.row for r in places})
        spread = (max(r.index for r in places) - min(r.index for r in places)) * width
        fanout = group[0].medium.fanout_m
        if len(rows) > 1 or spread > fanout:
            where = f"rows {', '.join(rows)}" if len(rows) > 1 else f"{spread:g} m along row {rows[0]}"
            bad.setdefault(group[0].fabric, []).append(
                f"{physical} ({group[0].z.device}:{switch_cage(group[0].z.port)}) to "
                f"{', '.join(sorted({c.a.rack for c in group}))}: {where}, fan-out {fanout:g} m")
    for ft in topology.fabrics:
        if found := bad.get(ft.fabric.name):
            yield fabric_error(
                ft.fabric, "breakout-fanout", f"fabrics.{ft.fabric.name}",
                f"{len(found)} breakouts have legs their fan-out cannot reach: {_examples(found)}; one harness's "
                "legs must lie in adjacent racks of one row within its medium's fanout_m",
                "place the lower-tier switches of one breakout in one row (fabrics.<name>.placement or top-of-rack "
                "leaves, whose breakouts fill per row), or list a breakout with a longer fan-out (catalog.media: "
                "fanout_m, with its source)")


CAGE_EXAMPLES = 3  # cages named in a cage-plugs finding; the rest are counted


def cage_plugs(topology: Topology) -> Iterator[Finding]:
    """Every cable can be plugged and links: one plug per switch cage (two for a twin-port transceiver, one per
    connector), and in a cage split into logical ports (SN4700 QSFP-DD at 2 x 200G or 4 x 100G) a straight plug
    that does not serve every port (a QSFP56/QSFP28 cable drives lanes 0-3 only) carries the first port of its
    connector, never another. A splitter, a breakout and a cage-pair cable are one plug. An error per fabric,
    naming the first cages."""
    models = {sw.name: sw.model for ft in topology.fabrics for sw in ft.switches}
    plugs: dict[tuple[str, str], set[str]] = {}
    room: dict[tuple[str, str], int] = {}
    fabric_of: dict[tuple[str, str], str] = {}
    stranded: dict[str, dict[str, str]] = {}  # fabric -> cable id -> the first end its plug does not drive
    splits: dict[tuple[str, str, str], int] = {}  # (switch model, cage, speed) -> logical ports: a few hundred
    for cable in topology.cables:
        ends = ((cable.z, cable.z_optic),) if cable.tier == "node-leaf" else ((cable.a, cable.a_optic),
                                                                               (cable.z, cable.z_optic))
        kind = HOST_SWITCH if cable.tier == "node-leaf" else SWITCH_SWITCH
        for end, optic in ends:
            cage = (end.device, switch_cage(end.port))
            plugs.setdefault(cage, set()).add(cable.physical)
            connectors = optic.connections if optic is not None else 1
            room[cage] = max(room.get(cage, 1), connectors)
            fabric_of[cage] = cable.fabric
            if cable.leg:
                continue
            model = models[end.device]
            split = splits.get((model.name, cage[1], cable.speed), 0)
            if not split:
                split = splits[model.name, cage[1], cable.speed] = model.cage_group(int(cage[1])).per_cage(cable.speed)
            if (split > connectors
                    and not serves_split_cage(cable.medium, end.form_factor, cable.speed, kind, split)
                    and (switch_lane(end.port) - 1) % (split // connectors)):
                stranded.setdefault(cable.fabric, {}).setdefault(cable.id, f"{cable.id} at {end.device}:{end.port}")
    full: dict[str, list[str]] = {}
    over = [(cage, physical) for cage, physical in plugs.items() if len(physical) > room[cage]]
    for cage, physical in sorted(over, key=lambda item: (item[0][0], int(item[0][1]) if item[0][1].isdigit() else 0,
                                                         item[0][1])):
        full.setdefault(fabric_of[cage], []).append(f"{cage[0]} cage {cage[1]} ({len(physical)} cables)")
    hint = ("run those cages unsplit, place one link per cage, or cable them with a splitter, breakout or cage-pair "
            "cable the catalog lists (catalog.media: legs, cage_pair)")
    for ft in topology.fabrics:
        cages, ports = full.get(ft.fabric.name), list(stranded.get(ft.fabric.name, {}).values())
        if cages:
            yield fabric_error(
                ft.fabric, "cage-plugs", ft.fabric.name,
                f"{len(cages)} switch cages get more plugs than they take: {_examples(cages)}; one straight cable "
                "per logical port of a split cage cannot be plugged", hint)
        if ports:
            yield fabric_error(
                ft.fabric, "cage-plugs", ft.fabric.name,
                f"{len(ports)} straight cables end on a port their plug does not drive: {_examples(ports)}; a "
                "QSFP56/QSFP28 plug in a split QSFP-DD cage carries its first port only", hint)


def _examples(items: list[str]) -> str:
    more = f" and {len(items) - CAGE_EXAMPLES} more" if len(items) > CAGE_EXAMPLES else ""
    return ", ".join(items[:CAGE_EXAMPLES]) + more


def _shared_plug_cages(cables: Iterable[Cable], plugs: dict[tuple[str, str], str]) -> Iterator[Finding]:
    """A DAC or AOC splitter's switch plug takes the whole cage: no other physical cable may end in it."""
    for cable in cables:
        for device, port in ((cable.a.device, cable.a.port), (cable.z.device, cable.z.port)):
            owner = plugs.get((device, switch_cage(port)))
            if owner is not None and cable.physical != owner:
                yield Finding(Severity.ERROR, "cable-splitter", owner, f"plugs into the whole cage "
                              f"{switch_cage(port)} of {device}, but {cable.id} also ends there ({port})")


def _cage_pair(physical: str, lanes: list[Cable]) -> Iterator[Finding]:
    """One cage-pair cable: its links join the same two cages, each on the same port (lanes) at both ends."""
    first = lanes[0]
    cages = (first.a.device, switch_cage(first.a.port), first.z.device, switch_cage(first.z.port))
    for cable in lanes:
        if (cable.a.device, switch_cage(cable.a.port), cable.z.device, switch_cage(cable.z.port)) != cages:
            yield Finding(Severity.ERROR, "cable-splitter", physical, f"link {cable.id} leaves the cage pair "
                          f"{cages[0]}:{cages[1]} - {cages[2]}:{cages[3]}")
        if not switch_lane(cable.a.port) == switch_lane(cable.z.port) == cable.leg:
            yield Finding(Severity.ERROR, "cable-splitter", physical, f"link {cable.id} joins {cable.a.port} to "
                          f"{cable.z.port} as lane {cable.leg}: a cage-pair cable keeps each port on its lanes")
        if cable.medium != first.medium or cable.part != first.part:
            yield Finding(Severity.ERROR, "cable-splitter", physical, f"link {cable.id} is {cable.part}, its first "
                          f"link {first.part}")


def _splitter(physical: str, legs: list[Cable]) -> Iterator[Finding]:
    """One physical splitter: its legs (cables sharing ``physical``) agree on what is one object."""
    first = legs[0]
    medium, length = first.medium, first.length_m
    connector = (first.z.device, switch_connector(first.z.port, medium.legs))

    def error(message: str) -> Finding:
        return Finding(Severity.ERROR, "cable-splitter", physical, message)

    if medium.legs < 2 and first.speed in medium.cage_pair:
        yield from _cage_pair(physical, legs)
        return
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
