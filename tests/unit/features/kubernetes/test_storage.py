"""Target k8s-storage: the Kubernetes storage tiers of the example's Lustre file systems (a pre-bound PV and PVC
each) and of the nodes' local NVMe (a StorageClass and one local PV per node). kubernetes-validate checks them in
tests/external/kubernetes/test_storage.py."""

from __future__ import annotations

import pytest

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
    sc, *pvs = _docs(files["kubernetes/storage/local-nvme.yaml"])
    assert (sc["kind"], sc["provisioner"], sc["volumeBindingMode"]) == (
        "StorageClass", "kubernetes.io/no-provisioner", "WaitForFirstConsumer")
    gpus = [n.name for n in compiled.cluster.nodes if n.profile.name == "dgx-h100"]
    assert [pv["metadata"]["name"] for pv in pvs] == [f"nvme-cache-{g}" for g in gpus]
    for pv, gpu in zip(pvs, gpus, strict=True):
        assert pv["spec"]["local"] == {"path": "/raid"} and pv["spec"]["storageClassName"] == CACHE_STORAGE_CLASS
        term = pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]
        assert term == {"key": "kubernetes.io/hostname", "operator": "In", "values": [gpu]}
