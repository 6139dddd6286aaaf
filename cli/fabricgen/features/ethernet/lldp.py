"""``fabricgen verify --lldp``: an Ethernet fabric's cabling as its LLDP neighbour tables show it, against the plan.

Reads, per device, ``lldpctl -f json`` (lldpd, as on SONiC, Cumulus and Linux hosts) or SONiC's ``show lldp
table``; the device is the file's name without its extension (``storage-leaf001.json``). The switch ports are
named as their NOS names them, read back from the configuration artifact in OUT (the plan's cage ``33/1`` is
``Ethernet256`` on SONiC), host ports by their netdev. Pure, no I/O: the CLI reads the files.

Reported per planned cable whose end a table covers: missing (the port sees no neighbour), miswired (it sees
another device or port: both ends named as planned and what was found); and unexpected neighbours on ports the
plan does not use. A remote port matches by its Port ID or its description, against its planned name and the
Port ID its NOS sends (``RoutedPort.lldp_id``): lldpd on a host sends its MAC address as ID and its interface name
as description, Cumulus the interface name (``swp1``), EOS ``Ethernet1/1``, SONiC's lldpmgrd the PORT alias
(``etp1a``) with the PORT description.

``lldpctl -f json`` changes shape with the number of entries (lldpd 1.0.16, measured in the lab): one neighbour is
``{"lldp": {"interface": {"Ethernet0": {...}}}}``, several a list of one-key objects (a port with two neighbours is
in it twice), none ``{"lldp": {}}``; the neighbour's chassis is keyed by its system name, or is the bare
``{"id": ...}`` when it sends none.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from fabricgen.core.errors import FabricgenError
from fabricgen.model.cabling import Cable
from fabricgen.model.routing import SwitchRouting
from fabricgen.model.topology import FabricTopology


class LldpError(FabricgenError):
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
    kind: str      # missing, miswired, unexpected
    label: str     # the planned cable's label ("" for unexpected)
    planned: str   # "a:port <-> z:port"
    found: str


def _lldpctl(text: str) -> list[Neighbor]:
    """``lldpctl -f json`` in each of its shapes (see the module's docstring)."""
    data = json.loads(text)
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


_SONIC_HEADER = re.compile(r"^\s*LocalPort\s+RemoteDevice\s+RemotePortID\s+Capability\s+RemotePortDescr\s*$")


def _sonic_table(text: str) -> list[Neighbor]:
    """SONiC ``show lldp table``: a header, dashes, one row per neighbour, ``Total entries displayed``."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if _SONIC_HEADER.match(line)), None)
    if start is None:
        raise ValueError("no LocalPort/RemoteDevice/RemotePortID header")
    out = []
    for line in lines[start + 1:]:
        fields = line.split()
        if not fields or set(line.strip()) <= {"-", " "}:
            continue
        if line.startswith("Total entries"):
            break
        if len(fields) < 3:
            raise ValueError(f"row {line.strip()!r} has fewer than 3 columns")
        descr = " ".join(fields[4:]) if len(fields) > 4 else ""
        out.append(Neighbor(fields[0], fields[1], fields[2], descr))
    return out


def parse(name: str, text: str) -> list[Neighbor]:
    """The neighbours in one device's LLDP output, whichever form it is; LldpError when it is neither."""
    stripped = text.lstrip()
    try:
        return _lldpctl(text) if stripped.startswith("{") else _sonic_table(text)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise LldpError(f"{name} is not LLDP output (lldpctl -f json, or SONiC's `show lldp table`): {exc}") from None


def planned_ends(ft: FabricTopology, switches: Mapping[str, SwitchRouting], cables: Iterable[Cable]
                 ) -> dict[tuple[str, str], tuple[str, str, str]]:
    """(device, port as the device names it) -> (peer device, peer port, cable label), both ends of every
    planned cable of the fabric: switch ports by their configuration's name, host ports by their netdev."""
    names = {(s.name, p.panel): p.name for s in switches.values() for p in s.ports}
    labels = {}
    for c in cables:
        labels[(c.a.device, c.a.port)] = labels[(c.z.device, c.z.port)] = c.label
    out = {}
    for link in ft.links:
        ends = []
        for end in (link.a, link.z):
            if end.device in switches:
                ends.append((end.device, names.get((end.device, end.name), end.name)))
            else:
                ends.append((end.device, link.nic.netdev if link.nic is not None and link.nic.netdev else end.name))
        label = labels.get((link.a.device, link.a.name), "")
        out[ends[0]] = (*ends[1], label)
        out[ends[1]] = (*ends[0], label)
    return out


def port_ids(switches: Mapping[str, SwitchRouting]) -> dict[tuple[str, str], str]:
    """(switch, port name) -> the Port ID its NOS's LLDP agent sends, where that is not the name."""
    return {(s.name, p.name): p.lldp_id for s in switches.values() for p in s.ports if p.lldp_id not in ("", p.name)}


def _seen_port(n: Neighbor, names: Mapping[tuple[str, str], str]) -> str:
    """The port a neighbour says it is, by the name the plan uses where it can tell (a SONiC alias, a host's MAC
    address beside its interface name)."""
    return names.get((n.system, n.port_id)) or (n.port_descr if n.port_id_type == "mac" and n.port_descr
                                                 else n.port_id)


def compare(planned: Mapping[tuple[str, str], tuple[str, str, str]], found: Mapping[str, list[Neighbor]],
            ids: Mapping[tuple[str, str], str] | None = None) -> Iterator[LldpFinding]:
    """Every difference between the planned ends and the tables found (devices without a table are not judged);
    a swap of two cables names exactly those two cables, each from both its ends where both have tables. ``ids``
    (:func:`port_ids`): the Port IDs switch ports are known by besides their names. A port is right only when every
    neighbour it lists is its planned peer: lldpd keeps a neighbour until its TTL (120 s) runs out, so a cable
    moved within that time shows both, and the old one must not hide the new."""
    ids = ids or {}
    names = {(device, port_id): port for (device, port), port_id in ids.items()}
    seen: dict[tuple[str, str], list[Neighbor]] = {}
    for device, neighbors in found.items():
        for entry in neighbors:
            seen.setdefault((device, entry.local_port), []).append(entry)

    def sees(device: str, port: str) -> str:
        return f"{device}:{port} sees " + " and ".join(f"{n.system}:{_seen_port(n, names)}"
                                                       for n in seen[(device, port)])

    reported: set[str] = set()
    for (device, port), (peer, peer_port, label) in sorted(planned.items()):
        if device not in found:
            continue
        where = f"{device}:{port} <-> {peer}:{peer_port}"
        if (device, port) not in seen:
            if peer in found and (peer, peer_port) in seen:
                continue  # the other end sees something: that end reports the cable
            if label not in reported:
                reported.add(label)
                yield LldpFinding("missing", label, where, "no LLDP neighbour")
        elif any(n.system != peer or not {peer_port, ids.get((peer, peer_port), peer_port)} &
                 {n.port_id, n.port_descr} for n in seen[(device, port)]):
            yield LldpFinding("miswired", label, where, sees(device, port))
    for device, port in sorted(seen):
        if (device, port) not in planned:
            yield LldpFinding("unexpected", "", "-", sees(device, port))
