"""Target k8s-storage: the Kubernetes storage tiers of the example's Lustre file systems (a pre-bound PV and PVC
each) and of the nodes' local NVMe (a StorageClass and one local PV per node). kubernetes-validate checks them in
tests/external/kubernetes/test_storage.py."""

from __future__ import annotations

import pytest
import yaml

from fabricgen.core.artifacts import Artifact
from fabricgen.features.kubernetes import storage as k8s_storage
from fabricgen.features.lustre import render as lustre
from fabricgen.features.lustre.build import CACHE_STORAGE_CLASS
from fabricgen.pipeline import Compiled, compile_spec
from tests.conftest import INVENTORIES
from tests.helpers.lustre import manifest_docs as _docs

H100 = INVENTORIES / "h100-4su.yaml"


@pytest.fixture(scope="module")
def compiled() -> Compiled:
    return compile_spec(H100)


@pytest.fixture(scope="module")
def files(compiled: Compiled) -> dict[str, Artifact]:
    return {a.path: a for a in [*lustre.render(compiled.topology), *k8s_storage.render(compiled.topology)]}


def test_lustre_volumes(files: dict[str, Artifact], compiled: Compiled) -> None:
    for fs in compiled.cluster.lustre:
        pv, pvc = _docs(files[f"kubernetes/storage/lustre-{fs.name}.yaml"])
        assert pv["spec"]["csi"]["driver"] == "lustre-csi.hpe.com"
        assert pv["spec"]["csi"]["volumeHandle"] == fs.mgs_spec and pv["spec"]["csi"]["fsType"] == "lustre"
        assert pv["spec"]["claimRef"]["name"] == pvc["metadata"]["name"] and pvc["spec"]["volumeName"] == \
            pv["metadata"]["name"]
        assert pv["spec"]["claimRef"]["namespace"] == pvc["metadata"]["namespace"] == "ai-training"
        assert pv["spec"]["storageClassName"] == pvc["spec"]["storageClassName"] == ""
        assert pv["spec"]["mountOptions"] == ["flock", "noatime"]
    ckpt, data = (_docs(files[f"kubernetes/storage/lustre-{n}.yaml"])[0] for n in ("checkpoints", "datasets"))
    assert ckpt["spec"]["accessModes"] == ["ReadWriteMany"] and "readOnly" not in ckpt["spec"]["csi"]
    assert data["spec"]["accessModes"] == ["ReadOnlyMany"] and data["spec"]["csi"]["readOnly"] is True


def test_local_nvme_tier(files: dict[str, Artifact], compiled: Compiled) -> None:
    """The cache tier is the local static provisioner's: it makes the bind mount of every DGX node a PV and cleans and
    re-creates it when a pod's claim goes (reclaimPolicy Delete), so every later pod gets it."""
    docs = _docs(files["kubernetes/storage/local-nvme.yaml"])
    kinds = [d["kind"] for d in docs]
    assert kinds == ["StorageClass", "ConfigMap", "ServiceAccount", "ClusterRoleBinding", "ClusterRole",
                     "ClusterRoleBinding", "DaemonSet"]
    sc, config, *_, daemon = docs
    assert (sc["provisioner"], sc["volumeBindingMode"], sc["reclaimPolicy"]) == (
        "kubernetes.io/no-provisioner", "WaitForFirstConsumer", "Delete")
    assert yaml.safe_load(config["data"]["storageClassMap"]) == {CACHE_STORAGE_CLASS: {
        "hostDir": "/mnt/fabricgen", "mountDir": "/mnt/fabricgen", "namePattern": "cache", "volumeMode": "Filesystem"}}
    assert docs[3]["roleRef"]["name"] == "system:persistent-volume-provisioner"
    pod = daemon["spec"]["template"]["spec"]
    term = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
    assert term["matchExpressions"] == [{"key": "fabricgen.dev/node-profile", "operator": "In", "values": ["dgx-h100"]}]
    mounts = {m["mountPath"]: m for m in pod["containers"][0]["volumeMounts"]}
    assert mounts["/mnt/fabricgen"]["mountPropagation"] == "HostToContainer"
    assert not any(p.startswith("kubernetes/storage/nvme") for p in files), "no static PV per node any more"
    unit = files["hosts/dgx-h100/k8s-cache/mnt-fabricgen-cache.mount"].content.decode()
    assert "What=/raid/fabricgen-cache\nWhere=/mnt/fabricgen/cache\nType=none\nOptions=bind\n" in unit
    assert "RequiresMountsFor=/raid\n" in unit
    assert files["hosts/dgx-h100/k8s-cache/fabricgen-k8s-cache.conf"].content.decode().endswith(
        "d /raid/fabricgen-cache 0755 root root -\n")
    assert "ufm-appliance-a" not in str(files), "profiles without local NVMe get no cache"
