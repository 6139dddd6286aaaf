"""Build the ``kubernetes`` section into the model, with the checks that need the fabrics: the pod networks'
fabrics exist and have VFs (or PFs for host-device), an address plan for their IP ranges and device plugin
resource names of their own, and a workload profile that is attached and has the GPUs the pod asks for.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from fabricgen.core.document import PathKey
from fabricgen.core.hints import did_you_mean
from fabricgen.core.issues import Issues
from fabricgen.features.feature import BuildContext
from fabricgen.model.cluster import Cluster, Fabric, FabricRole, FabricType
from fabricgen.model.kubernetes import EXCLUSIVE, SHARED, Kubernetes, Workload
from fabricgen.model.nodes import Nic, Node, NodeProfile
from fabricgen.model.sriov import Sriov


def pod_profiles(fabric: Fabric, nodes: Sequence[Node]) -> list[tuple[str, NodeProfile]]:
    """The profiles of the nodes whose pods reach a fabric's rails, by name."""
    groups = set(fabric.pod_groups(nodes))
    return sorted({n.profile.name: n.profile for n in nodes if n.group in groups}.items())


def pod_ports(fabric: Fabric, profile: NodeProfile) -> tuple[Nic, ...]:
    """The PFs a fabric offers pods: those with VFs, or every port of its role (host-device without sriov)."""
    role = fabric.role.nic_role
    return fabric.sriov.ports(profile, role) if fabric.sriov is not None else profile.nics(role)


def pod_network_name(fabric: Fabric, slot: int) -> str:
    """The pod network of a rail (compute fabrics) or port (other roles), ``slot`` as :meth:`Sriov.slot`."""
    kind = "rail" if fabric.role is FabricRole.COMPUTE else "port"
    return f"{fabric.name}-{kind}{slot}"


def pod_resource(fabric: Fabric, slot: int) -> str:
    """The device plugin resource of a pod network: its name with '_' for '-', so fabrics ``a-b`` and ``a_b``
    would share one (:func:`build` refuses that)."""
    return pod_network_name(fabric, slot).replace("-", "_")


def uses_vfs(spec: Mapping[str, Any]) -> bool:
    """Pods get SR-IOV VFs unless plain Multus moves the PFs in with host-device."""
    return bool(spec["operator"] != "none" or spec["cni"] == "sriov")


def _fabrics(spec: Mapping[str, Any], fabrics: Sequence[Fabric], issues: Issues
             ) -> tuple[str, ...]:
    by_name = {f.name: f for f in fabrics}
    if "fabrics" not in spec:
        chosen = tuple(f.name for f in fabrics if f.sriov is not None)
        if not chosen:
            issues.error(("kubernetes",), "no fabric has sriov, so no rail becomes a pod network",
                         "add sriov to a fabric, or list fabrics (with cni: host-device)")
        return chosen
    for i, name in enumerate(spec["fabrics"]):
        where: PathKey = ("kubernetes", "fabrics", i)
        fabric = by_name.get(name)
        if fabric is None:
            issues.error(where, f"unknown fabric {name!r}", did_you_mean(name, by_name))
        elif fabric.sriov is None and uses_vfs(spec):
            issues.error(where, f"fabric {name!r} has no sriov section, so it has no VFs for pods",
                         "add fabrics.<name>.sriov, or use operator: none with cni: host-device")
    return tuple(name for name in spec["fabrics"] if name in by_name)


def _addressing(chosen: Sequence[str], fabrics: Sequence[Fabric], issues: Issues) -> None:
    """Pod addresses come from the fabric's address plan (its nv-ipam pool): a fabric needs one."""
    for fabric in fabrics:
        if fabric.name in chosen and fabric.addressing is None:
            kind = "IPoIB host addressing" if fabric.type is FabricType.INFINIBAND else "addressing"
            issues.error(("fabrics", fabric.name), f"fabric {fabric.name!r} carries pod networks but has "
                                                   "no address plan for their IP ranges",
                         f"add {kind} to the fabric")


def _resources(chosen: Sequence[str], fabrics: Sequence[Fabric], nodes: Sequence[Node],
               issues: Issues) -> None:
    """Two pod networks with one resource name would hand pods each other's VFs (or PFs)."""
    owners: dict[str, str] = {}
    for fabric in fabrics:
        if fabric.name not in chosen:
            continue
        slots = sorted({Sriov.slot(nic) for _, profile in pod_profiles(fabric, nodes)
                        for nic in pod_ports(fabric, profile)})
        for resource in (pod_resource(fabric, slot) for slot in slots):
            owner = owners.setdefault(resource, fabric.name)
            if owner != fabric.name:
                issues.error(("fabrics", fabric.name), f"fabrics {owner!r} and {fabric.name!r} both map to "
                                                       f"the Kubernetes resource name {resource!r}",
                             "rename one of them: resource names replace '-' with '_'")
                break


def _host_device_bonds(spec: Mapping[str, Any], chosen: Sequence[str], fabrics: Sequence[Fabric],
                       nodes: Sequence[Node], issues: Issues) -> None:
    """host-device moves the whole PF into the pod: a bond member leaves its bond (and on an MLAG pair the leaf's
    port-channel passes nothing but LACP to a port outside it), so the pod's address never routes."""
    if uses_vfs(spec):
        return
    for fabric in (f for f in fabrics if f.name in chosen):
        for name, profile in pod_profiles(fabric, nodes):
            bonded = {m: b.name for b in profile.bonds for m in b.members}
            taken = [(nic.netdev, bonded[nic.netdev]) for nic in pod_ports(fabric, profile) if nic.netdev in bonded]
            if taken:
                ports = ", ".join(f"{netdev} (in {bond})" for netdev, bond in taken)
                issues.error(("kubernetes", "cni"), f"host-device would move bonded ports of profile {name!r} on "
                                                    f"fabric {fabric.name!r} into pods: {ports}",
                             f"leave {fabric.name} out of kubernetes.fabrics, or give profile {name} unbonded ports "
                             "for pods")


def _rdma_mode(spec: Mapping[str, Any], chosen: Sequence[str], issues: Issues) -> str:
    """The RDMA namespace mode the pod networks need. The rdma meta plugin moves a VF's RDMA device into the pod and
    refuses to run unless the node is in exclusive mode; the RDMA shared device plugin hands one PF's RDMA device to
    many pods, which only shared mode lets them see. The mode is one per node, so a PF never serves both."""
    vfs = uses_vfs(spec)
    asked = spec.get("rdma_shared_device_plugin", not vfs)
    where: PathKey = ("kubernetes", "rdma_shared_device_plugin")
    if vfs and asked:
        issues.error(where, "the RDMA shared device plugin needs the nodes in shared RDMA namespace mode, but the rdma "
                            f"meta plugin of the VF pod networks on {', '.join(chosen)} needs exclusive mode, on the "
                            "same ports",
                     "drop rdma_shared_device_plugin (pods get their VF's own RDMA device), or use operator: none "
                     "with cni: host-device")
    elif not vfs and not asked:
        issues.error(where, "host-device pods reach their PF's RDMA device only through the RDMA shared device plugin",
                     "drop rdma_shared_device_plugin: false, or use cni: sriov")
    return EXCLUSIVE if vfs else SHARED


def _workload(spec: Mapping[str, Any] | None, chosen: Sequence[str], fabrics: Sequence[Fabric],
              nodes: Sequence[Node], issues: Issues) -> Workload | None:
    """The training workload: it runs NCCL on the compute fabric's rails, whose NICs sit next to the GPUs (the
    storage ports do not: GPUDirect at PXB would not hold), so that fabric must carry pod networks."""
    if spec is None:
        return None
    where: PathKey = ("kubernetes", "workload")
    compute = [f for f in fabrics if f.name in chosen and f.role is FabricRole.COMPUTE]
    if not compute:
        named = [f.name for f in fabrics if f.role is FabricRole.COMPUTE]
        issues.error(where, "the workload's NCCL needs the compute fabric's rails as pod networks: the other ports "
                            "are not PCIe-near the GPUs", f"add {named[0] if named else 'the compute fabric'} to "
                                                          "kubernetes.fabrics (with sriov)")
        return None
    groups = set(compute[0].pod_groups(nodes))
    profiles = {n.profile.name: n.profile for n in nodes if n.group in groups and n.profile.role == "compute"}
    name = spec.get("profile") or next(iter(profiles), "")
    if name not in profiles:
        if profiles or "profile" in spec:
            issues.error((*where, "profile"), f"node profile {name!r} has no compute node on the pod networks of "
                                              f"fabric {compute[0].name}", did_you_mean(name, profiles))
        return None
    if spec["gpus"] > profiles[name].gpus:
        issues.error((*where, "gpus"), f"the pod asks for {spec['gpus']} GPUs but a {name} node has "
                                       f"{profiles[name].gpus}", f"at most {profiles[name].gpus}")
    count = sum(1 for n in nodes if n.group in groups and n.profile.name == name)
    if spec["nodes"] > count:
        issues.error((*where, "nodes"), f"the job asks for {spec['nodes']} nodes, one pod each, but {count} {name} "
                                        "nodes carry the pod networks", f"at most {count}")
    return Workload(spec["name"], spec["image"], spec["gpus"], name, spec["shm_size"], tuple(spec["command"]),
                    spec["nodes"], spec["restarts"])


def build(context: BuildContext, cluster: Cluster) -> Cluster:
    """The cluster with its Kubernetes section, when the spec has one."""
    if "kubernetes" not in context.data:
        return cluster
    spec, issues, fabrics, nodes = context.data["kubernetes"], context.issues, cluster.fabrics, cluster.nodes
    chosen = _fabrics(spec, fabrics, issues)
    _addressing(chosen, fabrics, issues)
    _resources(chosen, fabrics, nodes, issues)
    _host_device_bonds(spec, chosen, fabrics, nodes, issues)
    workload = _workload(spec.get("workload"), chosen, fabrics, nodes, issues)
    rdma_mode = _rdma_mode(spec, chosen, issues)
    return replace(cluster, kubernetes=Kubernetes(
        spec["namespace"], spec["operator"], spec["operator_namespace"], spec["cni"], spec["resource_prefix"], chosen,
        spec["rdma_hca_max"], workload, rdma_mode, issues.position(("kubernetes",))))
