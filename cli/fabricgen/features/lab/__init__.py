"""The lab: each routed Ethernet fabric run in Linux network namespaces from the rendered switch artifacts (see
the README's "Lab"): FRR's configuration from a switch's routing as its NOS's read-back gives it (:mod:`.frr`),
lldpd's per namespace (:mod:`.lldpd`), the namespaces (:mod:`.netns`), the checks (:mod:`.check`) and the ``lab``
commands (:mod:`.run`). It renders nothing into OUT."""

from __future__ import annotations

from fabricgen.features.feature import Feature

FEATURE = Feature("lab")
