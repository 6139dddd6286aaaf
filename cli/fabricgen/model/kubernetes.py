"""Kubernetes pod networking and the example workload."""

from __future__ import annotations

from dataclasses import dataclass, field

from fabricgen.core.errors import SourcePosition


@dataclass(frozen=True)
class Workload:
    """The training workload (a PyTorchJob and the same pod as a bare Pod): image, GPUs per pod, the profile whose
    nodes run it (and NCCL settings it carries), /dev/shm size, nodes (one pod each), restarts before it fails."""

    name: str
    image: str
    gpus: int
    profile: str
    shm_size: str
    command: tuple[str, ...]
    nodes: int = 2
    restarts: int = 3


EXCLUSIVE = "exclusive"  # RDMA devices live in one network namespace: what the rdma meta plugin needs for VFs
SHARED = "shared"  # every namespace sees every RDMA device: what the RDMA shared device plugin needs


@dataclass(frozen=True)
class Kubernetes:
    """Pod networking: SR-IOV operator objects or plain Multus attachments per rail, device plugins, a workload.

    ``rdma_mode`` is the nodes' RDMA namespace mode (ib_core netns_mode): exclusive where pods get VFs through the
    rdma meta plugin, shared where host-device pods reach their PF's RDMA device through the shared device plugin.
    """

    namespace: str
    operator: str  # "sriov-network-operator" or "none"
    operator_namespace: str
    cni: str  # without the operator: "sriov" or "host-device"
    resource_prefix: str
    fabrics: tuple[str, ...]
    rdma_hca_max: int
    workload: Workload | None
    rdma_mode: str
    position: SourcePosition = field(compare=False)

    @property
    def uses_vfs(self) -> bool:
        """Pods get SR-IOV VFs (operator, or Multus with the sriov CNI), else the PFs move in with host-device."""
        return self.operator != "none" or self.cni == "sriov"
