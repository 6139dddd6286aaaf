"""Build the ``scheduler`` section: the fabric the schedulers' topology follows (default the compute fabric)."""

from __future__ import annotations

from dataclasses import replace

from fabricgen.core.hints import did_you_mean
from fabricgen.features.feature import BuildContext
from fabricgen.model.cluster import Cluster, FabricRole
from fabricgen.model.scheduler import Scheduler


def build(context: BuildContext, cluster: Cluster) -> Cluster:
    spec = context.data.get("scheduler", {})
    issues = context.issues.at("scheduler")
    names = [f.name for f in cluster.fabrics]
    if "fabric" in spec:
        fabric = spec["fabric"]
        if fabric not in names:
            issues.error(("fabric",), f"unknown fabric {fabric!r}", did_you_mean(fabric, names))
            return cluster
    else:
        fabric = next((f.name for f in cluster.fabrics if f.role is FabricRole.COMPUTE), "")
        if not fabric:
            return cluster  # no compute fabric: nothing for a scheduler to place jobs by
    sizes = tuple(spec.get("slurm", {}).get("block_sizes", ()))
    return replace(cluster, scheduler=Scheduler(fabric, sizes, issues.position(("fabric",)),
                                                issues.position(("slurm", "block_sizes")) if sizes else None))
