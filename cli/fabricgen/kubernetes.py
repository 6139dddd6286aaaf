"""Build the ``kubernetes`` section into the model, with the checks that need the fabrics: the pod networks'
fabrics exist and have VFs (or PFs for host-device), an address plan for their IP ranges, and a workload
profile that is attached and has the GPUs the pod asks for.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from fabricgen.errors import SpecIssue
from fabricgen.load import Document, PathKey
from fabricgen.model import Fabric, Kubernetes, Node, Workload
from fabricgen.validate import did_you_mean


def pod_groups(fabric: Fabric) -> tuple[str, ...]:
    """The node groups whose pods reach a fabric's rails: those with VFs, or every attached one (host-device)."""
    return fabric.sriov.groups if fabric.sriov is not None else fabric.node_groups


def uses_vfs(spec: Mapping[str, Any]) -> bool:
    """Pods get SR-IOV VFs unless plain Multus moves the PFs in with host-device."""
    return bool(spec["operator"] != "none" or spec["cni"] == "sriov")


def _fabrics(doc: Document, spec: Mapping[str, Any], fabrics: Sequence[Fabric], issues: list[SpecIssue]
             ) -> tuple[str, ...]:
    by_name = {f.name: f for f in fabrics}
    if "fabrics" not in spec:
        chosen = tuple(f.name for f in fabrics if f.sriov is not None)
        if not chosen:
            issues.append(doc.issue(("kubernetes",), "no fabric has sriov, so no rail becomes a pod network",
                                    "add sriov to a fabric, or list fabrics (with cni: host-device)"))
        return chosen
    for i, name in enumerate(spec["fabrics"]):
        where: PathKey = ("kubernetes", "fabrics", i)
        fabric = by_name.get(name)
        if fabric is None:
            issues.append(doc.issue(where, f"unknown fabric {name!r}", did_you_mean(name, by_name)))
        elif fabric.sriov is None and uses_vfs(spec):
            issues.append(doc.issue(where, f"fabric {name!r} has no sriov section, so it has no VFs for pods",
                                    "add fabrics.<name>.sriov, or use operator: none with cni: host-device"))
    return tuple(name for name in spec["fabrics"] if name in by_name)


def _addressing(doc: Document, chosen: Sequence[str], fabrics: Sequence[Fabric], issues: list[SpecIssue]) -> None:
    """Pod addresses come from the fabric's address plan (whereabouts ranges): a fabric needs one."""
    for fabric in fabrics:
        if fabric.name in chosen and fabric.addressing is None:
            kind = "IPoIB host addressing" if fabric.type == "infiniband" else "addressing"
            issues.append(doc.issue(("fabrics", fabric.name), f"fabric {fabric.name!r} carries pod networks but has "
                                                              "no address plan for their IP ranges",
                                    f"add {kind} to the fabric"))


def _workload(doc: Document, spec: Mapping[str, Any] | None, chosen: Sequence[str], fabrics: Sequence[Fabric],
              nodes: Sequence[Node], issues: list[SpecIssue]) -> Workload | None:
    if spec is None:
        return None
    groups = {g for f in fabrics if f.name in chosen for g in pod_groups(f)}
    profiles = {n.profile.name: n.profile for n in nodes if n.group in groups and n.profile.role == "compute"}
    name = spec.get("profile") or next(iter(profiles), "")
    where: PathKey = ("kubernetes", "workload")
    if name not in profiles:
        if profiles or "profile" in spec:
            issues.append(doc.issue((*where, "profile"), f"node profile {name!r} has no compute node on the pod "
                                                         "networks' fabrics", did_you_mean(name, profiles)))
        return None
    if spec["gpus"] > profiles[name].gpus:
        issues.append(doc.issue((*where, "gpus"), f"the pod asks for {spec['gpus']} GPUs but a {name} node has "
                                                  f"{profiles[name].gpus}", f"at most {profiles[name].gpus}"))
    return Workload(spec["name"], spec["image"], spec["gpus"], name, spec["shm_size"], tuple(spec["command"]))


def build_kubernetes(doc: Document, spec: Mapping[str, Any], fabrics: Sequence[Fabric], nodes: Sequence[Node],
                     issues: list[SpecIssue]) -> Kubernetes:
    """The model of the Kubernetes section; problems are appended to ``issues``."""
    chosen = _fabrics(doc, spec, fabrics, issues)
    _addressing(doc, chosen, fabrics, issues)
    workload = _workload(doc, spec.get("workload"), chosen, fabrics, nodes, issues)
    return Kubernetes(spec["namespace"], spec["operator"], spec["operator_namespace"], spec["cni"],
                      spec["resource_prefix"], chosen, spec["rdma_hca_max"], workload, doc.position(("kubernetes",)))
