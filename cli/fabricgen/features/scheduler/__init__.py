"""Schedulers: the ``scheduler`` section and the fabric's switch tree as Slurm reads it (``slurm``: topology.conf
for the tree and block plugins, topology.yaml) and as Kubernetes schedulers do (``k8s-topology``: node labels, the
script that applies them, Kueue's Topology and ResourceFlavor)."""

from __future__ import annotations

from fabricgen.features.feature import Feature, Target
from fabricgen.features.scheduler import build, checks, kubernetes, slurm

FEATURE = Feature(
    "scheduler",
    build=build.build,
    checks=(checks.check,),
    targets=(Target("slurm", slurm.render), Target("k8s-topology", kubernetes.render)),
)
