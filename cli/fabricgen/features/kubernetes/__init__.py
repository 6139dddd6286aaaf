"""Kubernetes: the ``kubernetes`` section; pod networks per rail over SR-IOV (or host-device), device plugins and
the NicClusterPolicy (``kubernetes``), the training workloads (``k8s-workloads``), the storage tiers
(``k8s-storage``) and the node labels all of them select on (``k8s-nodes``)."""

from __future__ import annotations

from fabricgen.features.feature import Feature, Target
from fabricgen.features.kubernetes import build, ipam, nodes, render, storage, workloads

FEATURE = Feature(
    "kubernetes",
    build=build.build,
    checks=(ipam.check_pod_blocks, workloads.check_leaf_group),
    targets=(Target("kubernetes", render.render), Target("k8s-storage", storage.render),
             Target("k8s-workloads", workloads.render), Target("k8s-nodes", nodes.render)),
)
