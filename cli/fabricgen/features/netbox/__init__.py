"""NetBox: the cluster as NetBox's bulk import takes it (sites to IP addresses, in dependency order), with NetBox's
own choice values and its cage-typed interface templates."""

from __future__ import annotations

from fabricgen.features.feature import Feature, Target
from fabricgen.features.netbox import render

FEATURE = Feature("netbox", targets=(Target("netbox", render.render),))
