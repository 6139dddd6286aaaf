"""The EOS CLI (``<switch>.cfg``, the configuration a switch is loaded with) read back into the routing an Arista
switch runs (``Nos.routing``): what ``fabricgen lab`` configures FRR from, so it reads only the artifact, never the
model or the AVD structured config it was rendered from. EOS's defaults for what the file leaves unset are the
``routing`` block of ``eos.yaml`` (with their sources). Every problem of one file is reported at once.

Read: ``ip routing`` (EOS routes nothing without it); ``interface Ethernet<cage>[/<lane>]`` (``description``,
``shutdown``, ``mtu``, ``speed``, ``no switchport`` + ``ip address``, or ``switchport access vlan``), ``interface
Loopback0``, ``interface Vlan<id>`` (``ip address`` and ``ip address ... secondary``, ``mtu``, ``shutdown``),
``vlan <id>``; ``router bgp`` (``router-id``, ``timers bgp``, ``maximum-paths``, ``[no] bgp bestpath
as-path multipath-relax``, ``neighbor`` ``remote-as``/``description``/``shutdown``/``timers``/``peer group``/
``allowas-in``, ``address-family ipv4`` ``network`` and ``redistribute connected``). Management1 (VRF MGMT) is not
part of the fabric's routing. A port gets the name EOS's own Linux kernel gives it (Ethernet33/1 -> et33_1, Vlan100
-> vlan100): Linux interface names hold no "/".

The front-panel cage of a port (fabricgen's ``<cage>`` or ``<cage>/<n>``) is not in an EOS name alone:
Ethernet1/1 is a whole 8-lane cage at ``speed 400g-8`` and the first of two ports at ``400g-4``, but also the whole
of a 4-lane cage at ``400g-4``. fabricgen writes the port into every description (``peer:port (port 1/2, cable 3
m)``); the reader takes it from there and checks it against the name and speed (the n-th port of a split cage
starts at lane (n-1) x its lanes + 1). An Ethernet interface that is ``shutdown`` and names no front-panel port in
its description (fabricgen's ``description unused``, on every interface no cable uses) is left out: it carries
nothing and no planned cable is on it."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from ipaddress import IPv4Address, IPv4Interface, IPv4Network

from fabricgen.core.errors import ConfigReadError
from fabricgen.features.ethernet.nos import nos_data
from fabricgen.features.ethernet.nos.routing_common import connected, local_address, natural, raise_problems
from fabricgen.model.routing import BgpNeighbor, RoutedPort, SwitchRouting, Vlan

DATA = nos_data("eos")
_RULES = DATA.routing
_ETHERNET = re.compile(r"Ethernet(\d{1,3})(?:/(\d))?")
_VLAN = re.compile(r"Vlan(\d{1,4})")
_PORT_IN_DESCRIPTION = re.compile(r"\(port (\d{1,3})(?:/(\d))?[,)]")
_SPEED_LANES = re.compile(r"\d+(?:\.\d+)?[gt]-(\d)")
# Descriptions, as they may reach FRR's configuration (a neighbor's): printable ASCII, one line (the CLI is read by
# lines, so none holds a newline; control characters are refused too)
_TEXT = re.compile(r"[\x20-\x7e]{0,240}")


def _blocks(cli: str) -> Iterator[tuple[str, list[str]]]:
    """Top-level commands with their sub-commands (indented, stripped); comments and ``!`` lines dropped."""
    head, body = "", list[str]()
    for line in cli.splitlines():
        if not line.strip() or line.lstrip().startswith("!"):
            continue
        if not line[0].isspace():
            if head:
                yield head, body
            head, body = line.strip(), []
        else:
            body.append(line.strip())
    if head:
        yield head, body


@dataclass
class _Interface:
    name: str
    description: str = ""
    up: bool = True  # EOS: `no shutdown` is the default of an Ethernet, Loopback and Vlan interface
    mtu: int = 0
    speed: str = ""
    routed: bool = False
    access_vlan: int = 1  # EOS: a switchport is an access port of VLAN 1 unless told otherwise
    vrf: str = "default"
    addresses: list[IPv4Interface] = field(default_factory=list)


class _Reader:
    def __init__(self) -> None:
        self.problems: list[str] = []

    def integer(self, where: str, text: str, low: int, high: int) -> int:
        if text.isdigit() and low <= int(text) <= high:
            return int(text)
        self.problems.append(f"{where}: {text!r} is not a number from {low} to {high}")
        return low

    def interface(self, head: str, body: list[str]) -> _Interface:
        iface = _Interface(head.split()[1])
        for line in body:
            words = line.split()
            if words[0] == "description":
                iface.description = line.partition(" ")[2]
            elif line == "shutdown":
                iface.up = False
            elif words[0] == "mtu" and len(words) == 2:
                iface.mtu = self.integer(f"{head} mtu", words[1], 68, 9214)
            elif words[0] == "speed" and len(words) == 2:
                iface.speed = words[1]
            elif line == "no switchport":
                iface.routed = True
            elif words[:3] == ["switchport", "access", "vlan"] and len(words) == 4:
                iface.access_vlan = self.integer(f"{head} switchport access vlan", words[3], 1, 4094)
            elif words[:2] == ["switchport", "mode"] and words[2:] != ["access"]:
                self.problems.append(f"{head}: switchport mode {' '.join(words[2:])} is not read back (access "
                                     "ports only)")
            elif words[:2] == ["ip", "address"] and len(words) in (3, 4) and words[3:] in ([], ["secondary"]):
                try:
                    iface.addresses.append(IPv4Interface(words[2]))
                except ValueError:
                    self.problems.append(f"{head}: ip address {words[2]!r} is not an address/prefix length")
            elif words[0] == "vrf" and len(words) == 2:
                iface.vrf = words[1]
            elif words[0] in ("channel-group", "encapsulation"):
                self.problems.append(f"{head}: {line} is not read back (Port-Channel members, subinterfaces)")
        return iface

    def panel(self, iface: _Interface) -> str:
        """fabricgen's ``<cage>`` or ``<cage>/<n>`` of a port, from its description, checked against its name."""
        name = _ETHERNET.fullmatch(iface.name)
        found = _PORT_IN_DESCRIPTION.search(iface.description)
        assert name is not None
        if found is None:
            self.problems.append(f"interface {iface.name}: its description {iface.description!r} does not say "
                                 "which front-panel port it is ('(port <cage>[/<n>], ...)', as fabricgen writes it)")
            return ""
        cage, lane = name.groups()
        panel_cage, sub = found.groups()
        lanes = _SPEED_LANES.fullmatch(iface.speed)
        width = int(lanes.group(1)) if lanes else 1
        first = (int(sub) - 1) * width + 1 if sub else 1
        if panel_cage != cage or (lane is not None and int(lane) != first) or (lane is None and sub):
            self.problems.append(f"interface {iface.name} (speed {iface.speed or 'unset'}) cannot be port "
                                 f"{found.group(0)[6:-1]} its description names")
        return f"{panel_cage}/{sub}" if sub else panel_cage


def kernel_name(name: str) -> str:
    """The name EOS's Linux kernel gives an interface: Ethernet33/1 -> et33_1, Ethernet1 -> et1, Vlan100 ->
    vlan100."""
    if (m := _ETHERNET.fullmatch(name)) is not None:
        return f"et{m.group(1)}" + (f"_{m.group(2)}" if m.group(2) else "")
    return name.lower()


@dataclass
class _Bgp:
    asn: int = 0
    router_id: IPv4Address | None = None
    keepalive: int = 0
    hold: int = 0
    maximum_paths: int = 0
    relax: bool | None = None  # multipath-relax as configured (None: EOS's default)
    neighbors: dict[str, dict[str, list[str]]] = field(default_factory=dict)  # peer or group -> setting -> words
    groups: set[str] = field(default_factory=set)
    networks: list[IPv4Network] = field(default_factory=list)
    redistribute_connected: bool = False


def _bgp(r: _Reader, head: str, body: list[str]) -> _Bgp:
    bgp = _Bgp(asn=r.integer("router bgp", head.split()[2] if len(head.split()) == 3 else "", 1, 4294967295))
    family = ""
    for line in body:
        words = line.split()
        if words[0] == "address-family":
            family = " ".join(words[1:])
            if family != "ipv4":
                r.problems.append(f"router bgp address-family {family} is not read back")
            continue
        if family and words[0] == "network" and len(words) == 2:
            try:
                bgp.networks.append(IPv4Network(words[1]))
            except ValueError:
                r.problems.append(f"router bgp address-family ipv4 network {words[1]!r} is no IPv4 prefix")
        elif family and words == ["redistribute", "connected"]:
            bgp.redistribute_connected = True
        elif words[0] == "router-id" and len(words) == 2:
            try:
                bgp.router_id = IPv4Address(words[1])
            except ValueError:
                r.problems.append(f"router bgp router-id {words[1]!r} is no IPv4 address")
        elif words[:2] == ["timers", "bgp"] and len(words) == 4:
            bgp.keepalive = r.integer("router bgp timers bgp keepalive", words[2], 0, 3600)
            bgp.hold = r.integer("router bgp timers bgp hold", words[3], 0, 7200)
        elif words[0] == "maximum-paths" and len(words) >= 2:
            bgp.maximum_paths = r.integer("router bgp maximum-paths", words[1], 1, 600)
        elif words[-4:] == ["bgp", "bestpath", "as-path", "multipath-relax"] and words[:-4] in ([], ["no"]):
            bgp.relax = not words[:-4]
        elif words[0] == "neighbor" and len(words) >= 3:
            peer = words[1]
            if words[2:] == ["peer", "group"]:
                bgp.groups.add(peer)
            else:
                setting = "peer group" if words[2:4] == ["peer", "group"] else words[2]
                bgp.neighbors.setdefault(peer, {})[setting] = words[4:] if setting == "peer group" else words[3:]
        elif words[:2] == ["no", "neighbor"] or words[:4] == ["no", "bgp", "default", "ipv4-unicast"]:
            r.problems.append(f"router bgp {line}: the lab activates every neighbor for IPv4")
        elif family and words[0] == "neighbor":
            r.problems.append(f"router bgp address-family ipv4 {line} is not read back")
    return bgp


def _neighbors(r: _Reader, bgp: _Bgp, ports: list[RoutedPort]) -> tuple[list[BgpNeighbor], int]:
    """Each neighbor with its peer group's settings under its own, and the switch's one allowas-in."""
    out, allowas = [], set()
    for peer, own in bgp.neighbors.items():
        if peer in bgp.groups:
            continue
        where = f"router bgp neighbor {peer}"
        group_name = own.get("peer group", [""])[0]
        if group_name and group_name not in bgp.groups:
            r.problems.append(f"{where} peer group {group_name!r} is not configured")
        settings = {**bgp.neighbors.get(group_name, {}), **own}
        try:
            address = IPv4Address(peer)
        except ValueError:
            r.problems.append(f"{where}: only IPv4 neighbors are read back")
            continue
        for key in sorted(set(settings) - {"remote-as", "description", "shutdown", "timers", "peer group",
                                             "allowas-in"}):
            r.problems.append(f"{where} {key} is not read back")
        timers = settings.get("timers", [])
        keepalive = r.integer(f"{where} timers", timers[0], 0, 3600) if len(timers) == 2 else 0
        hold = r.integer(f"{where} timers", timers[1], 0, 7200) if len(timers) == 2 else 0
        allowas.add(r.integer(f"{where} allowas-in", (settings["allowas-in"] or ["3"])[0], 1, 10)
                    if "allowas-in" in settings else 0)
        description = " ".join(settings.get("description", []))
        if not _TEXT.fullmatch(description):
            r.problems.append(f"{where} description {description!r}: printable ASCII only")
        out.append(BgpNeighbor(
            address, r.integer(f"{where} remote-as", (settings.get("remote-as") or [""])[0], 1, 4294967295),
            local_address(ports, address), description,
            keepalive or bgp.keepalive or int(_RULES["keepalive_s"]), hold or bgp.hold or int(_RULES["hold_s"]),
            int(_RULES["connect_s"]), "shutdown" in settings))
    if len(allowas) > 1:
        r.problems.append(f"router bgp: neighbors differ in allowas-in ({sorted(allowas)}): the lab takes one for "
                          "the switch")
    return sorted(out, key=lambda n: n.address), max(allowas, default=0)


def routing(switch: str, content: bytes) -> SwitchRouting:
    """The routing ``switches/<switch>/<switch>.cfg`` makes EOS run; ConfigReadError with every problem."""
    where = f"switches/{switch}/{DATA.config_file(switch)}"
    try:
        cli = content.decode()
    except UnicodeDecodeError as exc:
        raise ConfigReadError(f"{where}: not text: {exc}") from None
    r = _Reader()
    interfaces: dict[str, _Interface] = {}
    vlan_ids: set[int] = set()
    bgp: _Bgp | None = None
    routing_on = False
    for head, body in _blocks(cli):
        words = head.split()
        if words[0] == "interface" and len(words) == 2:
            interfaces[words[1]] = r.interface(head, body)
        elif words[0] == "vlan" and len(words) == 2:
            vlan_ids.add(r.integer(head, words[1], 1, 4094))
        elif head == "ip routing":
            routing_on = True
        elif words[:2] == ["router", "bgp"]:
            bgp = _bgp(r, head, body)
    if not routing_on:
        r.problems.append("no `ip routing`: EOS routes nothing (its default is no ip routing)")
    if bgp is None:
        r.problems.append("no `router bgp`: the switch runs no BGP")
        bgp = _Bgp()
    default_mtu = int(_RULES["default_mtu"])
    ports: list[RoutedPort] = []
    members: dict[int, list[str]] = {}
    for name, iface in interfaces.items():
        if iface.vrf != "default" and name != DATA.management_interface:
            r.problems.append(f"interface {name} is in VRF {iface.vrf}: the lab runs the default VRF only")
        if _ETHERNET.fullmatch(name) and not iface.up and not _PORT_IN_DESCRIPTION.search(iface.description):
            continue  # an unused port (module doc): carries nothing, and no planned cable is on it
        if _ETHERNET.fullmatch(name):
            if not _TEXT.fullmatch(iface.description):
                r.problems.append(f"interface {name} description {iface.description!r}: printable ASCII only")
            ports.append(RoutedPort(kernel_name(name), r.panel(iface), iface.mtu or default_mtu, iface.up,
                                    iface.description,
                                    tuple(iface.addresses) if iface.routed else (), name))
            if not iface.routed:
                members.setdefault(iface.access_vlan, []).append(kernel_name(name))
        elif not (_VLAN.fullmatch(name) or name in (DATA.interface("loopback"), DATA.management_interface)):
            r.problems.append(f"interface {name} is not read back (Port-Channels, subinterfaces, other loopbacks)")
    vlans = []
    for name, iface in interfaces.items():
        if (m := _VLAN.fullmatch(name)) is None:
            continue
        vid = int(m.group(1))
        if vid not in vlan_ids:
            r.problems.append(f"interface {name} is the SVI of VLAN {vid}, which no `vlan {vid}` creates")
        if iface.up:  # a shut SVI routes nothing: left out, so its subnet is neither reachable nor announced
            vlans.append(Vlan(kernel_name(name), vid, iface.mtu or default_mtu, tuple(members.get(vid, ())),
                              tuple(iface.addresses)))
    loopbacks = interfaces.get(DATA.interface("loopback"), _Interface("")).addresses
    if len(loopbacks) != 1 or loopbacks[0].network.prefixlen != 32:
        r.problems.append(f"interface {DATA.interface('loopback')} has {len(loopbacks)} IPv4 addresses, not one /32: "
                          "the lab takes the switch's loopback from it")
    loopback = loopbacks[0] if loopbacks else IPv4Interface("0.0.0.0/32")
    neighbors, allowas = _neighbors(r, bgp, ports)
    networks = list(bgp.networks)
    if bgp.redistribute_connected:
        networks += connected(loopback, ports, vlans)
    raise_problems(where, r.problems)
    return SwitchRouting(switch, bgp.asn, bgp.router_id or loopback.ip, loopback,
                         tuple(sorted(ports, key=lambda p: natural(p.name))), tuple(vlans), tuple(neighbors),
                         tuple(dict.fromkeys(networks)),
                         maximum_paths=bgp.maximum_paths or int(_RULES["maximum_paths"]),
                         multipath_relax=bool(_RULES["multipath_relax"]) if bgp.relax is None else bgp.relax,
                         allowas_in=allowas)
