"""A discovered InfiniBand fabric: ``parse_ibnetdiscover`` reads both forms rdma-core's ibnetdiscover prints
(infiniband-diags/ibnetdiscover.c):

- the default topology form: a record per node (``switchguid=``/``caguid=`` lines, then ``Switch N "S-<guid>" #
  "<NodeDescription>" base port 0 lid L lmc M`` or ``Ca N "H-<guid>" # "<NodeDescription>"``) followed by one line
  per connected port: ``[p] "S-<guid>"[rp] # "<remote description>" lid L 4xNDR`` on switches,
  ``[p](<port guid>) "S-<guid>"[rp] # lid L lmc M "<remote description>" lid L 4xNDR`` on CAs;
- the ports form (``ibnetdiscover -p``): a line per port, ``SW 21 32 0x<port guid> 4x NDR - CA 17 1 0x<port guid>
  ( 'leaf08' - 'gpu001 mlx5_0' )``, or without the ``- ...`` part for a port that is not connected.

Both print every link from both ends; the parser keeps each physical link once. Lines it cannot read are
errors with their line numbers, never skipped. Pure logic, no I/O.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

SWITCH, HCA, ROUTER = "switch", "hca", "router"
TOPOLOGY_FORM, PORTS_FORM = "topology", "ports"


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
