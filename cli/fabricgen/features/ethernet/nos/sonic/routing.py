"""config_db.json read back into the routing a SONiC switch runs, as bgpcfgd, intfmgrd and vlanmgrd read it (the
rules and their sources are the ``routing`` block of ``../sonic.yaml``): the lab configures FRR from this, so it
reads only the artifact, never the model. Every problem of one file is reported at once."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from ipaddress import IPv4Address, IPv4Interface, IPv4Network, ip_interface
from typing import Any

from fabricgen.core.errors import ConfigReadError
from fabricgen.features.ethernet.nos.sonic.layout import DATA
from fabricgen.model.routing import BgpNeighbor, RoutedPort, SwitchRouting, Vlan

_LOOPBACK = DATA.interfaces["loopback"]
_NUMBER = re.compile(r"(\d+)")
# What a port description or peer name may hold before it reaches FRR's configuration (which ends a command at a
# newline): the names fabricgen writes, "storage-leaf001:33/1", "gpu001:Slot1P1".
# A PORT alias, etp<cage> or etp<cage><a, b ...> for the n-th port of a split cage (NVIDIA's port_config.ini
# convention, the `alias` pattern of ../sonic.yaml): fabricgen's <cage> or <cage>/<n>.
_ALIAS = re.compile(r"etp(\d+)([a-h]?)")
_TEXT = re.compile(r"[A-Za-z0-9._:/@+-]{0,255}")
# Interface names as SONiC gives them (sonic-port.yang, sonic-vlan.yang: Ethernet<n>, Vlan<1-4094>): they become
# Linux interface names and `ip -batch` words in the lab, so nothing else passes.
_PORT_NAME = re.compile(r"Ethernet\d{1,4}")
_VLAN_NAME = re.compile(r"Vlan\d{1,4}")


def _natural(name: str) -> tuple[str | int, ...]:
    """Ethernet8 before Ethernet16, as SONiC lists its ports."""
    return tuple(int(part) if part.isdigit() else part for part in _NUMBER.split(name))


class _Reader:
    """One file's tables and the problems found in them."""

    def __init__(self, switch: str, db: Mapping[str, Any]) -> None:
        self.switch, self.db, self.problems = switch, db, list[str]()

    def table(self, name: str) -> Mapping[str, Mapping[str, Any]]:
        """A table's rows (each a JSON object; anything else is a problem and left out)."""
        value = self.db.get(name, {})
        if not isinstance(value, dict):
            self.problems.append(f"{name} is not a table")
            return {}
        for key in sorted(k for k, row in value.items() if not isinstance(row, dict)):
            self.problems.append(f"{name}|{key} is not a row of fields")
        return {key: row for key, row in value.items() if isinstance(row, dict)}

    def integer(self, where: str, text: object, low: int, high: int) -> int:
        if isinstance(text, str) and text.isdigit() and low <= int(text) <= high:
            return int(text)
        self.problems.append(f"{where} is {text!r}, not a number from {low} to {high}")
        return low

    def text(self, where: str, value: object) -> str:
        if isinstance(value, str) and _TEXT.fullmatch(value):
            return value
        self.problems.append(f"{where} is {value!r}: a name of letters, digits and ._:/@+- only")
        return ""

    def addresses(self, table: str) -> dict[str, list[IPv4Interface]]:
        """``name|address/len`` keys of an interface table by interface (IPv6 ones are skipped: the plan is IPv4)."""
        found: dict[str, list[IPv4Interface]] = {}
        for key in sorted(self.table(table), key=_natural):
            name, _, prefix = key.partition("|")
            found.setdefault(name, [])
            if not prefix:
                continue
            try:
                address = ip_interface(prefix)
            except ValueError:
                self.problems.append(f"{table}|{key}: {prefix!r} is not an address/prefix length")
                continue
            if isinstance(address, IPv4Interface):
                found[name].append(address)
        return found


def _ports(r: _Reader, routing: Mapping[str, Any]) -> tuple[RoutedPort, ...]:
    addresses = r.addresses("INTERFACE")
    ports = r.table("PORT")
    for name in sorted(n for n in ports if not _PORT_NAME.fullmatch(n)):
        r.problems.append(f"PORT {name!r} is not a SONiC port name (Ethernet<n>)")
    ports = {n: row for n, row in ports.items() if _PORT_NAME.fullmatch(n)}
    for name in sorted(set(addresses) - set(ports), key=_natural):
        r.problems.append(f"INTERFACE|{name} has no PORT entry: intfmgrd has no port to put its address on")
    return tuple(
        RoutedPort(name, _panel(r, name, entry.get("alias")),
                   r.integer(f"PORT|{name} mtu", entry.get("mtu", str(routing["default_mtu"])), 68, 9216),
                   entry.get("admin_status", "down") == "up",
                   r.text(f"PORT|{name} description", entry.get("description", "")),
                   tuple(addresses.get(name, ())), str(entry.get("alias") or ""))
        for name, entry in sorted(ports.items(), key=lambda item: _natural(item[0])))


def _panel(r: _Reader, name: str, alias: object) -> str:
    match = _ALIAS.fullmatch(alias) if isinstance(alias, str) else None
    if match is None:
        r.problems.append(f"PORT|{name} alias is {alias!r}, not etp<cage> or etp<cage><a, b ...>: the lab cannot "
                          "tell which cage the port is")
        return ""
    cage, sub = match.groups()
    return f"{cage}/{ord(sub) - ord('a') + 1}" if sub else cage


def _vlans(r: _Reader, routing: Mapping[str, Any]) -> tuple[Vlan, ...]:
    members: dict[str, list[str]] = {}
    for key in r.table("VLAN_MEMBER"):
        vlan, _, port = key.partition("|")
        members.setdefault(vlan, []).append(port)
    addresses = r.addresses("VLAN_INTERFACE")
    vlans = r.table("VLAN")
    for name in sorted(n for n in vlans if not _VLAN_NAME.fullmatch(n)):
        r.problems.append(f"VLAN {name!r} is not a SONiC VLAN name (Vlan<id>)")
    ports = r.table("PORT")
    for vlan, names in sorted(members.items()):
        for port in sorted(set(names) - set(ports)):
            r.problems.append(f"VLAN_MEMBER|{vlan}|{port} names no PORT")
    for name in sorted((set(members) | set(addresses)) - set(vlans), key=_natural):
        r.problems.append(f"{name} has members or an SVI address but no VLAN entry")
    return tuple(
        Vlan(name, r.integer(f"VLAN|{name} vlanid", entry.get("vlanid"), 1, 4094),
             r.integer(f"VLAN|{name} mtu", entry.get("mtu", str(routing["default_mtu"])), 68, 9216),
             tuple(sorted(members.get(name, ()), key=_natural)), tuple(addresses.get(name, ())))
        for name, entry in sorted(vlans.items(), key=lambda item: _natural(item[0])))


def _neighbors(r: _Reader, metadata: Mapping[str, Any], routing: Mapping[str, Any]) -> tuple[BgpNeighbor, ...]:
    """BGP_NEIGHBOR in the default VRF (keys ``<peer>`` or ``default|<peer>``), as templates/general/instance.conf.j2
    writes each one."""
    neighbors = []
    for key, entry in r.table("BGP_NEIGHBOR").items():
        vrf, _, peer = key.rpartition("|")
        if vrf not in ("", "default"):
            continue
        try:
            address, local = IPv4Address(peer), entry.get("local_addr")
            local_address = IPv4Address(local) if local else None
        except ValueError:
            r.problems.append(f"BGP_NEIGHBOR|{key}: {peer!r} or local_addr {entry.get('local_addr')!r} is no IPv4 "
                              "address")
            continue
        status = entry.get("admin_status", metadata.get("default_bgp_status", "up"))
        neighbors.append(BgpNeighbor(
            address, r.integer(f"BGP_NEIGHBOR|{key} asn", entry.get("asn"), 1, 4294967295), local_address,
            r.text(f"BGP_NEIGHBOR|{key} name", entry.get("name", "")),
            r.integer(f"BGP_NEIGHBOR|{key} keepalive", entry.get("keepalive", str(routing["keepalive_s"])), 0, 65535),
            r.integer(f"BGP_NEIGHBOR|{key} holdtime", entry.get("holdtime", str(routing["hold_s"])), 0, 65535),
            int(routing["connect_s"]), status == "down"))
    return tuple(sorted(neighbors, key=lambda n: n.address))


def _loopback(r: _Reader) -> IPv4Interface:
    """Loopback0's one IPv4 address: bgpcfgd's router-id and advertised /32, and without it it adds no peer."""
    found = r.addresses("LOOPBACK_INTERFACE").get(_LOOPBACK, [])
    if len(found) != 1:
        r.problems.append(f"LOOPBACK_INTERFACE has {len(found)} IPv4 addresses on {_LOOPBACK}, not one: bgpcfgd "
                          "takes its router-id and advertised /32 from it, and adds no BGP peer without it")
        return IPv4Interface("0.0.0.0/32")
    return found[0]


def routing(switch: str, content: bytes) -> SwitchRouting:
    """The routing ``switches/<switch>/config_db.json`` makes SONiC run; ConfigReadError with every problem."""
    where = f"switches/{switch}/{DATA.config_file(switch)}"
    try:
        db = json.loads(content)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigReadError(f"{where}: not JSON: {exc}") from None
    if not isinstance(db, dict):
        raise ConfigReadError(f"{where}: not a config_db (a JSON object of tables)")
    r, rules = _Reader(switch, db), DATA.routing
    metadata = r.table("DEVICE_METADATA").get("localhost", {})
    asn = r.integer("DEVICE_METADATA|localhost bgp_asn", metadata.get("bgp_asn"), 1, 4294967295)
    loopback = _loopback(r)
    router_id = metadata.get("bgp_router_id", str(loopback.ip))
    ports, vlans, neighbors = _ports(r, rules), _vlans(r, rules), _neighbors(r, metadata, rules)
    try:
        router = IPv4Address(router_id)
    except ValueError:
        r.problems.append(f"DEVICE_METADATA|localhost bgp_router_id {router_id!r} is no IPv4 address")
        router = loopback.ip
    if r.problems:
        # dict.fromkeys: a table read twice (PORT, by ports and VLAN members) reports a bad row once
        raise ConfigReadError("\n".join(f"{where}: {problem}" for problem in dict.fromkeys(r.problems)))
    vnets = {name for name, row in r.table("VLAN_INTERFACE").items() if "vnet_name" in row}
    networks = (IPv4Network(f"{loopback.ip}/32"),
                *(a.network for v in vlans if v.name not in vnets for a in v.addresses))
    return SwitchRouting(switch, asn, router, loopback, ports, vlans, neighbors, networks,
                         maximum_paths=int(rules["maximum_paths"]), multipath_relax=bool(rules["multipath_relax"]),
                         allowas_in=int(rules["allowas_in"].get(metadata.get("type", ""), 0)))
