"""Stage 5, check: findings over the compiled topology (errors stop the pipeline; warnings are shown).

The checks are every feature's (:attr:`Feature.checks`); each is ``(topology) -> findings`` and O(links).
"""

from __future__ import annotations

from fabricgen.core.errors import Finding, Severity
from fabricgen.core.gcpause import without_gc
from fabricgen.features.registry import FEATURES
from fabricgen.model.topology import Topology


@without_gc
def run_checks(topology: Topology) -> tuple[Finding, ...]:
    """All findings of all checks of all features, errors first, in a stable order."""
    findings = [f for feature in FEATURES for check in feature.checks for f in check(topology)]
    return tuple(sorted(findings, key=lambda f: (f.severity is not Severity.ERROR, f.check, f.subject)))
