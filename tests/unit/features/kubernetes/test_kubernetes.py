"""Kubernetes manifests: the example workload pod (RDMA resources, networks, NCCL environment) and the pod address
ranges around the Lustre MGS. The manifests' validation against the CRD schemas and Kubernetes' own is in
tests/external/kubernetes/test_kubernetes.py."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import yaml
from netaddr import IPAddress

from fabricgen.core.errors import SpecError
from fabricgen.features.kubernetes import ipam, workloads
from fabricgen.features.kubernetes import render as kubernetes
from fabricgen.features.kubernetes.nodes import planned_labels as nodes_labels
from fabricgen.model.cluster import Fabric
from fabricgen.model.kubernetes import Kubernetes
from fabricgen.model.topology import Topology
from fabricgen.pipeline import compile_spec, render_spec
from tests.conftest import INVENTORIES, REPO
from tests.helpers.kubernetes import ROCE, documents, manifests


def test_workload_pod(tmp_path: Path) -> None:
    _, artifacts = manifests(ROCE, "operator", tmp_path)
    [pod] = yaml.safe_load_all(artifacts["kubernetes/network/workload-nccl-allreduce.yaml"])
    container = pod["spec"]["containers"][0]
    assert container["securityContext"]["capabilities"]["add"] == ["IPC_LOCK"]
    limits = container["resources"]["limits"]
    assert limits["nvidia.com/gpu"] == 8 and all(limits[f"nvidia.com/compute_rail{r}"] == 1 for r in range(8))
    # routed RoCE: rail r's attachment of the leaf the pod's node has rail r on, and the node selected by those leaves
    assert pod["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"] == ",".join(
        f"compute-rail{r}-compute-su01-leaf{r}" for r in range(8))
    assert pod["spec"]["nodeSelector"] == {"fabricgen.dev/node-profile": "hgx-8gpu-generic", **{
        f"fabricgen.dev/compute-rail{r}-leaf": f"compute-su01-leaf{r}" for r in range(8)}}
    assert pod["spec"]["volumes"] == [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "32Gi"}}]
    assert container["volumeMounts"] == [{"name": "dshm", "mountPath": "/dev/shm"}]
    env = {e["name"]: e["value"] for e in container["env"]}
    assert env["NCCL_IB_TC"] == "106" and env["NCCL_IB_HCA"] == "mlx5" and env["NCCL_SOCKET_IFNAME"] == "=eth0"
    # rdma_cm's ToS is 0 in the pod's namespace: UCX gets the lossless class too, the same byte as NCCL
    assert env["UCX_IB_TRAFFIC_CLASS"] == "106"
    vf_header = artifacts["kubernetes/network/compute-networks.yaml"].decode()
    assert "in the pod the VF's rdma_cm\n# default ToS is 0" in vf_header
    pf_artifacts = manifests(ROCE, "multus-host-device", tmp_path / "pf")[1]
    # shared RDMA mode: the PF's RDMA device is not re-created in the pod, so the host's default ToS holds
    assert ("so the PF's rdma_cm\n# default ToS is the one roce-qos.sh set on the host"
            in pf_artifacts["kubernetes/network/compute-networks.yaml"].decode())
    host_device = documents(pf_artifacts)
    pod_pf = next(d for d in host_device if d["kind"] == "Pod")["spec"]["containers"][0]
    env_pf = {e["name"]: e["value"] for e in pod_pf["env"]}
    assert env_pf["NCCL_IB_HCA"] == "=" + ",".join(f"mlx5_{r}:1" for r in range(8)), "PFs keep their host names"
    assert "nvidia.com/compute_rail0_shared" in pod_pf["resources"]["limits"]


def test_pod_pool_leaves_out_the_lustre_mgs() -> None:
    """The example's MGS pair (storage nodes mds01/mds02, two NIDs each) is in the storage pool outside the host
    subnets: nv-ipam must not hand out its addresses, so their blocks are excluded."""
    topology = compile_spec(INVENTORIES / "h100-4su.yaml").topology
    k8s = topology.cluster.kubernetes
    assert k8s is not None
    pool = ipam.pod_pool(topology, topology.fabric("storage").fabric, k8s)
    nids = [IPAddress(nid.split("@")[0]) for nodes in topology.cluster.lustre[0].mgs for nid in nodes]
    assert len(nids) == 4 and all(any(ip in r for r in pool.excluded) for ip in nids)
    gateways = [IPAddress(p.gateway) for p in topology.addresses["storage"].pods]  # the leaves' SVI addresses
    assert len(gateways) == 6 and all(any(ip in r for r in pool.excluded) for ip in gateways), "nor pod gateways"
    assert pool.nodes == 127 and pool.free_blocks >= pool.nodes


def test_every_image_is_the_network_operator_releases() -> None:
    """images.yaml names one network operator release, and every image is what that release's manifest lists
    (tests/data/kubernetes/network-operator-v26.4.1-release.yaml, the tag's hack/release.yaml verbatim)."""
    manifest = yaml.safe_load((REPO / "tests" / "data" / "kubernetes" /
                               f"{kubernetes.images_release()}-release.yaml").read_text())
    keys = {"rdma_shared_device_plugin": "RdmaSharedDevicePlugin", "sriov_device_plugin": "SriovDevicePlugin",
            "multus": "Multus", "cni_plugins": "CniPlugins", "sriov_cni": "SriovCni", "ib_sriov_cni": "SriovIbCni",
            "rdma_cni": "rdmaCni", "nv_ipam": "nvIpam", "nic_configuration_operator": "nicConfigurationOperator",
            "nic_configuration_daemon": "nicConfigurationConfigDaemon"}
    assert set(kubernetes.images()) == set(keys)
    for name, entry in kubernetes.images().items():
        listed = manifest[keys[name]]
        assert dict(entry) == {k: listed[k] for k in ("image", "repository", "version")}, name
        assert entry["version"] == kubernetes.images_release()


def test_resume_picks_the_latest_complete_checkpoint(tmp_path: Path) -> None:
    """The init container's script: the highest complete checkpoint in version order (step-1000 after step-900),
    never one still being written (no .metadata yet); a first start creates the job's directory and resumes nothing."""
    job, out = tmp_path / "ckpt" / "job", tmp_path / "resume-from"
    env = {"PATH": os.environ["PATH"], "CHECKPOINT_DIR": str(job), "RESUME_FROM_FILE": str(out)}
    first = subprocess.run(["sh", "-c", workloads.RESUME_SCRIPT], env=env, capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    assert job.is_dir() and out.read_text() == "\n" and "the start" in first.stdout
    for step, complete in (("step-900", True), ("step-1000", True), ("step-1100", False)):
        (job / step).mkdir()
        (job / step / "__0_0.distcp").write_text("shard")
        if complete:
            (job / step / ".metadata").write_text("done")
    again = subprocess.run(["sh", "-c", workloads.RESUME_SCRIPT], env=env, capture_output=True, text=True)
    assert again.returncode == 0 and out.read_text() == f"{job}/step-1000\n"


def test_workload_needs_the_compute_rails(tmp_path: Path) -> None:
    """A workload whose only pod networks are storage ports is refused: NCCL there would run far from the GPUs."""
    spec = tmp_path / "storage-only.yaml"
    spec.write_text((INVENTORIES / "h100-4su.yaml").read_text().replace("fabrics: [compute, storage]",
                                                                        "fabrics: [storage]"))
    with pytest.raises(SpecError) as info:
        compile_spec(spec)
    report = str(info.value)
    assert "kubernetes.workload: the workload's NCCL needs the compute fabric's rails as pod networks" in report
    assert "hint: add compute to kubernetes.fabrics" in report


@pytest.mark.parametrize(("nodes", "refused"), [(4, False), (5, True)])
def test_a_job_runs_in_one_leaf_group(nodes: int, refused: bool, tmp_path: Path) -> None:
    """Per-leaf pod ranges (routed RoCE compute, two scalable units of 4 nodes): a pod template names one attachment
    per rail and leaf, so the job runs on the nodes of one unit (selected by their leaf labels); a job larger than
    every unit is refused at kubernetes.workload.nodes instead of pods that attach to another leaf's range."""
    spec = tmp_path / "two-units.yaml"
    spec.write_text(ROCE.read_text().replace("scalable_unit: 8", "scalable_unit: 4").replace(
        "{name: M, racks: 1, kind: network}", "{name: M, racks: 3, kind: network}").replace(
        "  workload:\n", f"  workload:\n    nodes: {nodes}\n"))
    if refused:
        with pytest.raises(Exception) as info:
            compile_spec(spec)
        assert "[kubernetes-leaf-group]" in str(info.value) and "at most 4 hgx-8gpu-generic nodes" in str(info.value)
        return
    topology = compile_spec(spec).topology
    job = workloads.pytorch_job(topology, topology.cluster.kubernetes, topology.cluster.kubernetes.workload)
    template = job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]
    selector = template["spec"]["nodeSelector"]
    assert {selector[f"fabricgen.dev/compute-rail{r}-leaf"] for r in range(8)} == {
        f"compute-su01-leaf{r}" for r in range(8)}
    labels = nodes_labels(topology)
    chosen = [n for n, own in labels.items() if all(own.get(k) == v for k, v in selector.items())]
    assert chosen == ["hgx01", "hgx02", "hgx03", "hgx04"]


def h100_4su() -> tuple[Topology, dict[str, bytes]]:
    compiled = compile_spec(INVENTORIES / "h100-4su.yaml")
    targets = ["kubernetes", "k8s-workloads", "k8s-storage"]
    return compiled.topology, {a.path: a.content for a in render_spec(compiled, targets)}


def test_roce_pod_networks_name_the_lossless_class_roce_qos_sets() -> None:
    """Users' pods on the storage VFs: the networks' header gives the traffic class, the very byte roce-qos.sh
    writes as the hosts' default RoCE ToS (DSCP 26 << 2 | ECT(0) = 106), and says unbound traffic leaves via eth0."""
    topology, artifacts = h100_4su()
    header = "".join(line for line in artifacts["kubernetes/network/storage-networks.yaml"].decode().splitlines(True)
                     if line.startswith("#"))
    qos = next(f for f in topology.cluster.fabrics if f.name == "storage").qos
    assert qos is not None and qos.nccl_tc == 106
    roce_qos = (REPO / "tests" / "golden" / "h100-4su" / "hosts" / "dgx-h100" / "roce-qos.sh").read_text()
    assert "'mlx5_7' '1' '106'" in roce_qos
    for setting in ("NCCL_IB_TC=106", "UCX_IB_TRAFFIC_CLASS=106", "ToS 106 by rdma_set_option(RDMA_OPTION_ID_TOS)"):
        assert setting in header.replace("\n# ", " ")
    assert "not bound to it" in header and "leaves via eth0" in header
    assert "UCX_IB_TRAFFIC_CLASS" not in artifacts["kubernetes/network/compute-networks.yaml"].decode(), \
        "InfiniBand VFs have no RoCE class"


def test_headers_name_the_operators_the_manifests_need() -> None:
    """The Lustre PVs need the HPE CSI driver and the PyTorchJob the training operator: named with their release."""
    _, artifacts = h100_4su()
    lustre = [text.decode() for path, text in artifacts.items() if path.startswith("kubernetes/storage/lustre-")]
    assert lustre and all("lustre-csi-driver/deploy/kubernetes/base?ref=v0.1.11" in text for text in lustre)
    job = next(text.decode() for path, text in artifacts.items() if path.startswith("kubernetes/workloads/pytorchjob-"))
    assert "training-operator.git/manifests/overlays/standalone?ref=v1.9.0" in job


def test_pod_pools_are_computed_once_by_the_checks_and_read_by_the_manifests(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pod-blocks check computes each fabric's pools before the render forks its workers; the manifests read
    them from the topology rather than computing them again in a worker."""
    made: list[str] = []
    one, per_leaf = ipam.pod_pool, ipam.leaf_pools

    def one_pool(topology: Topology, fabric: Fabric, k8s: Kubernetes) -> ipam.PodPool:
        made.append(fabric.name)
        return one(topology, fabric, k8s)

    def leaf_pools(topology: Topology, fabric: Fabric, k8s: Kubernetes) -> tuple[ipam.PodPool, ...]:
        made.append(fabric.name)
        return per_leaf(topology, fabric, k8s)

    monkeypatch.setattr(ipam, "pod_pool", one_pool)
    monkeypatch.setattr(ipam, "leaf_pools", leaf_pools)
    topology = compile_spec(INVENTORIES / "h100-4su.yaml").topology
    after_checks = list(made)
    kubernetes.render(topology)
    assert sorted(after_checks) == ["compute", "storage"]
    assert made == after_checks
