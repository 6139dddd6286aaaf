"""Target object-storage against its consumers: the Mountpoint PV and PVC through kubernetes-validate (strict), the
Fluid Dataset and AlluxioRuntime through Fluid v1.0.8's own CRD schemas made strict, and a pod mounting every claim
as pod_storage() says. Strict validation catches what Fluid's own S3 sample gets wrong (encryptOptions under
options) and a misspelt tier field."""

from __future__ import annotations

import copy
from typing import Any

import kubernetes_validate
import pytest
import yaml

from fabricgen.features.lustre.build import cache_request_gib, pod_storage
from fabricgen.features.object_storage import render as object_storage
from fabricgen.pipeline import Compiled, compile_spec
from tests.conftest import INVENTORIES
from tests.external.kubernetes.test_kubernetes import K8S_VERSION, validate


@pytest.fixture(scope="module")
def compiled() -> Compiled:
    return compile_spec(INVENTORIES / "h100-4su.yaml")


@pytest.fixture(scope="module")
def docs(compiled: Compiled) -> dict[str, list[dict[str, Any]]]:
    return {a.path: list(yaml.safe_load_all(a.content)) for a in object_storage.render(compiled.topology)}


def _core(doc: dict[str, Any]) -> None:
    kubernetes_validate.validate(doc, K8S_VERSION, strict=True)


def test_mountpoint_volume_validates(docs: dict[str, list[dict[str, Any]]]) -> None:
    pv, pvc = docs["kubernetes/storage/object-archive.yaml"]
    _core(pv)
    _core(pvc)
    assert pv["spec"]["csi"]["driver"] == "s3.csi.aws.com"
    assert pv["spec"]["csi"]["volumeAttributes"] == {"bucketName": "sp-h100-a-archive"}
    assert pv["spec"]["mountOptions"] == ["region us-east-1", "allow-delete", "allow-overwrite"]
    assert pv["spec"]["storageClassName"] == pvc["spec"]["storageClassName"] == ""  # static provisioning
    assert pv["spec"]["claimRef"] == {"kind": "PersistentVolumeClaim", "namespace": "ai-training",
                                      "name": "object-archive"}
    assert pvc["spec"]["volumeName"] == "object-archive"


def test_fluid_cache_validates_against_fluids_crds(docs: dict[str, list[dict[str, Any]]]) -> None:
    dataset, runtime = docs["kubernetes/storage/object-corpus.yaml"]
    assert validate(dataset) == [] and validate(runtime) == []
    [mount] = dataset["spec"]["mounts"]
    assert mount["mountPoint"] == "s3://corpus/tokenized/" and mount["path"] == "/"  # the bucket is the root
    assert mount["options"]["alluxio.underfs.s3.endpoint"] == "https://minio.dc1.example.net:9000"
    assert mount["options"]["alluxio.underfs.s3.disable.dns.buckets"] == "true"  # MinIO: path-style
    assert [o["valueFrom"]["secretKeyRef"] for o in mount["encryptOptions"]] == [
        {"name": "minio-corpus", "key": "aws.accessKeyId"}, {"name": "minio-corpus", "key": "aws.secretKey"}]
    [level] = runtime["spec"]["tieredstore"]["levels"]
    assert level == {"mediumtype": "SSD", "volumeType": "hostPath", "path": "/raid/fluid", "quota": "8192Gi",
                     "high": "0.95", "low": "0.7"}
    assert runtime["spec"]["replicas"] == 127  # one worker per DGX
    assert dataset["metadata"]["name"] == runtime["metadata"]["name"] == "object-corpus"  # Fluid's claim name


def test_gcs_cache_reads_its_key_file_where_the_runtime_mounts_it(docs: dict[str, list[dict[str, Any]]]) -> None:
    """GCS signs with a service-account key file (Alluxio's UFS version 2): the Secret is a volume of the runtime at
    one path in master and workers, and the mount option names the file there; no encryptOptions."""
    dataset, runtime = docs["kubernetes/storage/object-text.yaml"]
    assert validate(dataset) == [] and validate(runtime) == []
    [mount] = dataset["spec"]["mounts"]
    assert mount["mountPoint"] == "gs://sp-h100-a_text/v2/" and "encryptOptions" not in mount
    key = mount["options"]["fs.gcs.credential.path"]
    [volume] = runtime["spec"]["volumes"]
    assert volume == {"name": "gcs-credentials", "secret": {"secretName": "gcs-text"}}
    for component in ("master", "worker"):
        [where] = runtime["spec"][component]["volumeMounts"]
        assert where["name"] == volume["name"] and where["readOnly"] is True
        assert key == f"{where['mountPath']}/gcloud-application-credentials.json"
    unmounted = copy.deepcopy(runtime)
    unmounted["spec"]["worker"]["volumeMounts"][0]["mountpath"] = unmounted["spec"]["worker"]["volumeMounts"][0].pop(
        "mountPath")
    assert validate(unmounted)  # the strict CRD knows a volume mount's fields


def test_strict_crds_reject_what_the_fluid_sample_gets_wrong(docs: dict[str, list[dict[str, Any]]]) -> None:
    dataset, runtime = docs["kubernetes/storage/object-corpus.yaml"]
    nested = copy.deepcopy(dataset)
    mount = nested["spec"]["mounts"][0]
    mount["options"]["encryptOptions"] = mount.pop("encryptOptions")  # as docs/en/samples/s3_configuration.md
    assert any("options.encryptOptions" in p for p in validate(nested))
    misspelt = copy.deepcopy(runtime)
    misspelt["spec"]["tieredstore"]["levels"][0]["quotas"] = misspelt["spec"]["tieredstore"]["levels"][0].pop("quota")
    assert any("quotas" in p for p in validate(misspelt))
    wrong_medium = copy.deepcopy(runtime)
    wrong_medium["spec"]["tieredstore"]["levels"][0]["mediumtype"] = "NVME"
    assert validate(wrong_medium)


def test_pods_mount_every_claim(compiled: Compiled) -> None:
    storage = pod_storage(compiled.cluster, "ai-training")
    mounts = {m["name"]: m for m in storage.volume_mounts}
    assert mounts["object-corpus"] == {"name": "object-corpus", "mountPath": "/datasets/corpus", "readOnly": True}
    assert mounts["object-archive"] == {"name": "object-archive", "mountPath": "/archive", "readOnly": False}
    assert mounts["object-text"] == {"name": "object-text", "mountPath": "/datasets/text", "readOnly": True}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "trainer", "namespace": "ai-training"},
           "spec": {"containers": [{"name": "trainer", "image": "pytorch:latest",
                                    "volumeMounts": list(storage.volume_mounts)}],
                    "volumes": list(storage.volumes)}}
    _core(pod)
    # the NVMe cache claim leaves the Fluid tiers their quotas on the shared /raid
    nvme = compiled.cluster.profiles["dgx-h100"].local_nvme
    assert nvme is not None and cache_request_gib(compiled.cluster) == (nvme.capacity_gib - 8192 - 4096) * 9 // 10
