"""The Cluster model: immutable, defaults resolved, names expanded, catalog entries looked up.

Everything later stages need is here, so renderers never see the raw spec. Each spec-derived object keeps the
source position of the spec node it came from, so later stages can still report file:line. Domain sections
(subnet manager, RoCE class, address plan, SR-IOV, Lustre, Kubernetes, cloud) are types of their own modules.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from fabricgen.core.errors import SourcePosition
from fabricgen.model.addressing import Addressing
from fabricgen.model.cloud import Cloud
from fabricgen.model.ethernet import RoceQos, SpectrumX, SwitchManagement
from fabricgen.model.gds import GdsProfile
from fabricgen.model.hardware import Medium, NicModel, Speed, SwitchModel
from fabricgen.model.infiniband import SubnetManager
from fabricgen.model.kubernetes import Kubernetes
from fabricgen.model.lustre import LustreFs
from fabricgen.model.monitoring import Monitoring
from fabricgen.model.nccl import NcclOption
from fabricgen.model.nodes import Facility, NicRole, Node, NodeGroup, NodeProfile, Rack
from fabricgen.model.object_storage import ObjectStore
from fabricgen.model.scheduler import Scheduler
from fabricgen.model.sriov import Sriov


class FabricRole(StrEnum):
    COMPUTE = "compute"
    STORAGE = "storage"
    INBAND = "inband"
    OOB = "oob"

    @property
    def nic_role(self) -> NicRole:
        """The node NICs that attach to a fabric of this role (out-of-band carries the BMC ports)."""
        return NicRole.BMC if self is FabricRole.OOB else NicRole(self.value)


class FabricType(StrEnum):
    INFINIBAND = "infiniband"
    ROCE = "roce"  # Ethernet with a lossless class for RDMA
    ETHERNET = "ethernet"

    @property
    def ethernet(self) -> bool:
        """Ethernet links and switches (RoCE is Ethernet with a lossless class)."""
        return self is not FabricType.INFINIBAND

    @property
    def link_type(self) -> str:
        """The link type NIC ports and their VFs run on this fabric (mlx5's ``ib`` or ``eth``)."""
        return "eth" if self.ethernet else "ib"

    @property
    def family(self) -> str:
        """The catalog's word for the switches and speeds this fabric takes: ``infiniband`` or ``ethernet``."""
        return "ethernet" if self.ethernet else "infiniband"


class TopologyKind(StrEnum):
    RAIL_OPTIMIZED = "rail-optimized"
    FAT_TREE = "fat-tree"
    LEAF_SPINE = "leaf-spine"
    TOP_OF_RACK = "top-of-rack"


class Tier(StrEnum):
    LEAF = "leaf"
    SPINE = "spine"
    CORE = "core"


class Attachment(StrEnum):
    SINGLE = "single"
    DUAL_HOMED = "dual-homed"  # leaves in pairs, a node's ports alternating between the two
    MLAG = "mlag"  # leaves in MLAG pairs with a peer link; a node's bond members one to each leaf, one pair subnet

    @property
    def paired(self) -> bool:
        """Leaves come in pairs (2p+1, 2p+2) and a node's ports alternate between the two."""
        return self is not Attachment.SINGLE


@dataclass(frozen=True)
class FabricTopologySpec:
    kind: TopologyKind
    scalable_unit: int
    tiers: str
    oversubscription: float
    uplinks: int | None
    attachment: Attachment = Attachment.SINGLE
    server_ports: int | None = None  # host ports kept for servers on the first leaf (pair); None: the servers' own
    # rail-optimized: the SUs the fabric is planned to grow to (None: the SUs built), which the IPoIB rail subnets
    # are sized for so that SUs added renumber no rail; where it stands in the spec, for the check against the SUs
    max_scalable_units: int | None = None
    max_scalable_units_position: SourcePosition | None = field(default=None, compare=False)


@dataclass(frozen=True)
class TierPlacement:
    """Racks a tier's switches fill bottom-up, at most ``per_rack`` each, from ``start_u``."""

    racks: tuple[Rack, ...]
    per_rack: int
    start_u: int


@dataclass(frozen=True)
class Fabric:
    name: str
    role: FabricRole
    type: FabricType
    speed: Speed
    uplink_speed: Speed
    switches: Mapping[Tier, SwitchModel]
    topology: FabricTopologySpec
    naming: Mapping[Tier, str]
    node_groups: tuple[str, ...]
    position: SourcePosition = field(compare=False)
    placement: Mapping[Tier, TierPlacement] = field(default_factory=dict, compare=False)
    subnet_manager: SubnetManager | None = None
    nos: Mapping[Tier, str] = field(default_factory=dict, compare=False)  # empty: fabricgen configures no switch
    software: Mapping[str, str] = field(default_factory=dict, compare=False)  # NOS -> the release it runs
    mtu: int = 9100
    host_mtu: int = 9000
    qos: RoceQos | None = None
    addressing: Addressing | None = None
    sriov: Sriov | None = None
    spectrum_x: SpectrumX | None = None  # NVIDIA Spectrum-X: adaptive routing and the SuperNICs' settings

    def pod_groups(self, nodes: Sequence[Node]) -> tuple[str, ...]:
        """The node groups whose pods reach the fabric's ports: those given VFs (``sriov.groups``), or with
        host-device (no VFs) the attached groups of compute nodes: storage servers and management appliances run
        no pods."""
        if self.sriov is not None:
            return self.sriov.groups
        compute = {n.group for n in nodes if n.profile.role == "compute"}
        return tuple(g for g in self.node_groups if g in compute)


@dataclass(frozen=True)
class Metadata:
    name: str
    site: str
    description: str = ""


@dataclass(frozen=True)
class Cluster:
    metadata: Metadata
    facility: Facility
    profiles: Mapping[str, NodeProfile]
    groups: tuple[NodeGroup, ...]
    nodes: tuple[Node, ...]
    fabrics: tuple[Fabric, ...]
    nic_models: Mapping[str, NicModel]
    spec_digest: str
    # what generated headers say they come from ("Generated by fabricgen from cluster lab-1su"): the cluster, never
    # the spec's file name or path, so a spec renamed or moved renders the same bytes (core.naming.cluster_label)
    source: str
    media: tuple[Medium, ...] = ()
    cloud: Cloud | None = None
    lustre: tuple[LustreFs, ...] = ()
    gds: tuple[GdsProfile, ...] = ()  # GPUDirect Storage per node profile (gds feature)
    object_stores: tuple[ObjectStore, ...] = ()  # the object tier (object_storage feature)
    kubernetes: Kubernetes | None = None
    management: SwitchManagement | None = None  # the switches' management baseline (ethernet feature)
    scheduler: Scheduler | None = None  # the schedulers' view of the fabric (scheduler feature)
    nccl: tuple[NcclOption, ...] = ()  # NCCL options the spec sets, in ib_options.yaml order (nccl feature)
    monitoring: Monitoring | None = None  # alert thresholds (monitoring feature)
