"""How the generated objects find their nodes: every node carries its node profile's name under
:data:`PROFILE_LABEL`, applied by ``kubernetes/label-nodes.sh`` from the plan."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

PROFILE_LABEL = "fabricgen.dev/node-profile"


def profile_affinity(profiles: Sequence[str]) -> dict[str, Any]:
    """A pod affinity to the nodes of ``profiles`` (a DaemonSet runs only there)."""
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": PROFILE_LABEL, "operator": "In", "values": list(profiles)}]}]}}}
