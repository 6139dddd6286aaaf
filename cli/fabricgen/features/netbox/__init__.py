"""NetBox: the cluster as NetBox's bulk import takes it (sites to IP addresses, in dependency order), with NetBox's
own choice values and its cage-typed interface templates."""

from __future__ import annotations

from fabricgen.core.artifacts import Places
from fabricgen.features.feature import Feature, Target
from fabricgen.features.netbox import render

FEATURE = Feature(
    "netbox",
    targets=(Target("netbox", render.render),),
    # Every racked device with its rack, U, face and type, as sync places it: plan tells a renamed device by them
    # as sync does (one name gone and one new at the same place, in its rack as renamed), when its cables still
    # plug the same ports (a leaf whose place a spine takes, a server whose order gave it other ports, is not it).
    places=(Places("netbox/07-devices*.csv", "name", ("rack", "position", "face", "device_type"),
                   cabled="netbox/09-cables*.csv",
                   ends=(("side_a_device", "side_a_name"), ("side_b_device", "side_b_name"))),),
)
