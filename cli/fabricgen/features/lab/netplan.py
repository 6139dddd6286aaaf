"""A host's interfaces on one fabric as its rendered netplan files configure them (pure): MTU, addresses, routes
(main table and per-port tables), source rules and bonds, the parts of netplan's YAML fabricgen writes. The lab
configures a host namespace from this, not from the address plan, so it runs what a host would be given."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv4Interface, IPv4Network
from typing import Any

import yaml

from fabricgen.core.errors import ConfigReadError
from fabricgen.core.yamldata import safe_load as safe_yaml


@dataclass(frozen=True)
class HostRoute:
    to: IPv4Network
    via: IPv4Address | None = None
    metric: int = 0
    table: int = 0
    on_link: bool = False  # scope: link (a connected route, no gateway)


@dataclass(frozen=True)
class HostInterface:
    """One netplan interface: an ethernet, or a bond over ``members`` (``primary`` first, ``mode``)."""

    name: str
    mtu: int
    addresses: tuple[IPv4Interface, ...]
    routes: tuple[HostRoute, ...]
    rules: tuple[tuple[IPv4Address, int, int], ...]  # routing-policy: (from, table, priority; 0 = the kernel's)
    members: tuple[str, ...] = ()
    mode: str = ""
    primary: str = ""


def _interface(name: str, body: Mapping[str, Any], where: str, bond: bool) -> HostInterface:
    routes = []
    for r in body.get("routes") or ():
        via = r.get("via")
        routes.append(HostRoute(IPv4Network(str(r["to"])), IPv4Address(str(via)) if via else None,
                                int(r.get("metric", 0)), int(r.get("table", 0)), r.get("scope") == "link"))
    rules = tuple((IPv4Address(str(p["from"])), int(p["table"]), int(p.get("priority", 0)))
                  for p in body.get("routing-policy") or ())
    params = body.get("parameters") or {}
    members = tuple(str(m) for m in body.get("interfaces") or ()) if bond else ()
    if bond and not members:
        raise ValueError(f"{where}: bond {name} has no interfaces")
    return HostInterface(name, int(body.get("mtu", 1500)), tuple(IPv4Interface(str(a)) for a in body.get("addresses")
                                                                  or ()), tuple(routes), rules, members,
                         str(params.get("mode", "balance-rr" if bond else "")), str(params.get("primary", "")))


def host_interfaces(files: Sequence[tuple[str, bytes]], netdevs: Iterable[str]) -> tuple[HostInterface, ...]:
    """The interfaces of ``files`` (netplan YAML, merged in order as netplan merges them) that are one of
    ``netdevs`` or a bond over one of them; ConfigReadError naming the file on what is not netplan as fabricgen
    writes it."""
    wanted = set(netdevs)
    found: dict[str, HostInterface] = {}
    problems = []
    for path, content in files:
        try:
            network = (safe_yaml(content) or {})["network"]
            for kind in ("ethernets", "bonds"):
                for name, body in (network.get(kind) or {}).items():
                    found[str(name)] = _interface(str(name), body or {}, path, kind == "bonds")
        except (yaml.YAMLError, KeyError, TypeError, ValueError, AttributeError) as exc:
            problems.append(f"{path}: not netplan as fabricgen writes it ({type(exc).__name__}: {exc})")
    if problems:
        raise ConfigReadError("\n".join(problems))
    bonds = [i for i in found.values() if i.members and wanted & set(i.members)]
    members = {m for b in bonds for m in b.members}
    return tuple(i for name, i in sorted(found.items()) if name in wanted | members or i in bonds)
