"""Pod addresses through NVIDIA's nv-ipam (the ``nvIpam`` of the network operator release the other images come
from): IPPools, each handing every node it selects a block of ``perNodeBlockSize`` addresses, and the pod networks'
IPAM ``{"type": "nv-ipam", "poolName": ...}``.

Where the fabric routes its hosts' subnets per leaf and gives each leaf a pod range (``FabricAddresses.pods``, VF and
host-device pods alike: a second address of the leaf's SVI, announced into BGP), each leaf has its own pool: the range
as ``subnet``, the leaf's pod gateway as ``gateway``, a route to the fabric's host pool (every host subnet, storage
servers and the other leaves' pod ranges) through it, and a node selector on the leaf label of each pod network
reaching the leaf. A network attachment names one pool (nv-ipam's ``poolName`` takes at most two, IPv4 and IPv6, and
asks every one of them), so every pod port has one attachment per leaf (:mod:`.render`). Elsewhere (InfiniBand, IPoIB
rails: no router) the fabric has one pool over its host pool.

The controller places blocks at the subnet's second address plus multiples of the block size and skips a block only
when exclusions cover it entirely (nvidia-k8s-ipam ``pkg/ipam-controller/allocator/allocator.go``); a block that only
touches an exclusion is still handed to a node, which then gets fewer addresses than it needs. So every block that
holds a host subnet's, a Lustre MGS's or a pod gateway's address is excluded whole, and each node's block holds
every address its pods can ask for at once.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from netaddr import IPAddress, IPNetwork, IPRange, IPSet

from fabricgen.core.errors import Finding, Severity
from fabricgen.features.kubernetes.build import pod_ports, pod_profiles
from fabricgen.features.kubernetes.nodes import PROFILE_LABEL, leaf_label, pod_leaves
from fabricgen.model.cluster import Fabric
from fabricgen.model.kubernetes import Kubernetes
from fabricgen.model.topology import FabricTopology, Topology

POOL_TYPE = "ippool"


@dataclass(frozen=True)
class PodPool:
    """One pool of pod addresses: the subnet, the per-node block (pod network ports x pods per port), the blocks
    excluded, the nodes it selects (terms of label key and values, any one matching) and how many there are (each
    takes one block); a leaf's pool also its gateway and the routes through it."""

    name: str
    subnet: IPNetwork
    ports: int
    pods_per_port: int
    excluded: tuple[IPRange, ...]  # whole blocks, merged
    selector: tuple[tuple[str, tuple[str, ...]], ...]
    nodes: int
    gateway: str = ""
    routes: tuple[str, ...] = ()
    leaf: str = ""

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


def pool_name(fabric: Fabric, leaf: str = "") -> str:
    """An IPPool name is a CNI network name as well (the webhook checks it): fabric and leaf names are identifiers and
    device names."""
    return f"{fabric.name}-pods-{leaf}" if leaf else f"{fabric.name}-pods"


def _reserved(topology: Topology, fabric: Fabric) -> IPSet:
    """Addresses pods must never get: the subnets the plan gives the hosts, the fabric's Lustre MGS NIDs (they
    sit in the pool outside the host subnets) and the leaves' pod gateways (their SVIs' second addresses)."""
    plan = topology.addresses.get(fabric.name)
    if fabric.addressing is None or plan is None:
        raise ValueError(f"fabric {fabric.name} has no address plan for its pod networks")
    servers = {nid.partition("@")[0] for fs in topology.cluster.lustre if fs.fabric == fabric.name
               for node in fs.mgs for nid in node}
    return IPSet([s.network for s in plan.hosts] + sorted(servers) + [p.gateway for p in plan.pods])


def _whole_blocks(subnet: IPNetwork, block: int, reserved: IPSet) -> tuple[IPRange, ...]:
    """Every block the controller can place (from the subnet's second address, none reaching the broadcast address)
    that holds a reserved address, merged."""
    first, touched = subnet.first + 1, IPSet()
    for cidr in reserved.iter_cidrs():
        for k in range(max(cidr.first - first, 0) // block, (cidr.last - first) // block + 1):
            start = first + k * block
            if start + block - 1 < subnet.last:
                touched.add(IPRange(start, start + block - 1))
    return tuple(touched.iter_ipranges())


def _pods_per_port(fabric: Fabric, k8s: Kubernetes) -> int:
    """Each port serves at most its VFs' pods (one pod per PF with host-device)."""
    return fabric.sriov.vfs_per_port if k8s.uses_vfs and fabric.sriov is not None else 1


def pod_pool(topology: Topology, fabric: Fabric, k8s: Kubernetes) -> PodPool:
    """The IPPool over the fabric's whole host pool (fabrics without per-leaf pod ranges), as :class:`PodPool`: see
    the module docstring for why exclusions are whole blocks."""
    assert fabric.addressing is not None
    subnet = IPNetwork(fabric.addressing.hosts).cidr
    profiles = pod_profiles(fabric, topology.cluster.nodes)
    ports = max(len(pod_ports(fabric, profile)) for _, profile in profiles)
    pods = _pods_per_port(fabric, k8s)
    names = tuple(name for name, _ in profiles)
    nodes = sum(1 for n in topology.cluster.nodes if n.profile.name in names)  # the label selects the profile
    return PodPool(pool_name(fabric), subnet, ports, pods, _whole_blocks(subnet, ports * pods,
                                                                         _reserved(topology, fabric)),
                   ((PROFILE_LABEL, names),), nodes)


def leaf_pools(topology: Topology, fabric: Fabric, k8s: Kubernetes) -> tuple[PodPool, ...]:
    """One IPPool per leaf pod range (module docstring): a node's block holds a VF set for each of its pod ports on
    the leaf; the block holding the pod gateway is excluded whole (nv-ipam skips the gateway itself, leaving that
    block one address short)."""
    assert fabric.addressing is not None
    pods = _pods_per_port(fabric, k8s)
    per_leaf: dict[str, list[list[str]]] = {}  # leaf -> each node's pod networks on it, in node order
    for node_ports in pod_leaves(topology, fabric).values():
        here: dict[str, list[str]] = {}
        for net, leaf in node_ports.items():
            here.setdefault(leaf, []).append(net)
        for leaf, nets in here.items():
            per_leaf.setdefault(leaf, []).append(nets)
    out = []
    for pod_range in topology.addresses[fabric.name].pods:
        on_leaf = per_leaf.get(pod_range.leaf, [])
        if not on_leaf:
            continue
        subnet = IPNetwork(pod_range.network)
        ports = max(len(nets) for nets in on_leaf)
        networks = sorted({net for nets in on_leaf for net in nets})
        out.append(PodPool(pool_name(fabric, pod_range.leaf), subnet, ports, pods,
                           _whole_blocks(subnet, ports * pods, IPSet([pod_range.gateway])),
                           tuple((leaf_label(net), (pod_range.leaf,)) for net in networks), len(on_leaf),
                           pod_range.gateway, (str(IPNetwork(fabric.addressing.hosts).cidr),), pod_range.leaf))
    return tuple(out)


def fabric_pools(topology: Topology, fabric: Fabric) -> tuple[PodPool, ...]:
    """The fabric's pod pools: one per leaf where it has per-leaf pod ranges, else one over its host pool. Computed
    once per topology: the pod-blocks check computes them before the render forks, and the manifests read them
    (0.13-0.16 s at 16k GPUs, computed again in a render worker before)."""
    return topology.derived(_fabric_pools, topology.fabric(fabric.name))


def _fabric_pools(topology: Topology, ft: FabricTopology) -> tuple[PodPool, ...]:
    k8s = topology.cluster.kubernetes
    if k8s is None:
        raise ValueError("pod pools of a cluster without kubernetes")
    if topology.addresses[ft.fabric.name].pods:
        return leaf_pools(topology, ft.fabric, k8s)
    return (pod_pool(topology, ft.fabric, k8s),)


def ipam(pool: str) -> dict[str, Any]:
    """A pod network's IPAM: nv-ipam's CNI (installed by the NicClusterPolicy's nvIpam) from the named pool."""
    return {"type": "nv-ipam", "poolName": pool, "poolType": POOL_TYPE}


def ip_pool(pool: PodPool, k8s: Kubernetes) -> dict[str, Any]:
    """The IPPool custom resource (nv-ipam.nvidia.com/v1alpha1, in the namespace nv-ipam watches: the operator's).
    A leaf's pool has no default route through its gateway (``defaultGateway`` false): the pod's default route
    stays on its cluster network."""
    spec: dict[str, Any] = {"subnet": str(pool.subnet), "perNodeBlockSize": pool.block}
    if pool.gateway:
        spec |= {"gateway": pool.gateway, "routes": [{"dst": dst} for dst in pool.routes]}
    spec |= {"exclusions": [{"startIP": str(IPAddress(r.first)), "endIP": str(IPAddress(r.last))}
                            for r in pool.excluded],
             "nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [
                 {"key": key, "operator": "In", "values": list(values)}]} for key, values in pool.selector]}}
    return {"apiVersion": "nv-ipam.nvidia.com/v1alpha1", "kind": "IPPool",
            "metadata": {"name": pool.name, "namespace": k8s.operator_namespace}, "spec": spec}


def pools(topology: Topology) -> list[tuple[Fabric, PodPool]]:
    """Every pod pool of the fabrics carrying pod networks that have an address plan, in fabric order."""
    k8s = topology.cluster.kubernetes
    if k8s is None:
        return []
    return [(ft.fabric, pool) for ft in topology.fabrics
            if ft.fabric.name in k8s.fabrics and ft.fabric.addressing is not None
            and ft.fabric.name in topology.addresses for pool in fabric_pools(topology, ft.fabric)]


def check_pod_blocks(topology: Topology) -> Iterator[Finding]:
    """Every node of a pool's profiles needs a free block: a node without one gets no pod address (nv-ipam: "pool
    has no free ranges") and every pod there fails at CNI ADD."""
    for fabric, pool in pools(topology):
        if pool.free_blocks < pool.nodes:
            where = f" (leaf {pool.leaf}'s pod range)" if pool.leaf else ""
            yield Finding(Severity.ERROR, "kubernetes-pod-addresses", f"fabrics.{fabric.name}.addressing.hosts",
                          f"pod pool {pool.subnet}{where} has {pool.free_blocks} free blocks of {pool.block} addresses "
                          f"({pool.ports} pod network ports x {pool.pods_per_port} pods) outside the hosts' subnets, "
                          f"but {pool.nodes} nodes carry the pod networks, one block each",
                          f"widen addressing.hosts by at least {(pool.nodes - pool.free_blocks) * pool.block} "
                          "addresses, or give fewer VFs per port", fabric.position)
