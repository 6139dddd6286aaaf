"""The Cluster model: immutable, defaults resolved, names expanded, catalog entries looked up.

Everything later stages need is here, so renderers never see the raw spec. Each spec-derived object keeps the
source position of the spec node it came from, so later stages can still report file:line.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from fabricgen.core.errors import SourcePosition


class NicRole(StrEnum):
    COMPUTE = "compute"
    STORAGE = "storage"
    INBAND = "inband"
    BMC = "bmc"


class FabricRole(StrEnum):
    COMPUTE = "compute"
    STORAGE = "storage"
    INBAND = "inband"
    OOB = "oob"

    @property
    def nic_role(self) -> NicRole:
        """The node NICs that attach to a fabric of this role (out-of-band carries the BMC ports)."""
        return NicRole.BMC if self is FabricRole.OOB else NicRole(self.value)


class TopologyKind(StrEnum):
    RAIL_OPTIMIZED = "rail-optimized"
    FAT_TREE = "fat-tree"
    LEAF_SPINE = "leaf-spine"
    TOP_OF_RACK = "top-of-rack"


class Tier(StrEnum):
    LEAF = "leaf"
    SPINE = "spine"
    CORE = "core"


@dataclass(frozen=True)
class Speed:
    name: str
    gbps: float
    type: str
    lanes: int
    ibsim: str = ""
    netbox_interface_type: str = "other"


def lane_options(gbps: float, lanes: int, lane_gbps: tuple[int, ...]) -> frozenset[tuple[int, int]]:
    """The (lanes, Gb/s per lane) a port with ``lanes`` electrical lanes and SerDes rates ``lane_gbps`` can run
    ``gbps`` on; empty when the catalog gives no lane data or no listed rate adds up to the speed."""
    return frozenset((int(gbps // rate), rate) for rate in lane_gbps if gbps % rate == 0 and gbps // rate <= lanes)


@dataclass(frozen=True)
class PortGroup:
    """Cages of one form factor; ``ports_per_cage`` gives the logical ports per cage at each speed, ``lanes`` the
    electrical lanes of one cage and ``lane_gbps`` the SerDes lane rates it runs (both optional: 0 and ())."""

    name: str
    cages: int
    form_factor: str
    ports_per_cage: tuple[tuple[str, int], ...]
    lanes: int = 0
    lane_gbps: tuple[int, ...] = ()

    def per_cage(self, speed: str) -> int:
        """Logical ports one cage gives at ``speed`` (0 when the cage cannot run at it)."""
        return next((n for s, n in self.ports_per_cage if s == speed), 0)

    @property
    def speeds(self) -> tuple[str, ...]:
        return tuple(speed for speed, _ in self.ports_per_cage)

    def lane_options(self, speed: Speed) -> frozenset[tuple[int, int]]:
        """(lanes, Gb/s per lane) one logical port of a cage split for ``speed`` can run it on."""
        per_cage = self.per_cage(speed.name)
        return lane_options(speed.gbps, self.lanes // per_cage, self.lane_gbps) if per_cage else frozenset()


@dataclass(frozen=True)
class SwitchModel:
    name: str
    vendor: str
    fabric_type: str
    height_u: int
    port_groups: tuple[PortGroup, ...]

    def capacity(self, speeds: tuple[str, ...]) -> int:
        """Logical ports when each cage runs at whichever of ``speeds`` gives it the most ports."""
        return sum(g.cages * max(g.per_cage(s) for s in speeds) for g in self.port_groups)

    def cage_group(self, cage: int) -> PortGroup:
        """The port group of a 1-based cage number counted across port groups."""
        for group in self.port_groups:
            if cage <= group.cages:
                return group
            cage -= group.cages
        raise ValueError(f"{self.name} has no cage {cage}")

    def cage_form_factor(self, cage: int) -> str:
        """Form factor of a 1-based cage number counted across port groups."""
        return self.cage_group(cage).form_factor

    def logical_ports(self, speed: str) -> int:
        """Ports this model offers when every cage that supports ``speed`` runs at it."""
        return sum(g.cages * g.per_cage(speed) for g in self.port_groups)


@dataclass(frozen=True)
class NicModel:
    name: str
    vendor: str
    ports: int
    speeds: tuple[str, ...]
    link_types: tuple[str, ...]
    max_vfs: int | None = None
    form_factor: str = ""
    lanes: int = 0  # electrical lanes of one port (0: not in the catalog)
    lane_gbps: tuple[int, ...] = ()  # SerDes lane rates a port runs

    def lane_options(self, speed: Speed) -> frozenset[tuple[int, int]]:
        """(lanes, Gb/s per lane) one port can run ``speed`` on."""
        return lane_options(speed.gbps, self.lanes, self.lane_gbps)


@dataclass(frozen=True)
class Optic:
    part: str
    connections: int


@dataclass(frozen=True)
class Medium:
    """One way to cable a link: copper, AOC, or transceivers plus fiber; cables come in standard lengths."""

    name: str
    speeds: tuple[str, ...]
    ends: tuple[str, ...]
    kind: str
    fiber: str
    reach_m: float
    cables: tuple[tuple[float, str], ...]
    host_optic: Optic | None
    switch_optic: Optic | None
    netbox_type: str
    color: str
    switch_form_factors: tuple[str, ...] = ()
    host_form_factors: tuple[str, ...] = ()
    legs: int = 1  # a splitter: one switch-side connector serving ``legs`` logical switch ports and host ports

    def fits(self, switch_form_factors: tuple[str, ...], host_form_factor: str | None) -> bool:
        """Whether the parts plug into these cages (an empty constraint accepts any cage)."""
        if self.switch_form_factors and any(f not in self.switch_form_factors for f in switch_form_factors):
            return False
        return not (host_form_factor and self.host_form_factors and host_form_factor not in self.host_form_factors)

    def standard_length(self, run_m: float) -> tuple[float, str] | None:
        """The shortest orderable cable (length, part) at least ``run_m`` long, within reach."""
        if run_m > self.reach_m:
            return None
        return next(((length, part) for length, part in self.cables if length >= run_m), None)


@dataclass(frozen=True)
class Nic:
    """One NIC port of a node profile, with its affinity: the rail it serves and the GPU next to it."""

    role: NicRole
    index: int
    port: str
    model: str
    dev: str = ""
    netdev: str = ""
    gpu: int | None = None
    numa: int | None = None
    rail: int | None = None
    pci: str = ""


@dataclass(frozen=True)
class LocalVolume:
    """A node's local NVMe file system offered to Kubernetes as a local PersistentVolume (the cache tier)."""

    path: str
    capacity_gib: int


@dataclass(frozen=True)
class NodeProfile:
    name: str
    role: str
    height_u: int
    gpus: int
    compute: tuple[Nic, ...]
    storage: tuple[Nic, ...]
    inband: Nic | None
    bmc: Nic | None
    position: SourcePosition | None = field(default=None, compare=False)
    memory_gb: int | None = None
    local_nvme: LocalVolume | None = None

    @property
    def rails(self) -> frozenset[int]:
        """The rails this profile's compute NICs serve."""
        return frozenset(n.rail or 0 for n in self.compute)

    def hca_port(self, nic: Nic) -> int:
        """The port number of ``nic`` on its HCA: NIC ports sharing one RDMA device count up in profile order."""
        if not nic.dev:
            return 1
        return [n for n in self.nics(nic.role) if n.dev == nic.dev].index(nic) + 1

    def nics(self, role: NicRole) -> tuple[Nic, ...]:
        """This profile's NIC ports of one role, in order."""
        if role is NicRole.COMPUTE:
            return self.compute
        if role is NicRole.STORAGE:
            return self.storage
        single = self.inband if role is NicRole.INBAND else self.bmc
        return (single,) if single is not None else ()


def rail_count(profiles: Iterable[NodeProfile]) -> int:
    """Rails of a fabric: one more than the highest rail any attached profile serves."""
    return 1 + max((max(p.rails, default=-1) for p in profiles), default=-1)


@dataclass(frozen=True)
class Rack:
    name: str
    row: str
    row_index: int
    index: int
    kind: str = "compute"


@dataclass(frozen=True)
class Node:
    name: str
    group: str
    profile: NodeProfile
    rack: Rack
    u: int


@dataclass(frozen=True)
class NodeGroup:
    pattern: str
    profile: str
    count: int
    position: SourcePosition


@dataclass(frozen=True)
class Facility:
    rack_units: int
    rack_width_m: float
    row_pitch_m: float
    tray_height_m: float
    slack_m: float
    rows: tuple[tuple[str, int], ...]
    racks: tuple[Rack, ...]
    switches_per_network_rack: int = 16


@dataclass(frozen=True)
class FabricTopologySpec:
    kind: TopologyKind
    scalable_unit: int
    tiers: str
    oversubscription: float
    uplinks: int | None


@dataclass(frozen=True)
class TierPlacement:
    """Racks a tier's switches fill bottom-up, at most ``per_rack`` each, from ``start_u``."""

    racks: tuple[Rack, ...]
    per_rack: int
    start_u: int


@dataclass(frozen=True)
class Secret:
    """Where a key is read on the SM host at start: an environment variable or a file, never the value."""

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


@dataclass(frozen=True)
class TrafficClass:
    dscp: int
    priority: int


@dataclass(frozen=True)
class RoceQos:
    """The lossless RoCE class end to end: DSCP and priority, CNP, ECN marking, PFC watchdog, scheduling."""

    lossless: TrafficClass
    cnp: TrafficClass
    ecn_min_kb: int
    ecn_max_kb: int
    ecn_max_probability: int
    pfcwd_detect_ms: int
    pfcwd_restore_ms: int
    pfcwd_action: str
    lossless_weight: int
    buffer_model: str = "traditional"  # SONiC: "dynamic" leaves lossless headroom and pool sizes to buffermgrd
    # SONiC shared headroom pool: 0 = none (each lossless PG reserves its own xoff), else the PGs' xoff is pooled
    # and the pool is their sum over this ratio (SONiC's own convention: over_subscribe_ratio 0 disables it)
    over_subscribe_ratio: int = 0
    shared_headroom_pool_position: SourcePosition | None = field(default=None, compare=False)

    @property
    def nccl_tc(self) -> int:
        """NCCL_IB_TC: the traffic class byte, DSCP in the top six bits and ECT(0) in the ECN bits."""
        return self.lossless.dscp << 2 | 0b10


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
class Fabric:
    name: str
    role: FabricRole
    type: str
    speed: Speed
    uplink_speed: Speed
    switches: Mapping[Tier, SwitchModel]
    topology: FabricTopologySpec
    naming: Mapping[Tier, str]
    node_groups: tuple[str, ...]
    position: SourcePosition = field(compare=False)
    placement: Mapping[Tier, TierPlacement] = field(default_factory=dict, compare=False)
    subnet_manager: SubnetManager | None = None
    nos: Mapping[Tier, str] = field(default_factory=dict, compare=False)
    mtu: int = 9100
    host_mtu: int = 9000
    qos: RoceQos | None = None
    addressing: Addressing | None = None
    sriov: Sriov | None = None


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
    source: str
    media: tuple[Medium, ...] = ()
    cloud: Cloud | None = None
    lustre: tuple[LustreFs, ...] = ()
    kubernetes: Kubernetes | None = None


@dataclass(frozen=True)
class CloudInstanceType:
    """A GPU instance type from the cloud catalog: GPUs, network cards and its maximum EFA/ERI interfaces."""

    name: str
    gpus: int
    gpu: str
    network_cards: int
    interfaces: int
    source: str
    fsx_efa_interfaces: int = 0  # AWS: EFA interfaces LNet uses as an FSx for Lustre client (0: TCP only)


@dataclass(frozen=True)
class CloudSubnet:
    """A subnet (AWS) or vSwitch (Alibaba Cloud): an existing one by ``id`` or a new one by ``cidr``."""

    id: str
    cidr: str
    zone: str


@dataclass(frozen=True)
class CloudFileSystem:
    """FSx for Lustre (PERSISTENT_2) or CPFS; ``throughput`` is MB/s per TiB."""

    kind: str
    name: str
    capacity_gib: int
    throughput: int
    mountpoint: str
    efa: bool = False
    metadata_iops: int | None = None
    storage_type: str = ""


@dataclass(frozen=True)
class Cloud:
    """A cloud cluster: one group of identical GPU instances in one zone, its network and its file systems."""

    provider: str
    region: str
    zone: str
    vpc_id: str
    vpc_cidr: str
    subnets: tuple[CloudSubnet, ...]
    ssh_ingress: tuple[str, ...]
    instance_type: CloudInstanceType
    names: tuple[str, ...]
    image: str
    key_pair: str
    group: str
    placement_group: bool
    capacity_kind: str
    capacity_id: str
    interfaces: int
    filesystems: tuple[CloudFileSystem, ...]
    tags: tuple[tuple[str, str], ...]
    position: SourcePosition | None = field(default=None, compare=False)
    # AWS, new VPC only: the subnet carved from the VPC for the NAT gateway that gives the cluster egress
    public_subnet: str = ""

    @property
    def interface_kind(self) -> str:
        """What the RDMA interfaces are called on this provider."""
        return "EFA" if self.provider == "aws" else "ERI"


@dataclass(frozen=True)
class LustreComponent:
    """One PFL component: up to ``end`` bytes (-1 = EOF), on OSTs or, with ``mdt``, on the MDT (Data-on-MDT)."""

    end: int
    stripe_count: int | None = None
    stripe_size: int | None = None
    mdt: bool = False


@dataclass(frozen=True)
class LustreLayout:
    path: str
    components: tuple[LustreComponent, ...]


@dataclass(frozen=True)
class LustreTunable:
    """A client parameter: ``param`` is the lctl name with the fsname filled in, ``why`` says what it does."""

    name: str
    param: str
    value: int
    why: str


@dataclass(frozen=True)
class LnetSettings:
    """One LNet network of a client: its LND, common tunables (per net) and LND tunables (per NI)."""

    network: str  # canonical: o2ib, o2ib1, tcp ... (network 0 is printed without its number)
    lnd: str  # o2ib or tcp
    tunables: tuple[tuple[str, int], ...]
    lnd_tunables: tuple[tuple[str, int], ...]
    module_options: tuple[tuple[str, int], ...]  # ko2iblnd module options (o2ib only)


@dataclass(frozen=True)
class LustreVolume:
    """The file system as a static Kubernetes PersistentVolume through the HPE Lustre CSI driver."""

    access: str
    capacity: str
    namespace: str
    mount_path: str


@dataclass(frozen=True)
class LustreFs:
    """A Lustre file system the nodes of ``profiles`` mount over ``fabric`` through ``interfaces`` (per profile)."""

    name: str
    fsname: str
    mgs: tuple[tuple[str, ...], ...]  # failover nodes, each with its NIDs
    mountpoint: str
    fabric: str
    groups: tuple[str, ...]
    interfaces: Mapping[str, tuple[str, ...]]  # profile name -> netdevs, in profile order
    lnet: LnetSettings
    mount_options: tuple[str, ...]
    profile: str
    client: tuple[LustreTunable, ...]
    layouts: tuple[LustreLayout, ...]
    volume: LustreVolume | None
    position: SourcePosition = field(compare=False)

    @property
    def mgs_spec(self) -> str:
        """mount.lustre's device: NIDs of one MGS node joined by ',', failover nodes by ':', then :/fsname."""
        return ":".join(",".join(nids) for nids in self.mgs) + f":/{self.fsname}"


@dataclass(frozen=True)
class Workload:
    """The example training pod: image, GPUs, the profile whose NCCL settings it carries, /dev/shm size."""

    name: str
    image: str
    gpus: int
    profile: str
    shm_size: str
    command: tuple[str, ...]


@dataclass(frozen=True)
class Kubernetes:
    """Pod networking: SR-IOV operator objects or plain Multus attachments per rail, device plugins, a workload."""

    namespace: str
    operator: str  # "sriov-network-operator" or "none"
    operator_namespace: str
    cni: str  # without the operator: "sriov" or "host-device"
    resource_prefix: str
    fabrics: tuple[str, ...]
    rdma_hca_max: int
    workload: Workload | None
    position: SourcePosition = field(compare=False)


VF_NODE_SHIFT = 16  # VF address offset = node << 16 | port << 8 | vf: readable in hex, unique by construction
VF_PORT_SHIFT = 8


@dataclass(frozen=True)
class Sriov:
    """SR-IOV VFs on a fabric's NIC ports; VF GUIDs (InfiniBand) and MACs (Ethernet) derive from a base."""

    link_type: str  # "ib" or "eth", from the fabric type
    vfs_per_port: int
    firmware_vfs: int
    rails: tuple[int, ...] | None
    devices: tuple[str, ...] | None
    guid_base: int | None
    mac_base: int | None
    link_state: str
    trust: bool
    spoofchk: bool
    vlan: int
    qos: int
    min_tx_rate_mbps: int
    max_tx_rate_mbps: int
    mtu: int
    position: SourcePosition = field(compare=False)
    groups: tuple[str, ...] = ()  # the node groups whose nodes get VFs: the fabric's, or the spec's subset

    def ports(self, profile: NodeProfile, role: NicRole) -> tuple[Nic, ...]:
        """The profile's NIC ports of the fabric's role that get VFs (rails and devices both narrow)."""
        return tuple(nic for nic in profile.nics(role)
                     if (self.rails is None or nic.rail in self.rails)
                     and (self.devices is None or nic.dev in self.devices))

    @staticmethod
    def slot(nic: Nic) -> int:
        """The port byte of a VF address: the rail of a compute port, the list index of any other port."""
        return nic.rail if nic.role is NicRole.COMPUTE and nic.rail is not None else nic.index

    @staticmethod
    def offset(node_index: int, slot: int, vf: int) -> int:
        """VF address offset from the base: node << 16 | port << 8 | vf."""
        return node_index << VF_NODE_SHIFT | slot << VF_PORT_SHIFT | vf
