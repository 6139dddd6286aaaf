"""The lab: each routed Ethernet fabric run in Linux network namespaces from the rendered switch artifacts (see
the README's "Lab"). Built so far: FRR's configuration from a switch's routing as its NOS's read-back gives it
(:mod:`.frr`); the namespaces and the ``lab`` commands come next. It renders nothing into OUT."""

from __future__ import annotations

from fabricgen.features.feature import Feature

FEATURE = Feature("lab")
