"""``fabricgen verify --lldp``: an Ethernet fabric's cabling as its LLDP neighbour tables show it, against the plan.

Reads, per device, any of five forms (:func:`parse` tells them apart): ``lldpctl -f json`` (lldpd, as on SONiC,
Cumulus and Linux hosts), SONiC's ``show lldp table``, Cumulus Linux's ``nv show interface -o json`` (NVUE, the
document its REST API gives for ``GET /nvue_v1/interface``), EOS's ``show lldp neighbors detail | json`` and plain
``show lldp neighbors | json``; the device is the file's name without its extension (``storage-leaf001.json``). The
switch ports are named as their NOS names them, read back from the configuration artifact in OUT (the plan's cage
``33/1`` is ``Ethernet256`` on SONiC), host ports by their netdev. Pure, no I/O: the CLI reads the files.

Reported per planned cable whose end a table covers: missing (the port sees no neighbour), miswired (it sees
another device or port: both ends named as planned and what was found); and unexpected neighbours on ports the
plan does not use. A remote port matches by its Port ID or its description, against its planned name and the
Port ID its NOS sends (``RoutedPort.lldp_id``): lldpd on a host sends its MAC address as ID and its interface name
as description, Cumulus the interface name (``swp1``), EOS its interface name (``Ethernet1/1``), SONiC's lldpmgrd
the PORT alias (``etp1a``) with the PORT description. A local port is known by the same names (EOS keys its table
by ``Ethernet1/1``, the lab's lldpd by the kernel's ``et1_1``). A system name matches the planned device also as a
fully qualified name (EOS sends ``leaf1.example.net`` when a domain is set).

``lldpctl -f json`` changes shape with the number of entries (lldpd 1.0.16, measured in the lab): one neighbour is
``{"lldp": {"interface": {"Ethernet0": {...}}}}``, several a list of one-key objects (a port with two neighbours is
in it twice), none ``{"lldp": {}}``; the neighbour's chassis is keyed by its system name, or is the bare
``{"id": ...}`` when it sends none. The other JSON forms (captures from upstream tests in ``tests/data/lldp/``):
NVUE nests each port's neighbours, keyed by system name, as ``{"swp1": {"lldp": {"neighbor": {"spine01":
{"chassis": {"system-name": ...}, "port": {"name": "swp1", "type": "ifname", "description": ...}}}}}}``; EOS's
detail is ``{"lldpNeighbors": {"Ethernet1": {"lldpNeighborInfo": [{"systemName": ..., "neighborInterfaceInfo":
{"interfaceIdType": "interfaceName", "interfaceId": "\\"Ethernet1\\"", "interfaceId_v2": "Ethernet1",
"interfaceDescription": ...}}]}}}`` (the ID in quotes, unless it is a MAC address; newer EOS, 4.28 in the
capture, adds it bare as ``interfaceId_v2``; SuzieQ's EOS capture quotes a locally assigned ``"517"`` too), its
plain form a list ``{"lldpNeighbors": [{"port": ..., "neighborDevice": ..., "neighborPort": ...}]}`` without
descriptions: a host that sends its MAC address as Port ID is then judged by its system name only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from fabricgen.core.errors import VerifyError
from fabricgen.features.ethernet.nos import systems
from fabricgen.model.cabling import Cable
from fabricgen.model.nodes import NicRole
from fabricgen.model.routing import SwitchRouting
from fabricgen.model.topology import FabricTopology, Link


class LldpError(VerifyError):
    """An LLDP neighbour table that cannot be read."""


@dataclass(frozen=True)
class Neighbor:
    """One LLDP neighbour a device's port sees."""

    local_port: str
    system: str
    port_id: str
    port_descr: str = ""
    port_id_type: str = ""  # lldpctl's subtype name: ifname, local, mac ...


@dataclass(frozen=True)
class LldpFinding:
    kind: str      # missing, miswired, one-way, unexpected
    label: str     # the planned cable's label ("" for unexpected)
    planned: str   # "a:port <-> z:port"
    found: str
    ends: tuple[tuple[str, str], ...] = ()  # the planned ends (device, port), or the unexpected port
    # the planned ends actually found at the far side, with the cable the plan puts there: (device, port, label)
    belongs: tuple[tuple[str, str, str], ...] = ()


def _lldpctl(data: Any) -> list[Neighbor]:
    """``lldpctl -f json`` in each of its shapes (see the module's docstring)."""
    interfaces = data["lldp"].get("interface", [])
    if isinstance(interfaces, dict):
        interfaces = [{name: body} for name, body in interfaces.items()]
    out = []
    for item in interfaces:
        for local, body in item.items():
            chassis = body.get("chassis", {})
            if not isinstance(chassis, dict):
                raise ValueError(f"interface {local}: chassis is not an object")
            unnamed = isinstance(chassis.get("id"), dict) and "type" in chassis["id"]
            system = "" if unnamed or not chassis else str(next(iter(chassis)))
            port = body.get("port", {})
            port_id = port.get("id", "")
            out.append(Neighbor(str(local), system, _value(port_id), _value(port.get("descr", "")),
                                str(port_id.get("type", "")) if isinstance(port_id, dict) else ""))
    return out


def _value(field: Any) -> str:
    """lldpctl's ``{"type": "ifname", "value": "Ethernet0"}`` or a plain string."""
    if isinstance(field, dict):
        return str(field.get("value", ""))
    if isinstance(field, list) and field:
        return _value(field[0])
    return str(field)


def _nvue(data: Mapping[str, Any]) -> list[Neighbor]:
    """``nv show interface -o json``: every interface an object (its ``type``, ``link`` ...), the cabled ones with
    ``lldp.neighbor`` keyed by system name; the Port ID is ``port.name``, its subtype lldpd's name in ``port.type``."""
    out = []
    for local, body in data.items():
        if not isinstance(body, dict) or not body.keys() & {"type", "link", "lldp"}:
            raise ValueError(f"{local!r} is not an NVUE interface object")
        for key, entry in ((body.get("lldp") or {}).get("neighbor") or {}).items():
            port = entry.get("port") or {}
            out.append(Neighbor(str(local), str((entry.get("chassis") or {}).get("system-name") or key),
                                str(port.get("name", "")), str(port.get("description", "")),
                                str(port.get("type", ""))))
    return out


# EOS's names of the Port ID subtypes, as lldpctl names them (IEEE 802.1AB subtypes 3, 5, 7)
_EOS_ID_TYPES = {"macAddress": "mac", "interfaceName": "ifname", "local": "local"}
_MAC = re.compile(r"(?:[0-9a-f]{4}\.){2}[0-9a-f]{4}|(?:[0-9a-f]{2}[:-]){5}[0-9a-f]{2}", re.I)


def _eos(table: Any) -> list[Neighbor]:
    """EOS ``show lldp neighbors detail | json`` (an object of ports, each ``lldpNeighborInfo`` a list) or plain
    ``show lldp neighbors | json`` (a list of rows without subtype or description: a MAC address is taken for one)."""
    if isinstance(table, list):
        return [Neighbor(str(row["port"]), str(row["neighborDevice"]), str(row["neighborPort"]), "",
                         "mac" if _MAC.fullmatch(str(row["neighborPort"])) else "") for row in table]
    out = []
    for local, body in table.items():
        for entry in body["lldpNeighborInfo"]:
            info = entry.get("neighborInterfaceInfo", {})
            kind = str(info.get("interfaceIdType", ""))
            port_id = str(info.get("interfaceId_v2") or info.get("interfaceId", ""))
            if kind != "macAddress" and len(port_id) > 1 and port_id[0] == port_id[-1] == '"':
                port_id = port_id[1:-1]
            out.append(Neighbor(str(local), str(entry.get("systemName", "")), port_id,
                                str(info.get("interfaceDescription", "")), _EOS_ID_TYPES.get(kind, kind)))
    return out


_SONIC_HEADER = re.compile(r"^\s*LocalPort\s+RemoteDevice\s+RemotePortID(\s+\S+)*\s*$")


def _sonic_table(text: str) -> list[Neighbor]:
    """SONiC ``show lldp table`` (sonic-utilities ``scripts/lldpshow``): a header, one run of dashes per column
    (tabulate's "simple" format), one row per neighbour, a line of dashes, ``Total entries displayed``. Each row
    is cut at the columns' starts, as lldpshow leaves a column blank for a neighbour without a system name, port
    description or enabled capability, and a description may hold spaces."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if _SONIC_HEADER.match(line)), None)
    if start is None:
        raise ValueError("no LocalPort/RemoteDevice/RemotePortID header")
    names = lines[start].split()
    starts = [m.start() for m in re.finditer(r"-+", lines[start + 1] if start + 1 < len(lines) else "")]
    if len(starts) != len(names):
        raise ValueError(f"the line under the header has {len(starts)} runs of dashes for {len(names)} columns")
    out = []
    for line in lines[start + 2:]:
        if line.startswith("Total entries") or (line.strip() and set(line.strip()) == {"-"}):
            break
        if not line.strip():
            continue
        ends = [*starts[1:], len(line)]
        row = {name: line[a:b].strip() for name, a, b in zip(names, starts, ends, strict=True)}
        if not row["LocalPort"] or not row["RemotePortID"]:
            raise ValueError(f"row {line.strip()!r} has no LocalPort or RemotePortID")
        port_id = row["RemotePortID"]
        out.append(Neighbor(row["LocalPort"], row["RemoteDevice"], port_id, row.get("RemotePortDescr", ""),
                            "mac" if _MAC.fullmatch(port_id) else ""))
    return out


FORMS = ("lldpctl -f json, SONiC's `show lldp table`, NVUE's `nv show interface -o json`, "
         "EOS's `show lldp neighbors [detail] | json`")


def _json(data: Any) -> list[Neighbor]:
    """The JSON forms, told apart by their top-level key: ``lldp`` (lldpctl), ``lldpNeighbors`` (EOS), else
    NVUE's object of interfaces."""
    if not isinstance(data, dict):
        raise ValueError("the JSON is not an object")
    if "lldp" in data:
        return _lldpctl(data)
    if "lldpNeighbors" in data:
        return _eos(data["lldpNeighbors"])
    if not data:
        raise ValueError("the JSON object is empty")
    return _nvue(data)


def parse(name: str, text: str) -> list[Neighbor]:
    """The neighbours in one device's LLDP output, whichever form it is; LldpError when it is none of them."""
    try:
        return _json(json.loads(text)) if text.lstrip().startswith("{") else _sonic_table(text)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise LldpError(f"{name} is not LLDP output ({FORMS}): {exc}") from None


def _host_port(link: Link) -> str:
    """A host's end of a link as its lldpd names it: the NIC's netdev."""
    return link.nic.netdev if link.nic is not None and link.nic.netdev else link.a.name


def agentless(ft: FabricTopology) -> set[tuple[str, str]]:
    """The planned ends no LLDP agent of the device reports: a host's BMC port, which the BMC owns (the host OS's
    lldpd never sees it; a BMC sends LLDP, if at all, with a system name of its own)."""
    return {(link.a.device, _host_port(link)) for link in ft.links
            if link.nic is not None and link.nic.role is NicRole.BMC}


def planned_ends(ft: FabricTopology, switches: Mapping[str, SwitchRouting], cables: Iterable[Cable]
                 ) -> dict[tuple[str, str], tuple[str, str, str]]:
    """(device, port as the device names it) -> (peer device, peer port, cable label), the ends of every planned
    cable of the fabric that an LLDP agent reports (not a BMC's, :func:`agentless`; its cable is judged from the
    switch): switch ports by their configuration's name, host ports by their netdev."""
    names = {(s.name, p.panel): p.name for s in switches.values() for p in s.ports}
    labels = {}
    for c in cables:
        labels[(c.a.device, c.a.port)] = labels[(c.z.device, c.z.port)] = c.label
    dark = agentless(ft)
    out = {}
    for link in ft.links:
        ends = []
        for end in (link.a, link.z):
            if end.device in switches:
                ends.append((end.device, names.get((end.device, end.name), end.name)))
            else:
                ends.append((end.device, _host_port(link)))
        label = labels.get((link.a.device, link.a.name), "")
        for here, there in ((ends[0], ends[1]), (ends[1], ends[0])):
            if here not in dark:
                out[here] = (*there, label)
    return out


def cabled_elsewhere(fabrics: Iterable[FabricTopology]) -> tuple[set[tuple[str, str]], set[str]]:
    """The host ports other fabrics cable, by netdev, and those fabrics' devices: a host's lldpd reports every
    NIC, and a switch of another fabric reports only that fabric; both are judged by their own fabric."""
    ports, devices = set(), set()
    for ft in fabrics:
        switches = {sw.name for sw in ft.switches}
        devices |= switches
        for link in ft.links:
            devices |= {link.a.device, link.z.device}
            if link.a.device not in switches:
                ports.add((link.a.device, _host_port(link)))
    return ports, devices


def management_ports(fabrics: Iterable[FabricTopology]) -> set[tuple[str, str]]:
    """Each switch's management port, by its NOS's name (nos/*.yaml ``management.interface``: SONiC and NVUE
    ``eth0``, EOS ``Management1``): the plan does not cable it, and its LLDP neighbour is the site's OOB switch."""
    return {(sw.name, systems()[ft.fabric.nos[sw.tier]].data.management_interface)
            for ft in fabrics for sw in ft.switches if sw.tier in ft.fabric.nos}


def places(cables: Iterable[Cable], switches: Mapping[str, SwitchRouting]
           ) -> dict[tuple[str, str], tuple[str, int, str]]:
    """(device, port as :func:`planned_ends` names it) -> (rack, U, faceplate port) from the cable table, for
    a technician at the rack."""
    names = {(s.name, p.panel): p.name for s in switches.values() for p in s.ports}
    out = {}
    for c in cables:
        for end in (c.a, c.z):
            port = names.get((end.device, end.port)) or (end.netdev if end.device not in switches else end.port)
            out[(end.device, port or end.port)] = (end.rack, end.u, end.port)
    return out


def port_ids(switches: Mapping[str, SwitchRouting]) -> dict[tuple[str, str], str]:
    """(switch, port name) -> the Port ID its NOS's LLDP agent sends, where that is not the name."""
    return {(s.name, p.name): p.lldp_id for s in switches.values() for p in s.ports if p.lldp_id not in ("", p.name)}


def _seen_port(n: Neighbor, names: Mapping[tuple[str, str], str]) -> str:
    """The port a neighbour says it is, by the name the plan uses where it can tell (a SONiC alias, a host's MAC
    address beside its interface name)."""
    named = names.get((n.system, n.port_id)) or names.get((n.system.split(".", 1)[0], n.port_id))
    return named or (n.port_descr if n.port_id_type == "mac" and n.port_descr else n.port_id)


def _first(system: str) -> str:
    """A system name's first DNS label, case-folded (DNS names are case-insensitive, RFC 4343)."""
    return system.split(".", 1)[0].casefold()


def _is(system: str, device: str) -> bool:
    """Whether an LLDP system name is the planned device: its name, or a fully qualified name starting with it."""
    return system.casefold() == device.casefold() or _first(system) == device.casefold()


def _fits(n: Neighbor, peer: str, peer_port: str, ids: Mapping[tuple[str, str], str]) -> bool:
    """Whether a neighbour is the planned peer port; one that names its port by MAC address only (EOS's plain
    table of a host) is judged by its system name."""
    if not _is(n.system, peer):
        return False
    if n.port_id_type == "mac" and not n.port_descr:
        return True
    return bool({peer_port, ids.get((peer, peer_port), peer_port)} & {n.port_id, n.port_descr})


def device_of(stem: str, devices: Iterable[str]) -> str | None:
    """The planned device a table's file is named for: its name, or a fully qualified name (as collectors save
    a table) whose first label is it; None when neither."""
    by_name = {d.casefold(): d for d in devices}
    return by_name.get(stem.casefold()) or by_name.get(_first(stem))


def absent(planned: Mapping[tuple[str, str], tuple[str, str, str]], found: Mapping[str, object]) -> list[str]:
    """The planned devices no table was given for."""
    return sorted({device for device, _ in planned} - set(found))


@dataclass(frozen=True)
class Scope:
    """What a comparison leaves out (all empty: nothing). ``elsewhere``: ports other fabrics cable, not judged;
    ``others``: those fabrics' devices, whose sighting on a port no plan cables is not this fabric's business;
    ``management``: the switches' management ports; ``agentless``: planned ends without an LLDP agent (BMC
    ports), whose cable the other end judges: dark is not missing there, and only a neighbour that is another
    planned device is wrong (a BMC sends its own system name, not the host's)."""

    elsewhere: frozenset[tuple[str, str]] = frozenset()
    others: frozenset[str] = frozenset()
    management: frozenset[tuple[str, str]] = frozenset()
    agentless: frozenset[tuple[str, str]] = frozenset()


def compare(planned: Mapping[tuple[str, str], tuple[str, str, str]], found: Mapping[str, list[Neighbor]],
            ids: Mapping[tuple[str, str], str] | None = None, only_present: bool = False,
            scope: Scope = Scope()) -> Iterator[LldpFinding]:
    """Every difference between the planned ends and the tables found (devices without a table are not judged);
    a swap of two cables names exactly those two cables, each from both its ends where both have tables. ``ids``
    (:func:`port_ids`): the Port IDs switch ports are known by besides their names, locally too. A port is right
    only when every neighbour it lists is its planned peer: lldpd keeps a neighbour until its TTL (120 s) runs
    out, so a cable moved within that time shows both, and the old one must not hide the new. A port that sees
    its peer right while the peer's table has nothing there is one-way (lldpd not running or not receiving on
    that NIC). ``only_present``: a partial capture (a lab of sampled hosts), where a dark port whose planned peer
    gave no table is not missing (that device may not be there); what such a port does see is still judged.
    ``scope``: what is not this comparison's (:class:`Scope`)."""
    ids = ids or {}
    names = {(device, port_id): port for (device, port), port_id in ids.items()}
    judged = {d.casefold() for d, _ in planned} | {p.casefold() for p, _, _ in planned.values()}
    others = {d.casefold() for d in scope.others} - judged
    seen: dict[tuple[str, str], list[Neighbor]] = {}
    for device, neighbors in found.items():
        for entry in neighbors:
            seen.setdefault((device, names.get((device, entry.local_port), entry.local_port)), []).append(entry)

    def sees(device: str, port: str) -> str:
        return f"{device}:{port} sees " + " and ".join(f"{n.system}:{_seen_port(n, names)}"
                                                       for n in seen[(device, port)])

    def right(device: str, port: str, peer: str, peer_port: str) -> bool:
        if (peer, peer_port) in scope.agentless:  # the BMC's own name, or none: only a planned port is wrong
            return not any((_first(n.system) in judged | others and not _is(n.system, peer))
                           or (_is(n.system, peer) and (peer, _seen_port(n, names)) in planned)
                           for n in seen[(device, port)])
        return all(_fits(n, peer, peer_port, ids) for n in seen[(device, port)])

    by_name = {d.casefold(): d for d, _ in planned}

    def belongs(device: str, port: str, peer: str, peer_port: str) -> tuple[tuple[str, str, str], ...]:
        """The planned ends the port's wrong neighbours are, each with the cable the plan puts in it."""
        out = []
        for n in seen.get((device, port), ()):
            far = (by_name.get(_first(n.system), n.system), _seen_port(n, names))
            if far != (peer, peer_port) and far in planned:
                out.append((*far, planned[far][2]))
        return tuple(out)

    reported: set[str] = set()
    for (device, port), (peer, peer_port, label) in sorted(planned.items()):
        if device not in found:
            continue
        where = f"{device}:{port} <-> {peer}:{peer_port}"
        if (device, port) not in seen:
            if (peer, peer_port) in scope.agentless:
                continue
            if peer in found and (peer, peer_port) in seen:
                if right(peer, peer_port, device, port):
                    yield LldpFinding("one-way", label, where, f"{sees(peer, peer_port)}; {device} sees nothing "
                                                               f"on {port}", ((device, port), (peer, peer_port)))
                continue  # else the other end reports the miswire
            if label not in reported and not (only_present and peer not in found):
                reported.add(label)
                yield LldpFinding("missing", label, where, "no LLDP neighbour", ((device, port), (peer, peer_port)))
        elif not right(device, port, peer, peer_port):
            yield LldpFinding("miswired", label, where, sees(device, port), ((device, port), (peer, peer_port)),
                              belongs(device, port, peer, peer_port))
    for device, port in sorted(seen):
        if device.casefold() not in judged:
            continue  # another fabric's switch
        if (device, port) in planned or (device, port) in scope.elsewhere or (device, port) in scope.management:
            continue
        if all(_first(n.system) in others for n in seen[(device, port)]):
            continue  # a port no plan cables, facing another fabric's device: that fabric's table shows it
        yield LldpFinding("unexpected", "", "-", sees(device, port), ((device, port),),
                          belongs(device, port, "", ""))
