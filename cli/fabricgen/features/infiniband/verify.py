"""``fabricgen verify``: a cabled InfiniBand fabric (as :mod:`.discovery` parsed it) against the plan.

Pure logic, no I/O: the CLI reads the file and prints the report.

``compare`` matches discovered devices to planned nodes by GUID when the plan has GUIDs (a planned GUID found
with another NodeDescription is a renamed device, its cabling still checked), else by NodeDescription, and
reports per planned cable: missing (both planned ports dark), miswired (a planned port connected elsewhere: what
each planned end is connected to instead), running at another width or speed; and unexpected links (found
between ports the plan does not use). Two swapped cables are reported as exactly those two miswired cables.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from fabricgen.features.infiniband.discovery import (
    _RATE,
    SWITCH,
    Device,
    Discovered,
    FoundLink,
)
from fabricgen.features.infiniband.view import IbFabric, IbLink, IbNode, hca_ports
from fabricgen.model.cluster import Fabric
from fabricgen.model.hardware import Speed
from fabricgen.model.topology import FabricTopology, Topology


# -- comparison ------------------------------------------------------------------------------------------------
class MismatchKind(StrEnum):
    UNPARSED = "unparsed"  # a line of the discovery that is not ibnetdiscover output
    DUPLICATE = "duplicate"  # several discovered devices report one NodeDescription
    RENAMED = "renamed"  # planned GUID found with another NodeDescription (misconfigured NodeDescription)
    GUID_MISMATCH = "guid-mismatch"  # planned NodeDescription found with another GUID than planned
    MISSING_DEVICE = "missing-device"  # planned device not found at all
    UNEXPECTED_DEVICE = "unexpected-device"  # discovered device the plan does not have
    MISWIRED = "miswired"  # a planned port connected somewhere else
    MISSING = "missing"  # planned link not found, both its ports dark
    UNEXPECTED = "unexpected"  # discovered link between ports the plan does not use
    WRONG_WIDTH = "wrong-width"  # link found as planned but at another width (e.g. 2x for 4x)
    WRONG_SPEED = "wrong-speed"  # link found as planned but at another speed (e.g. HDR for NDR)


_ORDER = {kind: i for i, kind in enumerate(MismatchKind)}


@dataclass(frozen=True, slots=True, order=True)
class End:
    """A port as the report names it: the planned NodeDescription (or the one found for devices the plan does
    not have, with its GUID when that name is ambiguous) and the port number."""

    device: str
    port: int

    def __str__(self) -> str:
        return f"{self.device}:{self.port}"


@dataclass(frozen=True, slots=True)
class Mismatch:
    """One difference between the plan and the discovered fabric.

    Link findings carry the planned cable (``cable`` id, ``label``) and its ends ``planned`` = (a, z);
    ``found`` is, per planned end, what that port is connected to instead (None: nothing), or for an unexpected
    link its two ends. ``expected``/``actual`` hold the rate (wrong-width/-speed), NodeDescription (renamed) or
    GUID (guid-mismatch, duplicate); ``device`` names the device of device findings; ``line`` is the first line of
    the discovery that shows it.
    """

    kind: MismatchKind
    message: str
    cable: str = ""
    label: str = ""
    planned: tuple[End, ...] = ()
    found: tuple[End | None, ...] = ()
    device: str = ""
    expected: str = ""
    actual: str = ""
    line: int | None = None

    def sort_key(self) -> tuple[int, str, str, tuple[End, ...], tuple[tuple[str, int], ...], int]:
        found = tuple((e.device, e.port) if e else ("", -1) for e in self.found)
        return (_ORDER[self.kind], self.cable, self.device, self.planned, found, self.line or 0)

    @property
    def planned_text(self) -> str:
        if self.planned:
            text = " <-> ".join(map(str, self.planned))
            return f"{text} at {self.expected}" if self.expected else text
        extra = [self.expected] if self.expected and self.expected != self.device else []
        return " ".join([self.device, *extra]).strip() or "-"

    @property
    def found_text(self) -> str:
        if self.kind is MismatchKind.UNEXPECTED:
            return " <-> ".join(str(e) for e in self.found)
        if self.kind is MismatchKind.MISWIRED:
            return "; ".join(f"{p} <-> {f or 'nothing'}" for p, f in zip(self.planned, self.found, strict=True))
        if self.kind is MismatchKind.MISSING:
            return "not connected"
        if self.kind is MismatchKind.MISSING_DEVICE:
            return "not found"
        if self.kind is MismatchKind.UNPARSED:
            return f"line {self.line}: {self.actual}"
        return self.actual or "-"


@dataclass(frozen=True)
class Report:
    fabric: str
    findings: tuple[Mismatch, ...]
    planned_links: int
    found_links: int
    matched_links: int  # planned links found between the planned ports (whatever their rate)
    planned_devices: int
    found_devices: int

    @property
    def clean(self) -> bool:
        return not self.findings

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for finding in self.findings:
            out[finding.kind.value] = out.get(finding.kind.value, 0) + 1
        return out

    def of_kind(self, kind: MismatchKind) -> tuple[Mismatch, ...]:
        return tuple(f for f in self.findings if f.kind is kind)


def normalize_rate(width: str, speed: str) -> tuple[str, str]:
    """("4", "ndr") -> ("4x", "NDR")."""
    width = width.strip().lower()
    return (width if width.endswith("x") else f"{width}x"), speed.strip().upper()


def link_rate(speed: Speed, speed_as: str | None = None) -> tuple[str, str]:
    """(width, speed) ibnetdiscover prints for a link planned at ``speed``: NDR -> ("4x", "NDR"), NDR200 ->
    ("2x", "NDR"), HDR100 -> ("2x", "HDR"); ``speed_as`` replaces the speed (ibsim 0.10 knows no NDR: "HDR")."""
    m = _RATE.match(speed.ibsim) if speed.ibsim else None
    width, base = (m["width"], m["speed"]) if m else (f"{speed.lanes}x", speed.name)
    return normalize_rate(width, speed_as or base)


def planned_rates(fabric: Fabric, speed_as: str | None = None) -> dict[str, tuple[str, str]]:
    """Expected (width, speed) per planned link speed name (host links at the fabric speed, uplinks at theirs)."""
    return {s.name: link_rate(s, speed_as) for s in (fabric.speed, fabric.uplink_speed)}


@dataclass(frozen=True, slots=True)
class _Resolved:
    """A found link with its ends as (identity, port) and as the report names them."""

    a: tuple[str, int]
    z: tuple[str, int]
    a_end: End
    z_end: End
    link: FoundLink
    index: int

    def other(self, near: tuple[str, int]) -> tuple[str, int]:
        return self.z if near == self.a else self.a

    def far(self, near: tuple[str, int]) -> End:
        return self.z_end if near == self.a else self.a_end


def _guid_text(guid: int | None) -> str:
    return f"{guid:#018x}" if guid is not None else "unknown GUID"


def _comparable(node: IbNode, dev: Device) -> tuple[int, int] | None:
    """(planned, found) GUIDs comparable for this pair, or None when one side does not know it."""
    if node.node_guid is not None and dev.node_guid is not None:
        return node.node_guid, dev.node_guid
    port = 0 if dev.kind == SWITCH and dev.port_guid(0) is not None else 1
    found = dev.port_guid(port) if dev.port_guid(port) is not None else dev.guid
    planned = node.port_guid if node.port_guid is not None else node.node_guid
    return (planned, found) if planned is not None and found is not None else None


class _Matcher:
    """Discovered device key -> identity: the planned NodeDescription it stands for, or its own name."""

    def __init__(self, planned: IbFabric, found: Discovered) -> None:
        self.findings: list[Mismatch] = []
        self.identity: dict[str, str] = {}
        self.display: dict[str, str] = {}
        by_desc: dict[str, list[Device]] = defaultdict(list)
        by_guid: dict[int, list[Device]] = defaultdict(list)
        for dev in found.devices:
            by_desc[dev.description].append(dev)
            for guid in {dev.node_guid, *(g for _, g in dev.port_guids)} - {None}:
                assert guid is not None
                by_guid[guid].append(dev)
        for desc, devs in sorted(by_desc.items()):
            if len(devs) > 1:
                listed = ", ".join(_guid_text(d.guid) for d in devs)
                self.findings.append(Mismatch(
                    MismatchKind.DUPLICATE, f"{len(devs)} devices report NodeDescription {desc!r} (GUIDs {listed}): "
                    "set each device's NodeDescription (switch name; host name + rdma-ndd)",
                    device=desc, actual=listed, line=min(d.line for d in devs)))
        unmatched: list[IbNode] = []
        for node in planned.nodes:
            planned_guids = [g for g in (node.node_guid, node.port_guid) if g is not None]
            match = next((d for g in planned_guids for d in by_guid.get(g, []) if d.key not in self.identity), None)
            if match is None:
                unmatched.append(node)
                continue
            self.identity[match.key] = node.description
            if match.description != node.description:
                self.findings.append(Mismatch(
                    MismatchKind.RENAMED, f"{node.kind} planned as {node.description!r} ({_guid_text(match.guid)}) "
                    f"reports NodeDescription {match.description!r}: set it to {node.description!r}; its links "
                    "are checked as the planned device's", device=node.description, expected=node.description,
                    actual=match.description, line=match.line))
        for node in unmatched:
            devs = [d for d in by_desc.get(node.description, []) if d.key not in self.identity and d.kind == node.kind]
            if not devs:
                self.findings.append(Mismatch(
                    MismatchKind.MISSING_DEVICE, f"{node.kind} {node.description!r}"
                    + (f" ({_guid_text(node.node_guid)})" if node.node_guid is not None else "")
                    + " is not in the discovered fabric", device=node.description,
                    expected=_guid_text(node.node_guid) if node.node_guid is not None else ""))
            for dev in devs:
                self.identity[dev.key] = node.description
                pair = _comparable(node, dev)
                if pair is not None and pair[0] != pair[1]:
                    self.findings.append(Mismatch(
                        MismatchKind.GUID_MISMATCH, f"{node.description!r} reports GUID {_guid_text(pair[1])}, "
                        f"planned {_guid_text(pair[0])}: a replaced device or a stale GUID inventory",
                        device=node.description, expected=_guid_text(pair[0]), actual=_guid_text(pair[1]),
                        line=dev.line))
        names = {n.description for n in planned.nodes}
        for dev in found.devices:
            if dev.key in self.identity:
                self.display[dev.key] = self.identity[dev.key]
                continue
            self.identity[dev.key] = f"?{dev.key}"
            ambiguous = dev.description in names or len(by_desc[dev.description]) > 1
            self.display[dev.key] = f"{dev.description} [{_guid_text(dev.guid)}]" if ambiguous else dev.description
            self.findings.append(Mismatch(
                MismatchKind.UNEXPECTED_DEVICE, f"{dev.kind} {dev.description!r} ({_guid_text(dev.guid)}) is not "
                "in the plan", device=self.display[dev.key], actual=_guid_text(dev.guid), line=dev.line))


def compare(planned: IbFabric, found: Discovered, expected_width: str, expected_speed: str,
            *, rates: Mapping[str, tuple[str, str]] | None = None) -> Report:
    """Compare a discovered fabric with the plan.

    Every planned link should run at ``expected_width`` x ``expected_speed`` ("4x", "NDR"); ``rates`` overrides
    that per planned link speed name (``IbLink.speed``), for fabrics whose uplinks run at another speed
    (see ``planned_rates``).
    """
    default = normalize_rate(expected_width, expected_speed)
    expected = {name: normalize_rate(*rate) for name, rate in (rates or {}).items()}
    findings = [Mismatch(MismatchKind.UNPARSED, e.message, actual=e.text, line=e.line) for e in found.errors]
    matcher = _Matcher(planned, found)
    findings += matcher.findings

    resolved = [_Resolved((matcher.identity[f.a.key], f.a.port), (matcher.identity[f.z.key], f.z.port),
                          End(matcher.display[f.a.key], f.a.port), End(matcher.display[f.z.key], f.z.port), f, i)
                for i, f in enumerate(found.links)]
    found_at: dict[tuple[str, int], list[_Resolved]] = defaultdict(list)
    for r in resolved:
        found_at[r.a].append(r)
        if r.z != r.a:
            found_at[r.z].append(r)
    planned_at = {end: link for link in planned.links for end in ((link.a, link.a_port), (link.z, link.z_port))}

    consumed: set[int] = set()
    matched = 0
    for link in planned.links:
        a, z = (link.a, link.a_port), (link.z, link.z_port)
        ends = (End(*a), End(*z))
        exact = [r for r in found_at.get(a, ()) if r.other(a) == z]
        if exact:
            matched += 1
            consumed.add(exact[0].index)
            findings += _rate_findings(link, ends, exact[0].link, expected.get(link.speed, default))
            continue
        at_a, at_z = found_at.get(a, []), found_at.get(z, [])
        if not at_a and not at_z:
            findings.append(Mismatch(MismatchKind.MISSING, f"{_cable(link)}: {ends[0]} <-> {ends[1]} not found; "
                                     "both ports are dark", link.cable, link.label, ends, (None, None)))
            continue
        consumed.update(r.index for r in (*at_a, *at_z))
        got = (at_a[0].far(a) if at_a else None, at_z[0].far(z) if at_z else None)
        notes = []
        for near, here in ((a, at_a), (z, at_z)):
            for r in here:
                owner = planned_at.get(r.other(near))
                hint = f" (planned for cable {owner.cable})" if owner is not None and owner is not link else ""
                notes.append(f"{End(*near)} <-> {r.far(near)}{hint}")
            if not here:
                notes.append(f"{End(*near)} <-> nothing")
        findings.append(Mismatch(
            MismatchKind.MISWIRED, f"{_cable(link)}: planned {ends[0]} <-> {ends[1]}; found " + ", ".join(notes),
            link.cable, link.label, ends, got, line=min((r.link.line for r in (*at_a, *at_z)), default=None)))
    for r in resolved:
        if r.index in consumed:
            continue
        findings.append(Mismatch(
            MismatchKind.UNEXPECTED, f"link {r.a_end} <-> {r.z_end} ({r.link.rate}) is not in the plan",
            found=(r.a_end, r.z_end), actual=r.link.rate, line=r.link.line))
    return Report(planned.name, tuple(sorted(findings, key=Mismatch.sort_key)), len(planned.links), len(found.links),
                  matched, len(planned.nodes), len(found.devices))


def _cable(link: IbLink) -> str:
    """``cable <id> (<rest of the label>)``: labels start with the cable id."""
    rest = link.label[len(link.cable):].strip() if link.label.startswith(link.cable) else link.label
    return f"cable {link.cable} ({rest})" if rest else f"cable {link.cable}"


def _rate_findings(link: IbLink, ends: tuple[End, End], found: FoundLink,
                   expected: tuple[str, str]) -> list[Mismatch]:
    width, speed = expected
    out = []
    if found.width != width:
        out.append(Mismatch(MismatchKind.WRONG_WIDTH, f"{_cable(link)}: {ends[0]} <-> {ends[1]} runs at "
                            f"{found.width} width, planned {width} ({found.rate}, planned {width}{speed})",
                            link.cable, link.label, ends, ends, expected=width, actual=found.width, line=found.line))
    if found.speed != speed:
        out.append(Mismatch(MismatchKind.WRONG_SPEED, f"{_cable(link)}: {ends[0]} <-> {ends[1]} runs at "
                            f"{found.speed}, planned {speed} ({found.rate}, planned {width}{speed})",
                            link.cable, link.label, ends, ends, expected=speed, actual=found.speed, line=found.line))
    return out


def report_to_json(report: Report, where: Mapping[tuple[str, int], PortPlace] | None = None) -> dict[str, Any]:
    """The report for tools: summary counts and every finding, in the report's (deterministic) order; with
    ``where`` (port_locations) each end also carries where a technician finds it (rack, U, device, faceplate
    port), null for an end the plan does not cable."""
    places = where or {}

    def ends(items: Iterable[End | None]) -> list[dict[str, Any] | None]:
        return [{"device": e.device, "port": e.port, **_located(e)} if e else None for e in items]

    def _located(end: End) -> dict[str, Any]:
        if where is None:
            return {}
        place = places.get((end.device, end.port)) or places.get((end.device, -1))
        return {"location": place.as_json() if place else None}

    return {
        "fabric": report.fabric,
        "clean": report.clean,
        "summary": {
            "planned_links": report.planned_links,
            "found_links": report.found_links,
            "matched_links": report.matched_links,
            "planned_devices": report.planned_devices,
            "found_devices": report.found_devices,
            "findings": report.counts(),
        },
        "findings": [
            {
                "kind": f.kind.value,
                "cable": f.cable,
                "label": f.label,
                "planned": ends(f.planned),
                "found": ends(f.found),
                "device": f.device,
                "expected": f.expected,
                "actual": f.actual,
                "line": f.line,
                "message": f.message,
            }
            for f in report.findings
        ],
    }


@dataclass(frozen=True)
class PortPlace:
    """Where a technician finds a planned port: rack, U, device and faceplate port name (empty: the device)."""

    rack: str
    u: int
    device: str
    port: str = ""

    def __str__(self) -> str:
        return " ".join(part for part in (self.rack, f"U{self.u}", self.device, self.port) if part)

    def as_json(self) -> dict[str, Any]:
        return {"rack": self.rack, "u": self.u, "device": self.device, "port": self.port or None}


def port_locations(topology: Topology, ft: FabricTopology) -> dict[tuple[str, int], PortPlace]:
    """Where a technician finds each planned port, by the (NodeDescription, port) the report names it:
    ``M01 U1 compute-su01-leaf0 1/1`` (rack, U, device, faceplate name), ``L01 U2 hgx01 NIC0``; port -1 holds
    the device alone (``M01 U1 compute-su01-leaf0``), for ports and devices the plan does not cable."""
    hcas = hca_ports(topology, ft)
    out: dict[tuple[str, int], PortPlace] = {}
    for cable in topology.cables:
        if cable.fabric != ft.fabric.name:
            continue
        for end in (cable.a, cable.z):
            desc, port = hcas.get((end.device, end.port_number), (end.device, end.port_number))
            out[(desc, port)] = PortPlace(end.rack, end.u, end.device, end.port)
            out.setdefault((desc, -1), PortPlace(end.rack, end.u, desc))
    return out

