"""Kubernetes: the ``kubernetes`` section, pod networks per rail over SR-IOV (or host-device), device plugins,
the NicClusterPolicy and an example workload (``kubernetes``), and the storage tiers (``k8s-storage``)."""

from __future__ import annotations

from fabricgen.features.feature import Feature, Target
from fabricgen.features.kubernetes import build, render, storage

FEATURE = Feature(
    "kubernetes",
    build=build.build,
    targets=(Target("kubernetes", render.render), Target("k8s-storage", storage.render)),
)
