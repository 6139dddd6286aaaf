"""Target ``object-storage``: per store of ``storage.object``, ``kubernetes/storage/object-<name>.yaml``:

- without ``cache``: a static PersistentVolume through the Mountpoint for Amazon S3 CSI driver (``s3.csi.aws.com``:
  the bucket as ``volumeAttributes.bucketName``, mount-s3's flags as ``mountOptions``: ``prefix``, ``region`` on S3,
  ``endpoint-url`` and ``force-path-style`` on an S3-compatible store, ``read-only`` for ReadOnlyMany, else
  ``allow-delete`` and ``allow-overwrite``) pre-bound to its PersistentVolumeClaim ``object-<name>``;
- with ``cache``: a Fluid Dataset (the bucket as an ``s3://``, ``oss://`` or ``gs://`` mount, its options and the
  access keys as ``encryptOptions`` from the named Secret, read-only, node affinity to the cache's profiles) and its
  AlluxioRuntime (``workers`` replicas, one SSD tier of ``quota_gib`` under the profiles' local NVMe); GCS signs
  with a service-account key file instead, so its Secret is a volume of the runtime, mounted in the master and the
  workers, and the mount's ``fs.gcs.credential.path`` names the file; Fluid creates the claim ``object-<name>``
  itself.

Training pods mount the claim at ``mount_path`` (:func:`fabricgen.features.lustre.build.pod_storage`). Each file's
header names the driver release it was checked against and how to install it, since without the driver the pods
stay ContainerCreating.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from fabricgen.core.artifacts import Artifact
from fabricgen.core.naming import DEVICE_NAME, checked
from fabricgen.features.kubernetes.nodes import PROFILE_LABEL
from fabricgen.features.kubernetes.storage import LABELS, documents
from fabricgen.features.object_storage.build import drivers
from fabricgen.model.object_storage import ObjectStore
from fabricgen.model.topology import Topology

CAPACITY = "1Pi"  # Mountpoint ignores a PV's capacity, but Kubernetes requires one
# The keys of the Secret each Fluid underlay reads (Fluid's samples), by provider.
FLUID_KEYS = {"s3": ("aws.accessKeyId", "aws.secretKey"), "minio": ("aws.accessKeyId", "aws.secretKey"),
              "oss": ("fs.oss.accessKeyId", "fs.oss.accessKeySecret")}


def mount_options(store: ObjectStore) -> list[str]:
    """mount-s3's flags for the store, without their dashes, as the CSI driver takes them."""
    options = [f"prefix {store.prefix}"] if store.prefix else []
    if store.provider == "s3":
        options.append(f"region {store.region}")
    else:  # an S3-compatible store: its own endpoint, path-style requests (its buckets are no DNS names)
        options += [f"endpoint-url {store.endpoint}", "force-path-style"]
    options += ["read-only"] if store.read_only else ["allow-delete", "allow-overwrite"]
    return options


def mountpoint_volume(store: ObjectStore, cluster: str) -> list[dict[str, Any]]:
    """The static PV and its PVC of a bucket mounted through Mountpoint."""
    labels = {**LABELS, "fabricgen.dev/object-store": store.name}
    pv = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": store.claim, "labels": labels},
          "spec": {"capacity": {"storage": CAPACITY}, "accessModes": [store.access], "storageClassName": "",
                   "persistentVolumeReclaimPolicy": "Retain",
                   "claimRef": {"kind": "PersistentVolumeClaim", "namespace": store.namespace, "name": store.claim},
                   "mountOptions": mount_options(store),
                   "csi": {"driver": drivers()["mountpoint"]["driver"],
                           "volumeHandle": f"{cluster}-{store.claim}",  # unique: the driver mounts a handle once
                           "volumeAttributes": {"bucketName": store.bucket}}}}
    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
           "metadata": {"name": store.claim, "namespace": store.namespace, "labels": labels},
           "spec": {"accessModes": [store.access], "storageClassName": "", "volumeName": store.claim,
                    "resources": {"requests": {"storage": CAPACITY}}}}
    return [pv, pvc]


SCHEMES = {"s3": "s3", "minio": "s3", "oss": "oss", "gcs": "gs"}  # Alluxio's under-storage URI scheme


def _gcs_key_path() -> str:
    """Where the Alluxio master and workers read the GCS service-account key (the Secret's volume)."""
    fluid = drivers()["fluid"]
    return f"{fluid['gcs_key_dir']}/{fluid['gcs_key']}"


def _underlay(store: ObjectStore) -> tuple[str, dict[str, str]]:
    """The Dataset's mount point and options of the store's provider (Alluxio's under-storage properties)."""
    point = f"{SCHEMES[store.provider]}://{store.bucket}/{store.prefix}"
    if store.provider == "gcs":  # UFS version 2 (Alluxio's default, stated): the key file, not HMAC keys
        return point, {"alluxio.underfs.gcs.version": "2", "fs.gcs.credential.path": _gcs_key_path()}
    if store.provider == "s3":
        return point, {"alluxio.underfs.s3.region": store.region}
    if store.provider == "minio":
        return point, {"alluxio.underfs.s3.endpoint": store.endpoint, "alluxio.underfs.s3.disable.dns.buckets": "true",
                       "alluxio.underfs.s3.inherit.acl": "false"}
    return point, {"fs.oss.endpoint": store.endpoint.split("://", 1)[-1]}  # OSS takes the host


def fluid_dataset(store: ObjectStore) -> list[dict[str, Any]]:
    """The Dataset and AlluxioRuntime of a bucket cached on the nodes' NVMe."""
    assert store.cache is not None
    fluid = drivers()["fluid"]
    point, options = _underlay(store)
    # path "/": the bucket is the Dataset's root (a lone mount without it appears under /<name>: Fluid's
    # ufs_path_builder), so pods see it at mount_path itself
    mount: dict[str, Any] = {"mountPoint": point, "name": store.name, "path": "/", "readOnly": True,
                             "options": options}
    if store.credentials_secret and store.provider in FLUID_KEYS:
        mount["encryptOptions"] = [{"name": key, "valueFrom": {"secretKeyRef": {"name": store.credentials_secret,
                                                                                "key": key}}}
                                   for key in FLUID_KEYS[store.provider]]
    meta = {"name": store.claim, "namespace": store.namespace,
            "labels": {**LABELS, "fabricgen.dev/object-store": store.name}}
    dataset = {"apiVersion": "data.fluid.io/v1alpha1", "kind": "Dataset", "metadata": meta,
               "spec": {"mounts": [mount], "accessModes": ["ReadOnlyMany"],
                        "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                            {"key": PROFILE_LABEL, "operator": "In", "values": list(store.cache.profiles)}]}]}}}}
    spec: dict[str, Any] = {"replicas": store.cache.workers, "tieredstore": {"levels": [
        {"mediumtype": "SSD", "volumeType": "hostPath", "path": store.cache.path,
         "quota": f"{store.cache.quota_gib}Gi", "high": fluid["tier_high"], "low": fluid["tier_low"]}]}}
    if store.provider == "gcs":
        spec |= _key_volume(store.credentials_secret)
    runtime = {"apiVersion": "data.fluid.io/v1alpha1", "kind": "AlluxioRuntime", "metadata": meta, "spec": spec}
    return [dataset, runtime]


def _key_volume(secret: str) -> dict[str, Any]:
    """The GCS key Secret as a runtime volume, read-only at one path in the master and the workers (Fluid's GCS
    sample: the path must be the same in both)."""
    mounts = [{"name": "gcs-credentials", "mountPath": drivers()["fluid"]["gcs_key_dir"], "readOnly": True}]
    return {"volumes": [{"name": "gcs-credentials", "secret": {"secretName": secret}}],
            "master": {"volumeMounts": mounts}, "worker": {"volumeMounts": mounts}}


def _about(store: ObjectStore) -> str:
    """The header: what the file needs running before its pods can start, and where the keys come from."""
    where = f"{store.provider} bucket {store.bucket}{'/' + store.prefix if store.prefix else ''}"
    lines = [f"Object tier {store.name}: {where}{' (' + store.description + ')' if store.description else ''}."]
    if store.cache is not None:
        fluid = drivers()["fluid"]
        lines += [f"Needs Fluid {fluid['release']} (helm repo add fluid {fluid['helm_repo']}; helm install fluid "
                  f"fluid/{fluid['helm_chart']}): it creates the claim {store.claim} in {store.namespace} once the "
                  f"AlluxioRuntime is ready; the cache lives under "
                  f"{store.cache.path}/{store.namespace}/{store.claim} on the nodes."]
        if store.provider == "gcs":
            lines.append(f"Service-account key: Secret {store.credentials_secret} in {store.namespace}, key "
                         f"{fluid['gcs_key']} (kubectl -n {store.namespace} create secret generic "
                         f"{store.credentials_secret} --from-file={fluid['gcs_key']}=KEY.json), read by the Alluxio "
                         f"master and workers at {_gcs_key_path()}.")
        else:
            keys = " and ".join(FLUID_KEYS[store.provider])
            lines.append(f"Access keys: Secret {store.credentials_secret} in {store.namespace}, keys {keys}.")
        return "\n".join(lines)
    mp = drivers()["mountpoint"]
    lines += [f"Needs the Mountpoint for Amazon S3 CSI driver ({mp['driver']}) {mp['release']} on every node that "
              f"mounts it: helm repo add {mp['helm_chart']} {mp['helm_repo']}; helm upgrade --install "
              f"{mp['helm_chart']} {mp['helm_chart']}/{mp['helm_chart']} --namespace {mp['namespace']}."]
    lines.append(f"Access keys: the driver's Secret {store.credentials_secret} in {mp['namespace']} (keys key_id and "
                 f"access_key; install with --set awsAccessSecret.name={store.credentials_secret}), read when the "
                 "driver starts.")
    if not store.read_only:
        lines.append("Mountpoint writes new objects sequentially and has no rename: copy finished checkpoints here; "
                     "do not save into it (torch.distributed.checkpoint renames its .metadata).")
    if store.provider == "minio":
        lines.append("Mountpoint is built for Amazon S3; on an S3-compatible store, path-style requests go to the "
                     "endpoint above (verify the store serves what mount-s3 asks).")
    return "\n".join(lines)


def render(topology: Topology) -> list[Artifact]:
    """One manifest file per object store: see the module docstring."""
    cluster = topology.cluster
    source = PurePosixPath(cluster.source).name
    out = []
    for store in cluster.object_stores:
        claim = checked(DEVICE_NAME, store.claim, "object store claim")
        docs = fluid_dataset(store) if store.cache is not None else mountpoint_volume(store, cluster.metadata.name)
        out.append(Artifact(f"kubernetes/storage/{claim}.yaml", documents(docs, source, _about(store))))
    return out
