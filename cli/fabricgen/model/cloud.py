"""A cloud cluster: one group of GPU instances in one zone, its network and its file systems."""

from __future__ import annotations

from dataclasses import dataclass, field

from fabricgen.core.errors import SourcePosition


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
    nvswitch: bool = False  # HGX board with NVSwitch: NVIDIA Fabric Manager must run before CUDA can start


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
class CloudAccess:
    """How operators reach the instances (no public addresses): ``ssm`` (AWS SSM Session Manager), ``bastion`` (an
    SSH jump host in the public subnet, reached from ``ingress``) or ``none`` (no path, no SSH rule)."""

    kind: str
    ingress: tuple[str, ...] = ()
    instance_type: str = ""


@dataclass(frozen=True)
class GcpNic:
    """One NIC of a Google Cloud A3 instance, in NIC order: ``host`` (gVNIC, nic0 first) or ``gpu`` (gVNIC for
    GPUDirect-TCPX/TCPXO, MRDMA for RDMA); ``network`` is the index of its VPC (MRDMA NICs share the RoCE VPC)."""

    role: str
    nic_type: str
    network: int
    subnet: int


@dataclass(frozen=True)
class GpuNicTopology:
    """The GPU-NIC topology file TCPX's RxDM reads (``--gpu_nic_preset manual``): per GPU NIC its interface name,
    PCI address and the GPUs behind its PCIe switch (``nics``: (ifname, pci, gpus)), each of those GPUs' receive
    queues in order (``queues``), and RxDM's flow-steering sizes."""

    path: str
    nics: tuple[tuple[str, str, tuple[str, ...]], ...]
    queues: tuple[tuple[int, ...], ...]
    rss_set_size: int
    tcpd_queue_size: int
    max_rx_rules: int


@dataclass(frozen=True)
class GpuDirectStack:
    """Google's software for one GPUDirect kind (``tcpx``, ``tcpxo``, ``rdma``), from the catalog: the NCCL plugin
    (an installer image, or a Debian package, with the host NCCL it is run with), the receive-datapath manager
    (RxDM) image and, for TCPX, its GPU-NIC topology, where the plugin's libraries land and the environment profile
    Google's installer writes."""

    kind: str
    name: str
    library_dir: str
    plugin_image: str = ""
    plugin_install: tuple[str, ...] = ()
    rxdm_image: str = ""
    package: str = ""
    profile: str = ""
    nccl_package: str = ""
    topology: GpuNicTopology | None = None


@dataclass(frozen=True)
class NetworkWait:
    """How boot waits for the NICs to be routable before the startup script and RxDM: the interfaces (none: every
    link systemd-networkd manages), the timeout, and the seconds it settles after."""

    interfaces: tuple[str, ...]
    timeout: int
    settle: int


@dataclass(frozen=True)
class Gcp:
    """What a Google Cloud A3 cluster adds: the project, its NICs and VPCs, the gVNIC VPCs' MTU and the host VPCs'
    own (``host_mtu``), the GPUDirect stack, the
    compact placement's max distance (0: best effort), the boot disk type, how boot waits for the NICs, the NCCL
    environment Google documents
    for the type (name, value, why), loaded after the stack's profile, and the private service access range Managed
    Lustre is peered into (carved from network.vpc.cidr; empty without file systems)."""

    project: str
    stack: GpuDirectStack
    nics: tuple[GcpNic, ...]
    mtu: int
    host_mtu: int
    max_distance: int
    boot_disk: str
    network_wait: NetworkWait
    nccl: tuple[tuple[str, str, str], ...] = ()
    services: str = ""


@dataclass(frozen=True)
class Cloud:
    """A cloud cluster: one group of identical GPU instances in one zone, its network and its file systems."""

    provider: str
    region: str
    zone: str
    vpc_id: str
    vpc_cidr: str
    subnets: tuple[CloudSubnet, ...]
    access: CloudAccess
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
    system_disk_gib: int = 200
    jumbo_frames: bool = False  # Alibaba Cloud: jumbo frames, and the ERIs' MTU 8500 instead of 1400
    gcp: Gcp | None = None

    @property
    def eri_mtu(self) -> int:
        """Alibaba's rule for eRDMA with NCCL's LL128: MTU 8500 with jumbo frames, 1400 without."""
        return 8500 if self.jumbo_frames else 1400

    @property
    def interface_kind(self) -> str:
        """What the RDMA interfaces are called on this provider."""
        return {"aws": "EFA", "alicloud": "ERI"}.get(self.provider, "GPUDirect")
