"""Kubernetes pod networking and the example workload."""

from __future__ import annotations

from dataclasses import dataclass, field

from fabricgen.core.errors import SourcePosition


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
