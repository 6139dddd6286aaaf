"""Verify a cabled InfiniBand fabric against the plan: parse ``ibnetdiscover`` output, compare it with ib_fabric().

Pure logic, no I/O: the CLI reads the file and prints the report.

``parse_ibnetdiscover`` reads both forms rdma-core's ibnetdiscover prints (infiniband-diags/ibnetdiscover.c):

- the default topology form: a record per node (``switchguid=``/``caguid=`` lines, then ``Switch N "S-<guid>" #
  "<NodeDescription>" base port 0 lid L lmc M`` or ``Ca N "H-<guid>" # "<NodeDescription>"``) followed by one line
  per connected port: ``[p] "S-<guid>"[rp] # "<remote description>" lid L 4xNDR`` on switches,
  ``[p](<port guid>) "S-<guid>"[rp] # lid L lmc M "<remote description>" lid L 4xNDR`` on CAs;
- the ports form (``ibnetdiscover -p``): a line per port, ``SW 21 32 0x<port guid> 4x NDR - CA 17 1 0x<port guid>
  ( 'leaf08' - 'gpu001 mlx5_0' )``, or without the ``- ...`` part for a port that is not connected.

Both print every link from both ends; the parser keeps each physical link once. Lines it cannot read are
errors with their line numbers, never skipped.

``compare`` matches discovered devices to planned nodes by GUID when the plan has GUIDs (a planned GUID found
with another NodeDescription is a renamed device, its cabling still checked), else by NodeDescription, and
reports per planned cable: missing (both planned ports dark), miswired (a planned port connected elsewhere: what
each planned end is connected to instead), running at another width or speed; and unexpected links (found
between ports the plan does not use). Two swapped cables are reported as exactly those two miswired cables.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from fabricgen.core.errors import FabricgenError
from fabricgen.features.infiniband.view import IbFabric, IbLink, IbNode
from fabricgen.model.cluster import Fabric
from fabricgen.model.hardware import Speed

SWITCH, HCA, ROUTER = "switch", "hca", "router"
TOPOLOGY_FORM, PORTS_FORM = "topology", "ports"


class VerifyError(FabricgenError):
    """The verification cannot run: no InfiniBand fabric to check, or the discovery cannot be read."""


class IbSpeed(StrEnum):
    """Per-lane speeds ibnetdiscover prints (ibnetdiscover.c dump_linkspeed*_compat; XDR from newer releases)."""

    SDR = "SDR"
    DDR = "DDR"
    QDR = "QDR"
    FDR10 = "FDR10"
    FDR = "FDR"
    EDR = "EDR"
    HDR = "HDR"
    NDR = "NDR"
    XDR = "XDR"


# -- discovered fabric -----------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Device:
    """A node of the discovered fabric. ``key`` is unique in one discovery: ``S-<node guid>`` / ``H-<node guid>``
    in the topology form; in the ports form (which prints port GUIDs only) ``S-<port guid>`` for a switch and
    ``H-<lowest port guid>`` for a CA, whose ports are grouped by NodeDescription."""

    key: str
    kind: str  # switch | hca | router | unknown
    description: str
    node_guid: int | None  # None in the ports form
    port_guids: tuple[tuple[int, int], ...]  # (port, port GUID), sorted
    ports: int  # ports of the node (topology form) or the highest port number seen (ports form)
    line: int  # line of its record (topology form), else the first line that shows it

    def port_guid(self, port: int) -> int | None:
        return dict(self.port_guids).get(port)

    @property
    def guid(self) -> int | None:
        """The GUID that names the device: node GUID, else the port GUID of port 0 (switch) or 1 (CA)."""
        if self.node_guid is not None:
            return self.node_guid
        ports = dict(self.port_guids)
        return ports.get(0, ports.get(1, min(ports.values(), default=None)))


@dataclass(frozen=True, slots=True, order=True)
class PortRef:
    """One end of a discovered link."""

    description: str
    port: int
    key: str

    def __str__(self) -> str:
        return f"{self.description}:{self.port}"


@dataclass(frozen=True, slots=True)
class FoundLink:
    """One physical link, once: ``a`` < ``z``; width ("4x") and speed ("NDR") as ibnetdiscover printed them."""

    a: PortRef
    z: PortRef
    width: str
    speed: str
    line: int

    @property
    def rate(self) -> str:
        return f"{self.width}{self.speed}"


@dataclass(frozen=True, slots=True, order=True)
class ParseError:
    line: int
    message: str
    text: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}: {self.text!r}"


@dataclass(frozen=True)
class Discovered:
    form: str  # topology | ports
    devices: tuple[Device, ...]
    links: tuple[FoundLink, ...]
    errors: tuple[ParseError, ...]

    def device(self, key: str) -> Device:
        return next(d for d in self.devices if d.key == key)


# -- parsing ---------------------------------------------------------------------------------------------------
_HEX = r"[0-9a-fA-F]+"
_WIDTH = r"(?P<width>\d+x|\?\?)"
_SPEED = r"(?P<speed>[A-Z][A-Za-z0-9]*|\?\?\?)"
_RATE = re.compile(rf"^{_WIDTH}{_SPEED}$")
_IGNORED = re.compile(
    r"^(?:#.*|(?:vendid|devid)=0x[0-9a-fA-F]+\s*|sysimgguid=0x[0-9a-fA-F]+(?:\s+#.*)?|Chassis \d+.*|"
    r"Non-Chassis Nodes\s*|Hostname: .*)$"
)
_GUID_LINE = re.compile(rf"^(?P<kind>switch|ca|rt)guid=0x(?P<guid>{_HEX})(?:\((?P<port>{_HEX})\))?(?:\s+#.*)?$")
_HEADER = re.compile(
    r'^(?P<type>Switch|Ca|Rt)\s+(?P<ports>\d+)\s+"(?P<id>[^"]+)"\s+#\s+"(?P<desc>.*)"(?P<rest>.*)$'
)
_SWITCH_REST = re.compile(r"^\s+(?:base|enhanced) port 0 lid \d+ lmc \d+\s*$")
_CA_REST = re.compile(r"^(?:\s+\(scp\))?\s*$")
_PORT = re.compile(
    rf"^\[(?P<port>\d+)\](?:\[ext \d+\])?(?:\((?P<pguid>{_HEX})\))?\s*"
    rf'"(?P<rid>[^"]+)"\[(?P<rport>\d+)\](?:\[ext \d+\])?\s*(?:\((?P<rguid>{_HEX})\))?\s*#\s*(?P<comment>.*)$'
)
_TAIL = r"(?P<tail>(?: s=\d+ w=\d+ v=\d+)?(?: slot \d+| \(scp\))?)\s*$"
_SWITCH_COMMENT = re.compile(rf'^"(?P<desc>.*)" lid \d+ (?P<rate>\S+){_TAIL}')
_CA_COMMENT = re.compile(rf'^lid \d+ lmc \d+ "(?P<desc>.*)" lid \d+ (?P<rate>\S+){_TAIL}')
_NT = r"SW|CA|RT|\?\?"
_PORTS_LINE = re.compile(
    rf"^(?P<t>{_NT})\s+(?P<lid>\d+)\s+(?P<port>\d+)\s+0x(?P<guid>{_HEX})\s+{_WIDTH}\s+{_SPEED}\s+"
    rf"(?:-\s+(?P<rt>{_NT})\s+\d+\s+(?P<rport>\d+)\s+0x(?P<rguid>{_HEX})\s+\(\s*'(?P<desc>.*)' - '(?P<rdesc>.*)'\s*\)"
    r"|'(?P<udesc>.*)')\s*$"
)
_PORTS_START = re.compile(rf"^(?:{_NT})\s+\d+\s+\d+\s+0x")
_ID_GUID = re.compile(r"^[SHR]-(?P<guid>[0-9a-fA-F]{16})$")
_KINDS = {"Switch": SWITCH, "Ca": HCA, "Rt": ROUTER, "SW": SWITCH, "CA": HCA, "RT": ROUTER,
          "switch": SWITCH, "ca": HCA, "rt": ROUTER, "S": SWITCH, "H": HCA, "R": ROUTER}


@dataclass
class _Dev:
    key: str
    kind: str
    description: str
    line: int
    node_guid: int | None = None
    port_guids: dict[int, int] = field(default_factory=dict)
    ports: int = 0
    header: int = 0  # line of its own record (topology form), 0 when only seen from the far end


@dataclass
class _Builder:
    devices: dict[str, _Dev] = field(default_factory=dict)
    links: dict[tuple[tuple[str, int], tuple[str, int]], tuple[str, str, int]] = field(default_factory=dict)
    owner: dict[tuple[str, int], tuple[tuple[str, int], int]] = field(default_factory=dict)
    errors: list[ParseError] = field(default_factory=list)

    def device(self, key: str, kind: str, description: str, line: int) -> _Dev:
        dev = self.devices.get(key)
        if dev is None:
            dev = self.devices[key] = _Dev(key, kind, description, line)
        return dev

    def link(self, a: tuple[str, int], z: tuple[str, int], width: str, speed: str, line: int, text: str) -> None:
        """Record a link seen from one end; the far end's own line must agree."""
        pair = (a, z) if a <= z else (z, a)
        for end, other in ((a, z), (z, a)):
            seen = self.owner.get(end)
            if seen is None:
                self.owner[end] = (other, line)
            elif seen[0] != other:
                self.errors.append(ParseError(line, f"port {end[0]}[{end[1]}] is shown connected to "
                                                    f"{other[0]}[{other[1]}] here but to {seen[0][0]}"
                                                    f"[{seen[0][1]}] on line {seen[1]}", text))
                return
        self.links.setdefault(pair, (width, speed, line))

    def discovered(self, form: str) -> Discovered:
        devices = tuple(sorted(
            (Device(d.key, d.kind, d.description, d.node_guid, tuple(sorted(d.port_guids.items())),
                    d.ports, d.line) for d in self.devices.values()),
            key=lambda d: (d.description, d.key)))
        names = {d.key: d.description for d in devices}
        links = []
        for (a, z), (width, speed, line) in self.links.items():
            ends = sorted((PortRef(names[a[0]], a[1], a[0]), PortRef(names[z[0]], z[1], z[0])))
            links.append(FoundLink(ends[0], ends[1], width, speed, line))
        if not devices and not self.errors:
            self.errors.append(ParseError(1, "no ibnetdiscover records (empty output?)", ""))
        return Discovered(form, devices, tuple(sorted(links, key=lambda f: (f.a, f.z))),
                          tuple(sorted(self.errors)))


def parse_ibnetdiscover(text: str) -> Discovered:
    """Devices and links of ibnetdiscover output, default or ``-p`` form (detected from the first record)."""
    lines = text.splitlines()
    for line in lines:
        line = line.strip()
        if _PORTS_START.match(line):
            return _parse_ports(lines)
        if _HEADER.match(line) or _GUID_LINE.match(line) or _PORT.match(line):
            break
    return _parse_topology(lines)


def _parse_topology(lines: list[str]) -> Discovered:
    b = _Builder()
    pending: tuple[str, int, int | None] | None = None  # (kind, node guid, port guid) of the next record
    current: _Dev | None = None
    for number, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line:
            current = None
            continue
        if _IGNORED.match(line):
            continue
        if m := _GUID_LINE.match(line):
            pending = (_KINDS[m["kind"]], int(m["guid"], 16), int(m["port"], 16) if m["port"] else None)
            continue
        if m := _HEADER.match(line):
            current = _header(b, m, pending, number, raw)
            pending = None
            continue
        if m := _PORT.match(line):
            if current is None:
                b.errors.append(ParseError(number, "port line outside a node record", raw))
                continue
            _port_line(b, current, m, number, raw)
            continue
        b.errors.append(ParseError(number, "not an ibnetdiscover topology line", raw))
    return b.discovered(TOPOLOGY_FORM)


def _header(b: _Builder, m: re.Match[str], pending: tuple[str, int, int | None] | None, number: int,
            raw: str) -> _Dev:
    kind = _KINDS[m["type"]]
    if not (_SWITCH_REST if kind == SWITCH else _CA_REST).match(m["rest"]):
        b.errors.append(ParseError(number, f"unexpected text after the {m['type']} NodeDescription", raw))
    key = m["id"]
    dev = b.device(key, kind, m["desc"], number)
    if dev.header:
        b.errors.append(ParseError(number, f"a second record for {key} (the first is on line {dev.header})", raw))
        return dev
    dev.kind, dev.description, dev.header, dev.ports = kind, m["desc"], number, int(m["ports"])
    dev.line = number  # the device's own record, rather than the first port line that names it
    id_guid = _ID_GUID.match(key)
    if pending is not None and pending[0] == kind:
        dev.node_guid = pending[1]
        if pending[2] is not None:
            dev.port_guids[0] = pending[2]
    elif id_guid:
        dev.node_guid = int(id_guid["guid"], 16)
    return dev


def _port_line(b: _Builder, current: _Dev, m: re.Match[str], number: int, raw: str) -> None:
    comment = m["comment"]
    c = _CA_COMMENT.match(comment) or _SWITCH_COMMENT.match(comment)
    rate = _RATE.match(c["rate"]) if c else None
    if c is None or rate is None:
        b.errors.append(ParseError(number, "cannot read the remote NodeDescription, lid and width/speed", raw))
        return
    port, rport, rid = int(m["port"]), int(m["rport"]), m["rid"]
    if m["pguid"]:
        current.port_guids[port] = int(m["pguid"], 16)
    remote = b.device(rid, _KINDS.get(rid[:1], "unknown"), c["desc"], number)
    if not remote.header:
        remote.description = c["desc"]
        if remote.node_guid is None and (id_guid := _ID_GUID.match(rid)):
            remote.node_guid = int(id_guid["guid"], 16)  # ibnetdiscover names nodes by their node GUID
    if m["rguid"]:
        remote.port_guids[rport] = int(m["rguid"], 16)
    b.link((current.key, port), (rid, rport), rate["width"], rate["speed"], number, raw)


@dataclass(frozen=True, slots=True)
class _PortsEnd:
    kind: str
    port: int
    guid: int
    description: str


def _parse_ports(lines: list[str]) -> Discovered:
    b = _Builder()
    rows: list[tuple[int, str, _PortsEnd, _PortsEnd | None, str, str]] = []
    for number, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = _PORTS_LINE.match(line)
        if m is None:
            b.errors.append(ParseError(number, "not an ibnetdiscover -p line", raw))
            continue
        local = _PortsEnd(_KINDS.get(m["t"], "unknown"), int(m["port"]), int(m["guid"], 16),
                          m["desc"] if m["rt"] else m["udesc"])
        remote = (_PortsEnd(_KINDS.get(m["rt"], "unknown"), int(m["rport"]), int(m["rguid"], 16), m["rdesc"])
                  if m["rt"] else None)
        rows.append((number, raw, local, remote, m["width"], m["speed"]))
    keys = _group_ports([(number, end) for number, _, local, remote, _, _ in rows
                         for end in (local, remote) if end is not None])
    for number, _, local, remote, _, _ in rows:
        for end in (local, remote):
            if end is not None:
                dev = b.device(keys[(end.kind, end.guid, end.port)], end.kind, end.description, number)
                dev.port_guids[end.port] = end.guid
                dev.ports = max(dev.ports, end.port)
    for number, raw, local, remote, width, speed in rows:
        if remote is not None:
            b.link((keys[(local.kind, local.guid, local.port)], local.port),
                   (keys[(remote.kind, remote.guid, remote.port)], remote.port), width, speed, number, raw)
    return b.discovered(PORTS_FORM)


def _group_ports(ends: Iterable[tuple[int, _PortsEnd]]) -> dict[tuple[str, int, int], str]:
    """Device keys for the ports form: a switch's ports share its port GUID; a CA's ports have their own GUIDs,
    so they are grouped by NodeDescription, and two ports with one number and one description are two CAs."""
    first: dict[tuple[str, int, int], _PortsEnd] = {}
    for _, end in ends:
        first.setdefault((end.kind, end.guid, end.port), end)
    keys: dict[tuple[str, int, int], str] = {}
    groups: dict[tuple[str, str], list[_PortsEnd]] = defaultdict(list)
    for ident, end in first.items():
        if end.kind == SWITCH:
            keys[ident] = f"S-{end.guid:016x}"
        else:
            groups[(end.kind, end.description)].append(end)
    for (kind, _), group in groups.items():
        devices: list[dict[int, int]] = []
        for end in sorted(group, key=lambda e: (e.guid, e.port)):
            target = next((d for d in devices if end.port not in d), None)
            if target is None:
                target = {}
                devices.append(target)
            target[end.port] = end.guid
        for ports in devices:
            key = f"{'R' if kind == ROUTER else 'H'}-{min(ports.values()):016x}"
            for port, guid in ports.items():
                keys[(kind, guid, port)] = key
    return keys


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


def report_to_json(report: Report) -> dict[str, Any]:
    """The report for tools: summary counts and every finding, in the report's (deterministic) order."""

    def ends(items: Iterable[End | None]) -> list[dict[str, Any] | None]:
        return [{"device": e.device, "port": e.port} if e else None for e in items]

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
