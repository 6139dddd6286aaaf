"""An InfiniBand fabric's subnet manager: routing, partitions, QoS levels, keys (where to read them) and GUIDs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from fabricgen.core.errors import SourcePosition


@dataclass(frozen=True)
class Secret:
    """Where a secret is read where it is used (the SM host at start, a switch at deploy time): an environment
    variable or a file, never the value."""

    env: str = ""
    file: str = ""


@dataclass(frozen=True)
class Ipoib:
    mtu: int
    rate_gbps: float | None
    sl: int


@dataclass(frozen=True)
class Partition:
    """An InfiniBand partition; members are all HCAs, or node groups/nodes, optionally narrowed to rails."""

    name: str
    pkey: int
    members_all: bool
    groups: tuple[str, ...]
    nodes: tuple[str, ...]
    rails: tuple[int, ...] | None
    membership: str
    ipoib: Ipoib | None
    position: SourcePosition = field(compare=False)


@dataclass(frozen=True)
class QosLevel:
    sl: int
    partition: str | None = None
    ulp: str | None = None


@dataclass(frozen=True)
class Qos:
    max_vls: int
    high_limit: int
    vlarb_high: str
    vlarb_low: str
    sl2vl: str
    levels: tuple[QosLevel, ...]


@dataclass(frozen=True)
class GuidEntry:
    """GUIDs of one device from the site inventory: a switch, or one HCA (node + RDMA device)."""

    node_guid: int
    port_guid: int
    position: SourcePosition = field(compare=False)


@dataclass(frozen=True)
class SubnetManager:
    flavor: str
    engines: tuple[str, ...]
    fallback_to_minhop: bool
    hosts: tuple[tuple[str, int], ...]
    lmc: int
    sweep_interval: int
    config_dir: str
    partitions: tuple[Partition, ...]
    qos: Qos | None
    keys: tuple[tuple[str, Secret], ...]
    guids: str  # "simulated", "inventory" or "unknown"
    inventory: Mapping[str, GuidEntry] = field(default_factory=dict, compare=False)
    position: SourcePosition | None = field(default=None, compare=False)
