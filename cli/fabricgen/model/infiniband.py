"""An InfiniBand fabric's subnet manager: routing, partitions, QoS levels, keys (where to read them) and GUIDs.

The partition model says who talks to whom, and the build resolves it once for every consumer (the OpenSM
files, NCCL, IPoIB hosts, SR-IOV VFs, the checks):

- ``traffic.compute`` names the partitions NCCL and UCX run on. Each compute HCA port is a full member of
  exactly one of them, which OpenSM puts at P_Key index 0 of that port (``indx0``; Default sits there anyway), so
  ``NCCL_IB_PKEY`` (an index) is 0 on every host and a pod's VF sees the same partition at its own index 0.
- ``traffic.ipoib`` names the partitions carrying IPoIB addresses: on the parent interface when the port's
  index-0 partition is its IPoIB partition (the kernel's parent uses index 0), else on a child interface created
  with that P_Key.
- Every partition has one service level: its QoS level (by partition, or the ``ipoib`` ULP rule for Default), else
  the default level; qos-policy.conf, the IPoIB broadcast group (``sl=``) and ``NCCL_IB_SL`` all carry it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from fabricgen.core.errors import SourcePosition
from fabricgen.model.nodes import Nic, NicRole, Node


class IbSpeed(StrEnum):
    """Per-lane speeds ibnetdiscover prints (ibnetdiscover.c dump_linkspeed*_compat; XDR from newer releases)."""

    SDR = "SDR"
    DDR = "DDR"
    QDR = "QDR"
    FDR10 = "FDR10"
    FDR = "FDR"
    EDR = "EDR"
    HDR = "HDR"
    NDR = "NDR"
    XDR = "XDR"


DEFAULT_PKEY = 0x7FFF
FULL_MEMBER = 0x8000  # the membership bit of a P_Key table entry (and of the pkey an IPoIB child is created with)
NVIDIA_OPENSM = (5,)  # NVIDIA's OpenSM (DOCA-OFED/MLNX_OFED, UFM) numbers its releases 5.x; upstream's last is 3.3.24


def nvidia_opensm(flavor: str, version: str) -> bool:
    """NVIDIA's OpenSM runs the fabric: UFM's, or flavor opensm stating a 5.x release (DOCA-OFED/MLNX_OFED)."""
    return flavor == "ufm" or (bool(version) and tuple(int(x) for x in version.split(".")) >= NVIDIA_OPENSM)


@dataclass(frozen=True)
class Secret:
    """Where a secret is read where it is used (the SM host at start, a switch at deploy time): an environment
    variable or a file, never the value."""

    env: str = ""
    file: str = ""


@dataclass(frozen=True)
class Ipoib:
    """The IPoIB broadcast group OpenSM creates for a partition (``ipoib`` flag): its MTU and rate."""

    mtu: int
    rate_gbps: float | None


@dataclass(frozen=True)
class Members:
    """Ports chosen by node groups and nodes, optionally narrowed to rails."""

    groups: tuple[str, ...] = ()
    nodes: tuple[str, ...] = ()
    rails: tuple[int, ...] | None = None

    def has(self, node: Node, nic: Nic) -> bool:
        chosen = node.group in self.groups or node.name in self.nodes
        return chosen and (self.rails is None or nic.rail in self.rails)


@dataclass(frozen=True)
class Partition:
    """An InfiniBand partition; members are all HCAs, or node groups/nodes, optionally narrowed to rails.

    ``limited`` chooses ports that are limited members whatever ``membership`` says (a shared services partition:
    tenants limited, the service nodes full, so tenants reach the services but not each other); ``joins_tenants``:
    the spec accepts that full members of two compute partitions meet here. ``sl`` is the partition's one service
    level; ``index0``: it carries compute traffic, so OpenSM puts it at P_Key index 0 of its members (partitions.conf
    ``indx0``). ``implicit``: fabricgen added it (Default, when the spec names none).
    """

    name: str
    pkey: int
    members_all: bool
    groups: tuple[str, ...]
    nodes: tuple[str, ...]
    rails: tuple[int, ...] | None
    membership: str
    ipoib: Ipoib | None
    position: SourcePosition = field(compare=False)
    sl: int = 0
    index0: bool = False
    implicit: bool = False
    limited: Members | None = None
    joins_tenants: bool = False

    @property
    def is_default(self) -> bool:
        return self.pkey == DEFAULT_PKEY

    def _chosen(self, node: Node, nic: Nic) -> bool:
        return self.members_all or Members(self.groups, self.nodes, self.rails).has(node, nic)

    def has_member(self, node: Node, nic: Nic) -> bool:
        """Whether the port of ``nic`` on ``node`` is a member (full or limited)."""
        return self._chosen(node, nic) or (self.limited is not None and self.limited.has(node, nic))

    def membership_of(self, node: Node, nic: Nic) -> str:
        """The port's membership as partitions.conf writes it (``limited_members`` win over ``members``)."""
        return "limited" if self.limited is not None and self.limited.has(node, nic) else self.membership

    def full_member(self, node: Node, nic: Nic) -> bool:
        return self.has_member(node, nic) and self.membership_of(node, nic) != "limited"


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
    stated: frozenset[str] = frozenset()  # the settings the spec gives (the others are fabricgen's defaults)


@dataclass(frozen=True)
class GuidEntry:
    """GUIDs of one device from the site inventory: a switch, or one HCA (node + RDMA device)."""

    node_guid: int
    port_guid: int
    position: SourcePosition = field(compare=False)


@dataclass(frozen=True)
class AdaptiveRouting:
    """NVIDIA's SM only: adaptive routing (the ar_ engines) and SHIELD; ``service_levels`` the SLs adaptive routing
    applies to (ar_sl_mask), None for NVIDIA's default (all)."""

    enabled: bool = True
    shield: str = "on"  # on | no-pfrn | off
    service_levels: tuple[int, ...] | None = None


@dataclass(frozen=True)
class Sharp:
    """SHARP on the fabric: the compute partition its jobs run on and how sharp_am talks to the jobs' libsharp."""

    partition: str
    smx_protocol: str = "ucx"  # ucx | sockets
    position: SourcePosition | None = field(default=None, compare=False)


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
    compute: tuple[str, ...] = ("Default",)  # traffic.compute: the partitions NCCL and UCX use
    ipoib: tuple[str, ...] = ("Default",)  # traffic.ipoib: the partitions carrying IPoIB addresses
    m_key_protection_level: int = 0
    m_key_lease_period: int = 0
    opensm_version: str = ""  # flavor opensm: the OpenSM release on the SM hosts, when the spec states it
    adaptive_routing: AdaptiveRouting | None = None  # NVIDIA's SM (flavor ufm) only; None: static routing
    sharp: Sharp | None = None

    def partition(self, name: str) -> Partition:
        return next(p for p in self.partitions if p.name == name)

    @property
    def nvidia(self) -> bool:
        """NVIDIA's OpenSM (UFM's or a 5.x release): adaptive routing, SHIELD and SHARP exist only there."""
        return nvidia_opensm(self.flavor, self.opensm_version)

    def compute_partitions(self, node: Node, nic: Nic) -> tuple[Partition, ...]:
        """The compute partitions the port is a full member of (the checks require exactly one)."""
        return tuple(p for p in self.partitions if p.name in self.compute and p.full_member(node, nic))

    def compute_partition(self, node: Node, nic: Nic) -> Partition | None:
        """The partition NCCL and UCX use on this port (and the port's VFs, for their pods)."""
        found = self.compute_partitions(node, nic)
        return found[0] if found else None

    def profile_partitions(self, nodes: Sequence[Node], groups: Sequence[str], role: NicRole, profile: str
                           ) -> list[Partition]:
        """The compute partitions the nodes of ``profile`` in ``groups`` run NCCL on, by pkey: one per tenant,
        since a profile's NCCL settings are shared by all its nodes."""
        found = {p.pkey: p for node in nodes if node.profile.name == profile and node.group in groups
                 for nic in node.profile.nics(role) if (p := self.compute_partition(node, nic)) is not None}
        return [found[k] for k in sorted(found)]

    def ipoib_partitions(self, node: Node, nic: Nic) -> tuple[Partition, ...]:
        return tuple(p for p in self.partitions if p.name in self.ipoib and p.full_member(node, nic))

    def ipoib_partition(self, node: Node, nic: Nic) -> Partition | None:
        """The partition the port's IPoIB address lives on."""
        found = self.ipoib_partitions(node, nic)
        return found[0] if found else None

    def index0_partition(self, node: Node, nic: Nic) -> Partition | None:
        """The partition OpenSM puts at P_Key index 0 of the port: an ``indx0`` partition it belongs to, else
        Default (OpenSM keeps 0x7fff at index 0 unless another partition takes it; osm_pkey_mgr.c)."""
        for p in self.partitions:
            if p.index0 and p.has_member(node, nic):
                return p
        return next((p for p in self.partitions if p.is_default and p.has_member(node, nic)), None)
