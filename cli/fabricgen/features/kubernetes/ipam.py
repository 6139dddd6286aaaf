"""Pod addresses through NVIDIA's nv-ipam (the ``nvIpam`` of the network operator release the other images come
from): one IPPool per fabric, which hands each node a block of ``perNodeBlockSize`` addresses, and the pod networks'
IPAM ``{"type": "nv-ipam", "poolName": ...}``.

The pool is the fabric's host pool. Its controller places blocks at the subnet's second address plus multiples of
the block size and skips a block only when exclusions cover it entirely (nvidia-k8s-ipam
``pkg/ipam-controller/allocator/allocator.go``); a block that only touches an exclusion is still handed to a node,
which then gets fewer addresses than it needs. So every block that holds a host subnet's or a Lustre MGS's address
is excluded whole, and each node's block holds every address its pods can ask for at once.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from netaddr import IPAddress, IPNetwork, IPRange, IPSet

from fabricgen.core.errors import Finding, Severity
from fabricgen.features.kubernetes.build import pod_ports, pod_profiles
from fabricgen.features.kubernetes.nodes import PROFILE_LABEL
from fabricgen.model.cluster import Fabric
from fabricgen.model.kubernetes import Kubernetes
from fabricgen.model.topology import Topology

POOL_TYPE = "ippool"


@dataclass(frozen=True)
class PodPool:
    """One fabric's pod addresses: the subnet, the per-node block (pod network ports x pods per port), the blocks
    excluded, the node profiles it serves and how many nodes carry them (each takes one block)."""

    name: str
    subnet: IPNetwork
    ports: int
    pods_per_port: int
    excluded: tuple[IPRange, ...]  # whole blocks, merged
    profiles: tuple[str, ...]
    nodes: int

    @property
    def block(self) -> int:
        """perNodeBlockSize: every address a node's pods can hold at once, one per pod network interface."""
        return self.ports * self.pods_per_port

    @property
    def free_blocks(self) -> int:
        """Blocks the controller can hand out: whole blocks inside the subnet (never the network or the broadcast
        address) less the excluded ones."""
        excluded = sum(int(r.size) for r in self.excluded)
        return (int(self.subnet.size) - 2) // self.block - excluded // self.block


def pool_name(fabric: Fabric) -> str:
    """An IPPool name is a CNI network name as well (the webhook checks it): the fabric name is an identifier."""
    return f"{fabric.name}-pods"


def _reserved(topology: Topology, fabric: Fabric) -> IPSet:
    """Addresses pods must never get: the subnets the plan gives the hosts, the fabric's Lustre MGS NIDs (they
    sit in the pool outside the host subnets) and the leaves' pod gateways (their SVIs' second addresses)."""
    plan = topology.addresses.get(fabric.name)
    if fabric.addressing is None or plan is None:
        raise ValueError(f"fabric {fabric.name} has no address plan for its pod networks")
    servers = {nid.partition("@")[0] for fs in topology.cluster.lustre if fs.fabric == fabric.name
               for node in fs.mgs for nid in node}
    return IPSet([s.network for s in plan.hosts] + sorted(servers) + [p.gateway for p in plan.pods])


def pod_pool(topology: Topology, fabric: Fabric, k8s: Kubernetes) -> PodPool:
    """The fabric's IPPool as :class:`PodPool`: see the module docstring for why exclusions are whole blocks. Each
    port serves at most its VFs' pods (one pod per PF with host-device)."""
    assert fabric.addressing is not None
    subnet = IPNetwork(fabric.addressing.hosts).cidr
    profiles = pod_profiles(fabric, topology.cluster.nodes)
    ports = max(len(pod_ports(fabric, profile)) for _, profile in profiles)
    pods = fabric.sriov.vfs_per_port if k8s.uses_vfs and fabric.sriov is not None else 1
    block, first = ports * pods, subnet.first + 1
    touched = IPSet()
    for cidr in _reserved(topology, fabric).iter_cidrs():
        for k in range(max(cidr.first - first, 0) // block, (cidr.last - first) // block + 1):
            start = first + k * block
            if start + block - 1 < subnet.last:  # a block the controller can place
                touched.add(IPRange(start, start + block - 1))
    names = tuple(name for name, _ in profiles)
    nodes = sum(1 for n in topology.cluster.nodes if n.profile.name in names)  # the label selects the profile
    return PodPool(pool_name(fabric), subnet, ports, pods, tuple(touched.iter_ipranges()), names, nodes)


def ipam(fabric: Fabric) -> dict[str, Any]:
    """A pod network's IPAM: nv-ipam's CNI (installed by the NicClusterPolicy's nvIpam) from the fabric's pool."""
    return {"type": "nv-ipam", "poolName": pool_name(fabric), "poolType": POOL_TYPE}


def ip_pool(pool: PodPool, k8s: Kubernetes) -> dict[str, Any]:
    """The IPPool custom resource (nv-ipam.nvidia.com/v1alpha1, in the namespace nv-ipam watches: the operator's)."""
    return {"apiVersion": "nv-ipam.nvidia.com/v1alpha1", "kind": "IPPool",
            "metadata": {"name": pool.name, "namespace": k8s.operator_namespace},
            "spec": {"subnet": str(pool.subnet), "perNodeBlockSize": pool.block,
                     "exclusions": [{"startIP": str(IPAddress(r.first)), "endIP": str(IPAddress(r.last))}
                                    for r in pool.excluded],
                     "nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [
                         {"key": PROFILE_LABEL, "operator": "In", "values": list(pool.profiles)}]}]}}}


def pools(topology: Topology) -> list[tuple[Fabric, PodPool]]:
    """The pod pool of every fabric carrying pod networks that has an address plan, in fabric order."""
    k8s = topology.cluster.kubernetes
    if k8s is None:
        return []
    return [(ft.fabric, pod_pool(topology, ft.fabric, k8s)) for ft in topology.fabrics
            if ft.fabric.name in k8s.fabrics and ft.fabric.addressing is not None
            and ft.fabric.name in topology.addresses]


def check_pod_blocks(topology: Topology) -> Iterator[Finding]:
    """Every node of a pool's profiles needs a free block: a node without one gets no pod address (nv-ipam: "pool
    has no free ranges") and every pod there fails at CNI ADD."""
    for fabric, pool in pools(topology):
        if pool.free_blocks < pool.nodes:
            yield Finding(Severity.ERROR, "kubernetes-pod-addresses", f"fabrics.{fabric.name}.addressing.hosts",
                          f"pod pool {pool.subnet} has {pool.free_blocks} free blocks of {pool.block} addresses "
                          f"({pool.ports} pod network ports x {pool.pods_per_port} pods) outside the hosts' subnets, "
                          f"but {pool.nodes} nodes carry the pod networks, one block each",
                          f"widen addressing.hosts by at least {(pool.nodes - pool.free_blocks) * pool.block} "
                          "addresses, or give fewer VFs per port", fabric.position)
