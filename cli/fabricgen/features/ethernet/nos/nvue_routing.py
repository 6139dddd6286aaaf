"""NVUE startup.yaml read back into the routing a Cumulus Linux switch runs (``Nos.routing``): what ``fabricgen
lab`` configures FRR from, so it reads only the artifact, never the model. NVUE renders the object model into FRR
and ifupdown2 configuration; the defaults it fills in are the ``routing`` block of ``nvue.yaml`` (with their
sources). Every problem of one file is reported at once.

Read: ``router bgp`` (``enable``, ``autonomous-system``, ``router-id``; the VRF's own values win), ``vrf default
router bgp`` (``enable``, ``neighbor`` with ``remote-as``, ``peer-group``, ``timers``, ``shutdown``,
``description``; ``peer-group`` with the same), ``address-family ipv4-unicast`` (``enable``, ``network``,
``redistribute connected``, ``multipaths ebgp``), ``path-selection multipath aspath-ignore``; ``interface``: ``lo``
(type loopback), ``swp`` ports (``link mtu``/``state``/``breakout``, ``description``, ``ip address``, ``bridge
domain <br> access <vid>``), SVIs (type svi, ``vlan``, ``ip address``, ``link mtu``) and the bridge domain's VLANs.
What the lab cannot run as NVUE would (unnumbered or ``remote-as external`` neighbors, trunk ports, bonds, other
VRFs, ``allow-my-asn``) is a problem named, not silently dropped."""

from __future__ import annotations

import re
from collections.abc import Mapping
from ipaddress import IPv4Address, IPv4Interface, IPv4Network, ip_interface
from typing import Any

import yaml

from fabricgen.core.errors import ConfigReadError
from fabricgen.core.yamldata import safe_load as safe_yaml
from fabricgen.features.ethernet.nos import nos_data
from fabricgen.features.ethernet.nos.routing_common import connected, local_address, natural, raise_problems
from fabricgen.model.routing import BgpNeighbor, RoutedPort, SwitchRouting, Vlan

DATA = nos_data("nvue")
_RULES = DATA.routing
# swp<cage> or swp<cage>s<n> (nvue.yaml `interfaces`: n counts from 0), vlan<id>: Linux interface names in the lab
_PORT = re.compile(r"swp(\d{1,3})(?:s(\d))?")
_SVI = re.compile(r"vlan(\d{1,4})")
# What a description may hold before it reaches FRR's configuration (a newline would end an FRR command)
_TEXT = re.compile(r"[A-Za-z0-9._:/@+-]{0,255}")
# The neighbor and peer-group settings the read-back runs; any other (password, passive-mode, update-source,
# local-as, multihop, bfd ...) changes whether or how the session comes up, so it is named rather than dropped
_NEIGHBOR_KEYS = {"remote-as", "type", "peer-group", "timers", "shutdown", "description", "address-family"}
_ON = ("on", True, "enabled")  # NVUE's `on` (a YAML 1.1 loader reads a bare on as True; 5.15 spells it enabled)


def _on(value: object) -> bool:
    return value in _ON


def _keys(value: object) -> list[str]:
    """A collection of NVUE keys (``address: {10.0.0.1/32: {}}``) as its keys; a single value as itself."""
    if isinstance(value, dict):
        return [str(k) for k in value]
    return [] if value is None else [str(value)]


class _Reader:
    def __init__(self) -> None:
        self.problems: list[str] = []

    def node(self, tree: object, *path: str) -> Mapping[str, Any]:
        """The mapping at ``path`` (empty when absent; anything but a mapping is a problem)."""
        node: Mapping[str, Any] = tree if isinstance(tree, dict) else {}
        for key in path:
            child = node.get(key, {})
            if not isinstance(child, dict):
                self.problems.append(f"{' '.join(path)} is not a mapping of settings")
                return {}
            node = child
        return node

    def integer(self, where: str, value: object, low: int, high: int, default: int) -> int:
        if value is None or value == "auto":
            return default
        if isinstance(value, int) and not isinstance(value, bool) and low <= value <= high:
            return value
        if isinstance(value, str) and value.isdigit() and low <= int(value) <= high:
            return int(value)
        self.problems.append(f"{where} is {value!r}, not a number from {low} to {high}")
        return default

    def text(self, where: str, value: object) -> str:
        if value is None:
            return ""
        if isinstance(value, str) and _TEXT.fullmatch(value):
            return value
        self.problems.append(f"{where} is {value!r}: a name of letters, digits and ._:/@+- only")
        return ""

    def addresses(self, where: str, iface: Mapping[str, Any]) -> tuple[IPv4Interface, ...]:
        """``ip address`` keys (IPv6 ones skipped: the plan is IPv4)."""
        found = []
        for key in _keys(self.node(iface, "ip").get("address")):
            try:
                address = ip_interface(key)
            except ValueError:
                self.problems.append(f"{where} ip address {key!r} is not an address/prefix length")
                continue
            if isinstance(address, IPv4Interface):
                found.append(address)
        return tuple(found)


def _state_up(link: Mapping[str, Any]) -> bool:
    """``link state up|down`` (stored as a key, ``state: {up: {}}``, or as a value); NVUE brings a configured port
    up unless told down."""
    return "down" not in _keys(link.get("state"))


def _ports(r: _Reader, interfaces: Mapping[str, Any], bridge: str
           ) -> tuple[list[RoutedPort], dict[int, list[RoutedPort]]]:
    """The front-panel ports (breakout parents are cages, not ports) and the access members of each VLAN id."""
    ports: list[RoutedPort] = []
    members: dict[int, list[RoutedPort]] = {}
    # `link breakout <n>x` on swp<cage> makes its ports swp<cage>s0 .. s<n-1> ("Switch Port Attributes", Breakout)
    split = {name: int(b[:-1]) for name, iface in interfaces.items() if isinstance(iface, dict)
             for b in _keys(r.node(iface, "link").get("breakout")) if re.fullmatch(r"[2-8]x", b)}
    for name, iface in interfaces.items():
        if not isinstance(iface, dict) or iface.get("type") != "swp":
            continue
        match = _PORT.fullmatch(name)
        if match is None:
            r.problems.append(f"interface {name!r} is not an NVUE port name (swp<cage> or swp<cage>s<n>)")
            continue
        link = r.node(iface, "link")
        if any(b != "1x" for b in _keys(link.get("breakout"))):
            continue  # the cage of split ports (swp1 of swp1s0, swp1s1): no port of its own
        cage, sub = match.groups()
        where = f"interface {name}"
        if sub is not None and not int(sub) < split.get(f"swp{cage}", 0):
            r.problems.append(f"{where} is no port of swp{cage}, whose link breakout is "
                              f"{split.get(f'swp{cage}', 1)}x")
        if r.node(iface, "ip").get("vrf", "default") != "default":
            r.problems.append(f"{where} is in VRF {iface['ip']['vrf']!r}: the lab runs the default VRF only")
        port = RoutedPort(name, f"{cage}/{int(sub) + 1}" if sub is not None else cage,
                          r.integer(f"{where} link mtu", link.get("mtu"), 552, 9216, int(_RULES["default_mtu"])),
                          _state_up(link), r.text(f"{where} description", iface.get("description")),
                          r.addresses(where, iface))
        ports.append(port)
        domains = r.node(iface, "bridge", "domain")
        for domain, settings in domains.items():
            access = settings.get("access") if isinstance(settings, dict) else None
            if domain != bridge or access is None or "vlan" in (settings or {}):
                r.problems.append(f"{where} bridge domain {domain}: only access ports of {bridge} are read back "
                                  "(no trunks, no other bridge)")
                continue
            members.setdefault(r.integer(f"{where} access", access, 1, 4094, 0), []).append(port)
    return sorted(ports, key=lambda p: natural(p.name)), members


def _vlans(r: _Reader, tree: Mapping[str, Any], interfaces: Mapping[str, Any], bridge: str,
           members: Mapping[int, list[RoutedPort]]) -> tuple[Vlan, ...]:
    """Each SVI with its VLAN's access ports. A bridge's MTU is its lowest member's and a VLAN device's at most its
    bridge's (Cumulus Linux "Switch Port Attributes", Bridge MTU), so the SVI runs the lowest of its own MTU (9216
    unless set) and the bridge members'."""
    declared = {int(v) for v in _keys(r.node(tree, "bridge", "domain", bridge).get("vlan")) if v.isdigit()}
    bridged = [p for ports in members.values() for p in ports]
    vlans = []
    for name, iface in sorted(interfaces.items(), key=lambda item: natural(item[0])):
        if not isinstance(iface, dict) or iface.get("type") != "svi":
            continue
        match = _SVI.fullmatch(name)
        if match is None:
            r.problems.append(f"interface {name!r} is not an NVUE SVI name (vlan<id>)")
            continue
        where = f"interface {name}"
        vid = r.integer(f"{where} vlan", iface.get("vlan", match.group(1)), 1, 4094, 0)
        if vid not in declared:
            r.problems.append(f"{where} is the SVI of VLAN {vid}, which bridge domain {bridge} does not carry")
        own = r.integer(f"{where} link mtu", r.node(iface, "link").get("mtu"), 552, 9216, int(_RULES["default_mtu"]))
        vlans.append(Vlan(name, vid, min([own, *(p.mtu for p in bridged)]),
                          tuple(p.name for p in sorted(members.get(vid, []), key=lambda p: natural(p.name))),
                          r.addresses(where, iface)))
    for vid in sorted(set(members) - {v.vid for v in vlans}):
        r.problems.append(f"VLAN {vid} has access ports but no SVI: the lab routes a VLAN only through its SVI")
    return tuple(vlans)


def _loopback(r: _Reader, interfaces: Mapping[str, Any]) -> IPv4Interface:
    lo = interfaces.get(DATA.interface("loopback"), {})
    found = [a for a in r.addresses("interface lo", lo if isinstance(lo, dict) else {}) if a.network.prefixlen == 32]
    if len(found) != 1:
        r.problems.append(f"interface lo has {len(found)} IPv4 /32 addresses, not one: the lab takes the switch's "
                          "loopback (and NVUE its default router-id) from it")
        return IPv4Interface("0.0.0.0/32")
    return found[0]


def _neighbor(r: _Reader, address: str, settings: Mapping[str, Any], groups: Mapping[str, Any],
              ports: list[RoutedPort]) -> BgpNeighbor | None:
    """One numbered neighbor, its peer group's settings under its own (NVUE inherits what the neighbor leaves
    unset)."""
    where = f"vrf default router bgp neighbor {address}"
    try:
        peer = IPv4Address(address)
    except ValueError:
        r.problems.append(f"{where}: only numbered IPv4 neighbors are read back (an unnumbered session on a port "
                          "needs IPv6 link-local next hops the lab does not run)")
        return None
    group_name = settings.get("peer-group")
    group = groups.get(group_name, {}) if group_name is not None else {}
    if group_name is not None and group_name not in groups:
        r.problems.append(f"{where} peer-group {group_name!r} is not configured")

    def setting(*path: str) -> object:
        for source in (settings, group):
            value: object = source
            for key in path:
                value = value.get(key) if isinstance(value, dict) else None
            if value is not None:
                return value
        return None

    for key in sorted({*settings, *group} - _NEIGHBOR_KEYS):
        r.problems.append(f"{where} {key} is not read back (the lab would run the session without it)")
    remote = setting("remote-as")
    if remote in ("external", "internal"):
        r.problems.append(f"{where} remote-as {remote}: the lab needs the peer's AS number")
        remote = None
    if setting("address-family", "ipv4-unicast", "aspath", "allow-my-asn") is not None:
        r.problems.append(f"{where} aspath allow-my-asn is not read back yet")
    if not _on(setting("address-family", "ipv4-unicast", "enable") or "on"):
        r.problems.append(f"{where} address-family ipv4-unicast is off: the lab activates every neighbor")
    local = local_address(ports, peer)
    return BgpNeighbor(
        peer, r.integer(f"{where} remote-as", remote, 1, 4294967295, 0) if remote is not None else 0, local,
        r.text(f"{where} description", setting("description")),
        r.integer(f"{where} timers keepalive", setting("timers", "keepalive"), 0, 65535, int(_RULES["keepalive_s"])),
        r.integer(f"{where} timers hold", setting("timers", "hold"), 0, 65535, int(_RULES["hold_s"])),
        r.integer(f"{where} timers connection-retry", setting("timers", "connection-retry"), 1, 65535,
                  int(_RULES["connect_s"])),
        _on(setting("shutdown")))


def routing(switch: str, content: bytes) -> SwitchRouting:
    """The routing ``switches/<switch>/startup.yaml`` makes Cumulus Linux run; ConfigReadError with every problem."""
    where = f"switches/{switch}/{DATA.config_file(switch)}"
    try:
        document = safe_yaml(content)
    except (UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ConfigReadError(f"{where}: not YAML: {exc}") from None
    if not (isinstance(document, list) and len(document) == 1 and isinstance(document[0], dict)
            and set(document[0]) == {"set"} and isinstance(document[0]["set"], dict)):
        raise ConfigReadError(f"{where}: not an NVUE startup configuration (a one-item list `- set: {{...}}`)")
    tree: Mapping[str, Any] = document[0]["set"]
    r = _Reader()
    bridge = str(_RULES["bridge"])
    interfaces = r.node(tree, "interface")
    loopback = _loopback(r, interfaces)
    ports, members = _ports(r, interfaces, bridge)
    vlans = _vlans(r, tree, interfaces, bridge, members)
    for name, iface in interfaces.items():
        if isinstance(iface, dict) and iface.get("type") not in ("swp", "svi", "loopback", "eth"):
            r.problems.append(f"interface {name} of type {iface.get('type')!r} is not read back (bonds, "
                              "subinterfaces)")
    router = r.node(tree, "router", "bgp")
    vrf = r.node(tree, "vrf", "default", "router", "bgp")
    if not (_on(router.get("enable")) and _on(vrf.get("enable"))):
        r.problems.append("router bgp or vrf default router bgp is not enabled: the switch runs no BGP")
    asn = r.integer("router bgp autonomous-system", vrf.get("autonomous-system", router.get("autonomous-system")),
                    1, 4294967295, 0)
    router_id = str(vrf.get("router-id", router.get("router-id", loopback.ip)))
    try:
        rid = IPv4Address(router_id)
    except ValueError:
        r.problems.append(f"router bgp router-id {router_id!r} is no IPv4 address")
        rid = loopback.ip
    groups = r.node(vrf, "peer-group")
    neighbors = [n for address, settings in r.node(vrf, "neighbor").items()
                 if (n := _neighbor(r, str(address), settings if isinstance(settings, dict) else {}, groups, ports))]
    af = r.node(vrf, "address-family", "ipv4-unicast")
    if not _on(af.get("enable")):
        r.problems.append("vrf default router bgp address-family ipv4-unicast is not enabled (NVUE's default is "
                          "off): the switch exchanges no IPv4 routes")
    networks: list[IPv4Network] = []
    for prefix in _keys(af.get("network")):
        try:
            networks.append(IPv4Network(prefix))
        except ValueError:
            r.problems.append(f"address-family ipv4-unicast network {prefix!r} is no IPv4 prefix")
    redistribute = r.node(af, "redistribute")
    for source, settings in redistribute.items():
        if source != "connected":
            r.problems.append(f"address-family ipv4-unicast redistribute {source} is not read back")
        elif isinstance(settings, dict) and _on(settings.get("enable")):
            networks += connected(loopback, ports, vlans)
    multipaths = r.integer("address-family ipv4-unicast multipaths ebgp", r.node(af, "multipaths").get("ebgp"),
                           1, 128, int(_RULES["maximum_paths"]))
    relax = _on(r.node(vrf, "path-selection", "multipath").get("aspath-ignore", _RULES["multipath_relax"]))
    raise_problems(where, r.problems)
    return SwitchRouting(switch, asn, rid, loopback, tuple(ports), vlans,
                         tuple(sorted(neighbors, key=lambda n: n.address)), tuple(dict.fromkeys(networks)),
                         maximum_paths=multipaths, multipath_relax=relax, allowas_in=0)
