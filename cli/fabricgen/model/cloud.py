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

    @property
    def eri_mtu(self) -> int:
        """Alibaba's rule for eRDMA with NCCL's LL128: MTU 8500 with jumbo frames, 1400 without."""
        return 8500 if self.jumbo_frames else 1400

    @property
    def interface_kind(self) -> str:
        """What the RDMA interfaces are called on this provider."""
        return "EFA" if self.provider == "aws" else "ERI"
