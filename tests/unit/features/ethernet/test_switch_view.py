"""Switch views: the per-switch view of a compiled Ethernet fabric that every NOS renderer reads."""

from __future__ import annotations

from fabricgen.features.ethernet.switch_view import switch_views
from fabricgen.pipeline import compile_spec
from tests.conftest import INVENTORIES

LAB = INVENTORIES / "lab-1su.yaml"


def test_switch_views_are_computed_once_per_compiled_fabric() -> None:
    """The SONiC, EOS and NVUE renderers share one computation of a fabric's switch views."""
    topology = compile_spec(LAB).topology
    ft = next(f for f in topology.fabrics if f.fabric.type == "roce")
    assert switch_views(topology, ft) and switch_views(topology, ft) is switch_views(topology, ft)
