"""The cross-layer check, after render: every feature's read-back of the artifacts as generated (not the model
they came from), so what the hosts mark, what NCCL and Lustre send and what every switch does with it must agree.

Each feature reads back its own files (:attr:`Feature.readback`): RoCE hosts and switches (ethernet), nccl.env
(nccl), lnet.conf (lustre). Each mismatch names both sides and the value each holds. Runs on every plan and apply.
"""

from __future__ import annotations

from collections.abc import Iterable

from fabricgen.core.artifacts import Artifact
from fabricgen.core.errors import Finding
from fabricgen.core.gcpause import without_gc
from fabricgen.features.registry import FEATURES
from fabricgen.model.topology import Topology


@without_gc
def check_artifacts(topology: Topology, artifacts: Iterable[Artifact]) -> tuple[Finding, ...]:
    """Every finding of every feature's read-back over the rendered artifacts."""
    by_path = {a.path: a for a in artifacts}
    return tuple(f for feature in FEATURES if feature.readback is not None
                 for f in feature.readback(topology, by_path))
