"""The object tier: the ``storage.object`` section (buckets on S3, an on-premises S3-compatible store or OSS),
refused where its path to the pods cannot work; each store's Kubernetes manifests (target ``object-storage``): a
static PV through the Mountpoint for Amazon S3 CSI driver, or a Fluid Dataset and AlluxioRuntime caching it on the
nodes' local NVMe."""

from __future__ import annotations

from fabricgen.features.feature import Feature, Target
from fabricgen.features.object_storage import build, render

FEATURE = Feature(
    "object_storage",
    build=build.build,
    targets=(Target("object-storage", render.render),),
)
