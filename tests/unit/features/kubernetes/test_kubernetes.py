"""Kubernetes manifests: the example workload pod (RDMA resources, networks, NCCL environment) and the pod address
ranges around the Lustre MGS. The manifests' validation against the CRD schemas and Kubernetes' own is in
tests/external/kubernetes/test_kubernetes.py."""

from __future__ import annotations

from pathlib import Path

import yaml

from fabricgen.features.kubernetes import render as kubernetes
from fabricgen.pipeline import compile_spec
from tests.conftest import INVENTORIES
from tests.helpers.kubernetes import ROCE, documents, manifests


def test_workload_pod(tmp_path: Path) -> None:
    _, artifacts = manifests(ROCE, "operator", tmp_path)
    [pod] = yaml.safe_load_all(artifacts["kubernetes/network/workload-nccl-allreduce.yaml"])
    container = pod["spec"]["containers"][0]
    assert container["securityContext"]["capabilities"]["add"] == ["IPC_LOCK"]
    limits = container["resources"]["limits"]
    assert limits["nvidia.com/gpu"] == 8 and all(limits[f"nvidia.com/compute_rail{r}"] == 1 for r in range(8))
    assert pod["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"] == ",".join(
        f"compute-rail{r}" for r in range(8))
    assert pod["spec"]["volumes"] == [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "32Gi"}}]
    assert container["volumeMounts"] == [{"name": "dshm", "mountPath": "/dev/shm"}]
    env = {e["name"]: e["value"] for e in container["env"]}
    assert env["NCCL_IB_TC"] == "106" and env["NCCL_IB_HCA"] == "mlx5" and env["NCCL_SOCKET_IFNAME"] == "=eth0"
    host_device = documents(manifests(ROCE, "multus-host-device", tmp_path / "pf")[1])
    pod_pf = next(d for d in host_device if d["kind"] == "Pod")["spec"]["containers"][0]
    env_pf = {e["name"]: e["value"] for e in pod_pf["env"]}
    assert env_pf["NCCL_IB_HCA"] == "=" + ",".join(f"mlx5_{r}:1" for r in range(8)), "PFs keep their host names"
    assert "nvidia.com/compute_rail0_shared" in pod_pf["resources"]["limits"]


def test_pod_ranges_leave_out_the_lustre_mgs() -> None:
    """The example's MGS pair (storage nodes mds01/mds02, two NIDs each) is in the storage pool: whereabouts must not
    hand out its addresses."""
    topology = compile_spec(INVENTORIES / "h100-4su.yaml").topology
    ipam = kubernetes.whereabouts(topology, topology.fabric("storage").fabric)
    nids = [f"{nid.split('@')[0]}/32" for nodes in topology.cluster.lustre[0].mgs for nid in nodes]
    assert len(nids) == 4 and ipam["exclude"][-4:] == nids
    assert ipam["exclude"].count(nids[0]) == 1, "two file systems share the MGS: one exclusion"
