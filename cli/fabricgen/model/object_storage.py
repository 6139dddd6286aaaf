"""The object tier of the storage hierarchy: a bucket training pods mount, directly through the Mountpoint for Amazon
S3 CSI driver or cached on the nodes' local NVMe by a Fluid Dataset and its AlluxioRuntime."""

from __future__ import annotations

from dataclasses import dataclass, field

from fabricgen.core.errors import SourcePosition


@dataclass(frozen=True)
class ObjectCache:
    """A Fluid cache of the bucket on the local NVMe of ``profiles``: ``workers`` cache workers of ``quota_gib``
    each, under ``path`` on every such node (the profiles' local_nvme path and the store's own directory)."""

    profiles: tuple[str, ...]
    quota_gib: int
    workers: int
    path: str


@dataclass(frozen=True)
class ObjectStore:
    """One bucket of the cold tier; ``claim`` is the PersistentVolumeClaim pods mount (Fluid names the claim after
    its Dataset, so both paths use the same name)."""

    name: str
    provider: str  # s3 | minio | oss | gcs
    bucket: str
    prefix: str
    region: str
    endpoint: str
    access: str
    namespace: str
    mount_path: str
    credentials_secret: str
    description: str
    cache: ObjectCache | None
    position: SourcePosition = field(compare=False)

    @property
    def claim(self) -> str:
        return f"object-{self.name}"

    @property
    def read_only(self) -> bool:
        return self.access == "ReadOnlyMany"


def cached_gib(stores: tuple[ObjectStore, ...] | list[ObjectStore], profile: str) -> int:
    """What the Fluid caches of ``stores`` take of each node of ``profile``'s local NVMe, GiB."""
    return sum(s.cache.quota_gib for s in stores if s.cache is not None and profile in s.cache.profiles)
