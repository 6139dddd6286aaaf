"""Build the ``monitoring`` section: the alert thresholds, the schema's defaults filled in, in the order an alert
band needs (the healthy RDMA loss below the alert, the busy floor below the low utilisation below the high)."""

from __future__ import annotations

from dataclasses import fields, replace

from fabricgen.features.feature import BuildContext
from fabricgen.model.cluster import Cluster
from fabricgen.model.monitoring import Monitoring, Thresholds

BANDS = (("rdma_loss_healthy_percent", "rdma_loss_percent"), ("utilisation_low_percent", "utilisation_high_percent"),
         ("utilisation_busy_percent", "utilisation_low_percent"))


def build(context: BuildContext, cluster: Cluster) -> Cluster:
    spec = context.data.get("monitoring", {}).get("thresholds", {})
    issues = context.issues.at("monitoring", "thresholds")
    thresholds = Thresholds(**{f.name: spec[f.name] for f in fields(Thresholds)})
    for low, high in BANDS:
        if getattr(thresholds, low) >= getattr(thresholds, high):
            issues.error((low,), f"{low} ({getattr(thresholds, low)}) must be below {high}"
                         f" ({getattr(thresholds, high)})", f"lower {low} or raise {high}")
    return replace(cluster, monitoring=Monitoring(thresholds))
