"""A fabric's address pools and ASN numbering as the spec gives them, and the address plan compile allocates
from them."""

from __future__ import annotations

from dataclasses import dataclass, field

from fabricgen.core.errors import SourcePosition


@dataclass(frozen=True)
class LeafAsn:
    """A leaf ASN pinned in the spec (``asn.leaves``): the name is checked once compile has named the leaves."""

    leaf: str
    asn: int
    position: SourcePosition = field(compare=False)


@dataclass(frozen=True)
class Addressing:
    hosts: str
    p2p: str          # "" on InfiniBand fabrics, which route no IP between switches
    loopbacks: str    # "" on InfiniBand fabrics
    management: str | None
    asn_core: int
    asn_spine: int
    asn_leaf_base: int
    position: SourcePosition = field(compare=False)
    management_gateway: str | None = None
    asn_leaves: tuple[LeafAsn, ...] = ()   # pinned leaf ASNs, in spec order; other leaves count from leaf_base


@dataclass(frozen=True)
class HostSubnet:
    leaf: str             # the leaf owning the subnet; "" for an IPoIB rail subnet
    network: str          # "10.20.0.0/27"
    gateway: str          # the leaf's address, "10.20.0.1"; "" for IPoIB (no router)
    hosts: tuple[tuple[str, int, str], ...]  # (node, node NIC port number, "10.20.0.2")
    rail: int | None = None  # IPoIB rail subnets: the rail (port group) they serve
    peer: str = ""        # an MLAG pair's second leaf, which announces the subnet too; gateway = the anycast one
    leaf_addresses: tuple[str, ...] = ()  # MLAG: each leaf's own SVI address (leaf, peer), beside the gateway


@dataclass(frozen=True)
class PodRange:
    """A leaf's pod addresses on a routed fabric: the pods on its hosts' VFs, or on the PFs host-device moves into
    them (in the leaf's VLAN), take addresses from ``network`` past ``gateway``, a second address of the leaf's SVI
    that the leaf announces into BGP."""

    leaf: str
    network: str          # "10.20.4.0/23"
    gateway: str          # "10.20.4.1"
    nodes: tuple[str, ...]  # the nodes with a port on this leaf, in leaf port order


@dataclass(frozen=True)
class P2p:
    lower: str
    lower_port: int
    lower_ip: str         # "10.21.0.1/31"
    upper: str
    upper_port: int
    upper_ip: str         # "10.21.0.0/31"


@dataclass(frozen=True)
class FabricAddresses:
    loopbacks: dict[str, str]
    management: dict[str, str]
    asn: dict[str, int]
    p2p: tuple[P2p, ...]
    hosts: tuple[HostSubnet, ...]
    pods: tuple[PodRange, ...] = ()  # per leaf, on routed fabrics whose ports pods take (Ethernet VFs, host-device PFs)
