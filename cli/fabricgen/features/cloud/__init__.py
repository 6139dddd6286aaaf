"""Cloud clusters: the ``cloud`` section in place of facility, nodes and fabrics, the Pulumi project of its
provider (``pulumi``), and ``apply --cloud`` (:mod:`.deploy`)."""

from __future__ import annotations

from fabricgen.features.cloud import build, render
from fabricgen.features.feature import Feature, Target

FEATURE = Feature(
    "cloud",
    build=build.build,
    checks=(render.user_data_size,),
    targets=(Target("pulumi", render.render, cloud=True),),
    cluster_section="cloud",
)
