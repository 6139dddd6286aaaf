"""A switch's routing as its rendered configuration says it runs: addresses, VLANs, BGP and what it announces.

Each NOS module reads its own configuration artifact into this one shape (``Nos.routing``), so the lab
(``fabricgen lab``) configures FRR from what would be deployed, not from a second rendering of the model. The
fields are the NOS's own values after its routing daemon's rules (a SONiC leaf announces what bgpcfgd's
templates make it announce), never the plan's.
"""

from __future__ import annotations

from dataclasses import dataclass
from ipaddress import IPv4Address, IPv4Interface, IPv4Network


@dataclass(frozen=True)
class RoutedPort:
    """A front-panel port as configured: its NOS name, the cage (and lane group) it is in, in fabricgen's
    ``<cage>/<n>`` form (how the plan names it, so the lab can put the planned cable on it), its MTU, whether it is
    up, the peer its description names and, on a routed port, its addresses (a VLAN member has none of its own).
    ``lldp_id``: the Port ID the NOS's LLDP agent sends for it where that is not ``name`` (SONiC: the PORT alias)."""

    name: str
    panel: str
    mtu: int
    up: bool
    description: str = ""
    addresses: tuple[IPv4Interface, ...] = ()
    lldp_id: str = ""


@dataclass(frozen=True)
class Vlan:
    """An access VLAN with its SVI: the hosts' gateway addresses live on the SVI, its members are ports."""

    name: str
    vid: int
    mtu: int
    members: tuple[str, ...]
    addresses: tuple[IPv4Interface, ...]


@dataclass(frozen=True)
class BgpNeighbor:
    """One eBGP session as configured on this side."""

    address: IPv4Address
    remote_asn: int
    local_address: IPv4Address | None
    description: str
    keepalive_s: int
    hold_s: int
    connect_s: int = 0  # seconds between connection attempts (0: the routing daemon's default)
    shutdown: bool = False


@dataclass(frozen=True)
class SwitchRouting:
    """Everything routing needs from one switch's configuration.

    ``networks``: the prefixes the switch originates into BGP. ``maximum_paths``: the ECMP width its BGP
    installs (0: the routing daemon's own default). ``allowas_in``: how often a path may carry the switch's own
    ASN and still be accepted (0: never, the eBGP default).
    """

    name: str
    asn: int
    router_id: IPv4Address
    loopback: IPv4Interface
    ports: tuple[RoutedPort, ...]
    vlans: tuple[Vlan, ...]
    neighbors: tuple[BgpNeighbor, ...]
    networks: tuple[IPv4Network, ...]
    maximum_paths: int = 0
    multipath_relax: bool = False
    allowas_in: int = 0
