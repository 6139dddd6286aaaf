"""The compiled fabric itself: its structural checks (ports, rails, bonds, oversubscription, scalable units, rack
units), the summary ``fabricgen explain`` prints and the ``topology`` target that writes it with every fabric's
graph."""

from __future__ import annotations

from fabricgen.core.artifacts import Table
from fabricgen.features.feature import Feature, Target
from fabricgen.features.topology import checks, render

FEATURE = Feature(
    "topology",
    checks=(checks.structure, checks.bond_members, checks.rack_collisions),
    targets=(Target("topology", render.render),),
    # A switch is its name: a model, tier, rack or port count that changes shows as that switch's change (a
    # renamed one's too: its row under its new name).
    tables=(Table("topology/*.json", "switch", ("name",), "{name}", rows="switches", devices=("name",)),),
)
