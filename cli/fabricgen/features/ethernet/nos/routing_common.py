"""What the NVUE and EOS routing read-backs (``Nos.routing``) share: port order, the prefixes ``redistribute
connected`` originates, the local end of a numbered session and the one report of a file's problems. (SONiC's
read-back predates them and keeps its own.)"""

from __future__ import annotations

import re
from collections.abc import Iterable
from ipaddress import IPv4Address, IPv4Interface, IPv4Network

from fabricgen.core.errors import ConfigReadError
from fabricgen.model.routing import RoutedPort, Vlan


def natural(name: str) -> tuple[str | int, ...]:
    """swp2 before swp10, Ethernet2/1 before Ethernet10/1: the order the NOSes list their ports in."""
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name))


def connected(loopback: IPv4Interface, ports: Iterable[RoutedPort], vlans: Iterable[Vlan]) -> list[IPv4Network]:
    """What ``redistribute connected`` originates: the loopback, the subnets of the routed ports that are up (a
    port down has no connected route) and of the SVIs."""
    return [a.network for a in (loopback, *(a for p in ports if p.up for a in p.addresses),
                                *(a for v in vlans for a in v.addresses))]


def local_address(ports: Iterable[RoutedPort], peer: IPv4Address) -> IPv4Address | None:
    """The address a numbered eBGP session to ``peer`` leaves from: this switch's on the subnet that holds it."""
    return next((a.ip for p in ports for a in p.addresses if peer in a.network), None)


def raise_problems(where: str, problems: list[str]) -> None:
    """One ConfigReadError with every problem of the file at ``where`` (each once), if there is any."""
    if problems:
        raise ConfigReadError("\n".join(f"{where}: {problem}" for problem in dict.fromkeys(problems)))
