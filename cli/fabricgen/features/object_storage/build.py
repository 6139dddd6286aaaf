"""Build ``storage.object``: the object tier, each bucket refused where its path to the pods cannot work:

- s3 needs its region and takes no endpoint (Mountpoint and Alluxio find S3's own); minio and oss need their
  endpoint (minio: path-style requests, its buckets are no DNS names), and no region; gcs takes neither (a GCS
  bucket's location is its own, its API one endpoint);
- an OSS bucket has no '.', only a GCS bucket has '_', a GCS bucket neither starts with "goog" nor holds "google",
  and no bucket is an IP address or has '..' (the providers' naming rules);
- oss and gcs are served through a Fluid cache only (the Mountpoint CSI driver speaks S3; Google's Cloud Storage
  FUSE CSI driver runs on GKE only);
- a cache is read-only (Fluid's Dataset), needs node profiles that some node group uses and that state local_nvme,
  and its quota, with every other cache on the profile, must fit that NVMe file system;
- two stores may not share a claim's mount path within one namespace;
- every store names the Secret of its keys (an on-premises cluster has no cloud identity), and the stores the
  Mountpoint driver mounts one and the same (its credentials are driver-level).

Drivers, versions and their sources live in ``drivers.yaml`` beside this module.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any

from fabricgen.core.hints import did_you_mean
from fabricgen.core.issues import Issues
from fabricgen.features.feature import BuildContext
from fabricgen.model.cluster import Cluster
from fabricgen.model.object_storage import ObjectCache, ObjectStore, cached_gib
from fabricgen.spec.load import shipped_data

_IP_ADDRESS = re.compile(r"^[0-9]{1,3}(\.[0-9]{1,3}){3}$")
MOUNTPOINT_PROVIDERS = ("s3", "minio")  # what the Mountpoint CSI driver mounts; the others need a Fluid cache
CACHE_DIR = "fluid"  # below local_nvme.path: the Alluxio workers' SSD tier, one directory per store


@cache
def drivers() -> Mapping[str, Any]:
    """The shipped driver facts (CSI driver and Fluid releases, mount options), validated against their schema."""
    data: Mapping[str, Any] = shipped_data(Path(__file__).with_name("drivers.yaml"),
                                           "sections/storage.schema.json#/$defs/drivers_file")
    return data


def _endpoint(issues: Issues, name: str, spec: Mapping[str, Any]) -> None:
    provider = spec["provider"]
    if provider == "s3":
        if "region" not in spec:
            issues.error((), f"S3 bucket {spec['bucket']} of object store {name} has no region",
                         f"set storage.object.{name}.region to the bucket's AWS region (us-east-1)")
        if "endpoint" in spec:
            issues.error(("endpoint",), "an s3 store takes S3's own endpoint from its region",
                         "remove endpoint, or use provider: minio for an S3-compatible store at that URL")
        return
    if provider == "gcs":
        for key in ("region", "endpoint"):
            if key in spec:
                issues.error((key,), "a gcs store is reached through Google's one Cloud Storage API",
                             f"remove {key}: a GCS bucket's location is its own")
        return
    if "endpoint" not in spec:
        issues.error((), f"a {provider} store needs the endpoint of its service",
                     f"set storage.object.{name}.endpoint to its URL (e.g. https://minio.dc1.example.net:9000)")
    if "region" in spec:
        issues.error(("region",), f"region is for provider s3; a {provider} store is reached at its endpoint",
                     "remove region")


def _bucket(issues: Issues, spec: Mapping[str, Any]) -> None:
    bucket, provider = spec["bucket"], spec["provider"]
    if provider == "oss" and "." in bucket:
        issues.error(("bucket",), f"OSS bucket names hold no '.': {bucket!r}",
                     "lower-case letters, digits and '-' only (Alibaba Cloud's bucket naming rules)")
    if provider != "gcs" and "_" in bucket:
        issues.error(("bucket",), f"{provider} bucket names hold no '_': {bucket!r}",
                     "lower-case letters, digits, '.' and '-' only (only GCS allows '_')")
    if provider == "gcs" and (bucket.startswith("goog") or "google" in bucket):
        issues.error(("bucket",), f"GCS bucket names neither start with 'goog' nor hold 'google': {bucket!r}",
                     "choose another name (Google Cloud Storage's bucket naming rules)")
    if ".." in bucket or _IP_ADDRESS.fullmatch(bucket):
        issues.error(("bucket",), f"{bucket!r} is not a valid bucket name",
                     "no two adjacent periods and not an IP address (S3's bucket naming rules)")


def _cache(issues: Issues, name: str, spec: Mapping[str, Any], cluster: Cluster) -> ObjectCache | None:
    raw = spec.get("cache")
    if raw is None:
        if spec["provider"] not in MOUNTPOINT_PROVIDERS:
            issues.error(("provider",), f"{'an' if spec['provider'] == 'oss' else 'a'} {spec['provider']} store is "
                                        "served through a Fluid cache only",
                         f"add storage.object.{name}.cache (profiles, quota_gib): the Mountpoint CSI driver "
                         "speaks S3 only" + (", and Google's Cloud Storage FUSE CSI driver runs on GKE only"
                                             if spec["provider"] == "gcs" else ""))
        return None
    if spec.get("access") == "ReadWriteMany":
        issues.error(("access",), "a Fluid cache serves its bucket read-only",
                     "use access: ReadOnlyMany, or drop cache to write through Mountpoint")
    used = {g.profile for g in cluster.groups}
    paths = set()
    for i, profile_name in enumerate(raw["profiles"]):
        profile = cluster.profiles.get(profile_name)
        if profile is None or profile_name not in used:
            issues.error(("cache", "profiles", i), f"no node group uses node profile {profile_name!r}",
                         did_you_mean(profile_name, sorted(used)) or f"name one of {', '.join(sorted(used))}")
        elif profile.local_nvme is None:
            issues.error(("cache", "profiles", i), f"node profile {profile_name} states no local_nvme to cache on",
                         f"set node_profiles.{profile_name}.local_nvme (path, capacity_gib), or cache elsewhere")
        else:
            paths.add(profile.local_nvme.path)
    if len(paths) > 1:
        issues.error(("cache", "profiles"),
                     f"the profiles keep their NVMe at different paths: {', '.join(sorted(paths))}",
                     "one AlluxioRuntime has one SSD tier path: cache on profiles whose local_nvme.path is the same")
    nodes = sum(g.count for g in cluster.groups if g.profile in raw["profiles"])
    workers = raw.get("workers", nodes)
    if nodes and workers > nodes:
        issues.error(("cache", "workers"), f"{workers} cache workers on {nodes} nodes of the profiles",
                     f"at most one worker per node: {nodes}")
    path = f"{min(paths)}/{CACHE_DIR}" if paths else ""  # Fluid adds /<namespace>/<runtime> below it
    return ObjectCache(tuple(raw["profiles"]), raw["quota_gib"], workers, path)


def _fits_nvme(issues: Issues, stores: list[ObjectStore], cluster: Cluster) -> None:
    """Every cache a profile's nodes hold shares its NVMe file system: their quotas together must fit it."""
    per_profile: dict[str, list[ObjectStore]] = {}
    for store in stores:
        for name in store.cache.profiles if store.cache else ():
            per_profile.setdefault(name, []).append(store)
    for profile_name, users in sorted(per_profile.items()):
        profile = cluster.profiles.get(profile_name)  # an unknown one is reported by its store
        nvme = profile.local_nvme if profile is not None else None
        total = cached_gib(users, profile_name)
        if nvme is not None and total > nvme.capacity_gib:
            issues.error(("object", users[-1].name, "cache", "quota_gib"),
                         f"caches on node profile {profile_name} take {total} GiB "
                         f"({', '.join(s.name for s in users)}) of its {nvme.capacity_gib} GiB local NVMe",
                         "shrink quota_gib so every cache on the profile fits its local_nvme.capacity_gib")


def _credentials(issues: Issues, name: str, spec: Mapping[str, Any]) -> None:
    """An on-premises cluster has no cloud identity (no instance profile, IRSA or EKS Pod Identity) to sign its
    requests with: every store names the Secret holding its keys."""
    if "credentials_secret" not in spec:
        issues.error((), f"object store {name} names no credentials_secret: an on-premises cluster has no instance "
                         "profile, IRSA or EKS Pod Identity to sign its requests",
                     f"set storage.object.{name}.credentials_secret to the Secret holding its access keys")


def _one_driver_secret(issues: Issues, stores: list[ObjectStore]) -> None:
    """Mountpoint's credentials are the driver's (one Secret, awsAccessSecret.name of its chart), so every store it
    mounts must name that one."""
    direct = [s for s in stores if s.cache is None and s.provider in MOUNTPOINT_PROVIDERS and s.credentials_secret]
    for store in direct[1:]:
        if store.credentials_secret != direct[0].credentials_secret:
            issues.error(("object", store.name, "credentials_secret"),
                         f"Mountpoint reads one driver-level Secret, and {direct[0].name} names "
                         f"{direct[0].credentials_secret}, not {store.credentials_secret}",
                         "give the stores Mountpoint mounts one Secret (keys key_id, access_key), or cache this one "
                         "through Fluid (a Secret per Dataset)")


def _store(issues: Issues, name: str, spec: Mapping[str, Any], cluster: Cluster) -> ObjectStore:
    _endpoint(issues, name, spec)
    _bucket(issues, spec)
    _credentials(issues, name, spec)
    return ObjectStore(name, spec["provider"], spec["bucket"], spec.get("prefix", ""), spec.get("region", ""),
                       spec.get("endpoint", "").rstrip("/"), spec["access"], spec["namespace"], spec["mount_path"],
                       spec.get("credentials_secret", ""), spec.get("description", ""),
                       _cache(issues, name, spec, cluster), issues.position(()))


def _shared_mount_paths(issues: Issues, stores: list[ObjectStore], cluster: Cluster) -> None:
    taken = {(fs.volume.namespace, fs.volume.mount_path): f"lustre.{fs.name}" for fs in cluster.lustre
             if fs.volume is not None}
    for store in stores:
        key = (store.namespace, store.mount_path)
        if key in taken:
            issues.error(("object", store.name, "mount_path"),
                         f"{store.mount_path} is already where pods of {store.namespace} see {taken[key]}",
                         "give each tier its own mount_path")
        taken.setdefault(key, f"storage.object.{store.name}")


def build(context: BuildContext, cluster: Cluster) -> Cluster:
    """The cluster with the object stores of ``storage.object``, in spec order."""
    section = context.data.get("storage", {}).get("object", {})
    issues = context.issues.at("storage")
    stores = [_store(issues.at("object", name), name, spec, cluster) for name, spec in section.items()]
    _fits_nvme(issues, stores, cluster)
    _one_driver_secret(issues, stores)
    _shared_mount_paths(issues, stores, cluster)
    return replace(cluster, object_stores=tuple(stores))
