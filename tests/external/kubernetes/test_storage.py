"""Target k8s-storage through kubernetes-validate (strict): the Lustre and local NVMe storage tiers, and a pod
mounting them as pod_storage() says; strict validation can fail."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest

from fabricgen.core.artifacts import Artifact
from fabricgen.features.kubernetes import storage as k8s_storage
from fabricgen.features.lustre import render as lustre
from fabricgen.features.lustre.build import CACHE_STORAGE_CLASS, pod_storage, systemd_escape_path
from fabricgen.pipeline import Compiled, compile_spec
from tests.conftest import INVENTORIES, require_tool
from tests.helpers.lustre import manifest_docs as _docs

H100 = INVENTORIES / "h100-4su.yaml"


@pytest.fixture(scope="module")
def compiled() -> Compiled:
    return compile_spec(H100)


@pytest.fixture(scope="module")
def files(compiled: Compiled) -> dict[str, Artifact]:
    return {a.path: a for a in [*lustre.render(compiled.topology), *k8s_storage.render(compiled.topology)]}


K8S_VERSION = "1.30.0"


def _validate(doc: dict[str, Any]) -> None:
    kubernetes_validate.validate(doc, K8S_VERSION, strict=True)


def test_manifests_validate_strictly(files: dict[str, Artifact]) -> None:
    manifests = [a for p, a in files.items() if p.startswith("kubernetes/")]
    docs = [d for a in manifests for d in _docs(a)]
    assert len(docs) == 4 + 7  # two PV + PVC pairs; the cache class, the provisioner's config, RBAC and DaemonSet
    for doc in docs:
        _validate(doc)


def test_strict_validation_can_fail() -> None:
    bad = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "x"},
           "spec": {"capacity": {"storage": "1Gi"}, "accesModes": ["ReadWriteMany"]}}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, K8S_VERSION, strict=True)


def test_pod_storage(compiled: Compiled, files: dict[str, Artifact]) -> None:
    storage = pod_storage(compiled.cluster)
    by_name = {v["name"]: v for v in storage.volumes}
    mounts = {m["name"]: m for m in storage.volume_mounts}
    assert set(by_name) == set(mounts) == {"lustre-checkpoints", "lustre-datasets", "nvme-cache", "object-corpus",
                                           "object-text", "object-archive"}
    assert by_name["lustre-datasets"]["persistentVolumeClaim"] == {"claimName": "lustre-datasets", "readOnly": True}
    assert mounts["lustre-datasets"] == {"name": "lustre-datasets", "mountPath": "/data", "readOnly": True}
    assert mounts["lustre-checkpoints"]["mountPath"] == "/lustre/ckpt" and not mounts["lustre-checkpoints"]["readOnly"]
    claims = {d["metadata"]["name"] for p, a in files.items() if p.startswith("kubernetes/storage/lustre-")
              for d in _docs(a) if d["kind"] == "PersistentVolumeClaim"}
    assert {v["persistentVolumeClaim"]["claimName"] for v in storage.volumes if "persistentVolumeClaim" in v
            and v["name"].startswith("lustre-")} == claims
    template = by_name["nvme-cache"]["ephemeral"]["volumeClaimTemplate"]["spec"]
    request = template["resources"]["requests"]["storage"]
    capacity = compiled.cluster.profiles["dgx-h100"].local_nvme
    fluid = sum(s.cache.quota_gib for s in compiled.cluster.object_stores if s.cache)  # the Fluid tier's share
    assert capacity is not None and request == f"{(capacity.capacity_gib - fluid) * 9 // 10}Gi", \
        "below the PV statfs reports"
    assert template["storageClassName"] == CACHE_STORAGE_CLASS
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "trainer", "namespace": "ai-training"},
           "spec": {"containers": [{"name": "trainer", "image": "pytorch:latest",
                                    "volumeMounts": list(storage.volume_mounts)}],
                    "volumes": list(storage.volumes)}}
    _validate(pod)


def test_cache_mount_passes_systemd_analyze_verify(files: dict[str, Artifact], tmp_path: Path) -> None:
    """The bind mount the provisioner discovers is a valid unit named by its Where= (systemd-escape --path)."""
    tool = require_tool("systemd-analyze")
    unit = tmp_path / "mnt-fabricgen-cache.mount"
    unit.write_bytes(files["hosts/dgx-h100/k8s-cache/mnt-fabricgen-cache.mount"].content)
    done = subprocess.run([tool, "verify", "--man=no", str(unit)], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0 and not done.stderr.strip(), done.stderr
    assert systemd_escape_path("/mnt/fabricgen/cache") + ".mount" == unit.name


def test_cache_mount_orders_after_tmpfiles_without_a_cycle(files: dict[str, Artifact]) -> None:
    """The distro's systemd-tmpfiles-setup.service (which creates the bind source) runs after local-fs.target, and
    a local mount with default dependencies runs before it (systemd.mount(5)): the cache mount must drop them, or
    mount, target and service wait on each other and systemd drops one to break the cycle."""
    require_tool("systemd-analyze")
    tmpfiles = Path("/lib/systemd/system/systemd-tmpfiles-setup.service").read_text()
    after = {u for line in tmpfiles.splitlines() if line.startswith("After=") for u in line[6:].split()}
    assert "local-fs.target" in after, "the premise: tmpfiles runs after local file systems"
    unit = files["hosts/dgx-h100/k8s-cache/mnt-fabricgen-cache.mount"].content.decode()
    lines = unit.splitlines()
    assert "DefaultDependencies=no" in lines
    assert "After=local-fs.target systemd-tmpfiles-setup.service" in lines
    assert not any(line.startswith("Before=") and "local-fs.target" in line for line in lines)
    assert "WantedBy=multi-user.target" in lines and "Before=kubelet.service umount.target" in lines
