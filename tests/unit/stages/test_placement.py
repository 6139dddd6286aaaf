"""Switch placement: every switch gets a rack and U without collisions, top-of-rack leaves the top U of their rack,
explicit tier placements; a spec without a network rack or a rack without a free top U is refused."""

from __future__ import annotations

from collections import Counter

import pytest

from fabricgen.core.errors import SpecError
from fabricgen.model.topology import Topology
from fabricgen.pipeline import compile_spec
from fabricgen.spec.load import load_text
from fabricgen.stages.build import build_cluster
from fabricgen.stages.compile import compile_topology
from tests.conftest import INVENTORIES
from tests.helpers.cabling import GEOMETRY_SPEC as LAB


def _topology(text: str) -> Topology:
    return compile_topology(build_cluster(load_text(text, "spec.yaml")))


def test_switches_are_placed_without_collisions() -> None:
    topology = compile_spec(INVENTORIES / "h100-4su.yaml").topology
    for ft in topology.fabrics:
        for sw in ft.switches:
            assert sw.rack is not None and sw.u is not None
            if ft.fabric.topology.kind.value == "top-of-rack" and sw.tier.value == "leaf":
                assert sw.u == topology.cluster.facility.rack_units  # 1U SN2201 at the very top
            else:
                assert sw.rack.startswith("N")
    per_rack = Counter(sw.rack for ft in topology.fabrics for sw in ft.switches if sw.rack and sw.rack.startswith("N"))
    assert max(per_rack.values()) <= topology.cluster.facility.switches_per_network_rack


def test_no_network_rack_is_an_error() -> None:
    text = LAB.replace("    - {name: N, racks: 1, kind: network}\n", "")
    with pytest.raises(SpecError) as caught:
        _topology(text)
    assert "add a row with kind: network" in str(caught.value)


def test_full_rack_leaves_no_room_for_top_of_rack() -> None:
    text = LAB.replace("per_rack: 2, start_u: 2", "per_rack: 6, start_u: 1").replace("count: 8", "count: 6")
    with pytest.raises(SpecError) as caught:
        _topology(text)
    assert "has no free 1U at its top" in str(caught.value)


def test_explicit_tier_placement() -> None:
    text = LAB.replace("    topology: {kind: rail-optimized, scalable_unit: 8}\n",
                       "    topology: {kind: rail-optimized, scalable_unit: 8}\n"
                       "    placement: {spine: {racks: [A04], per_rack: 2, start_u: 40}}\n")
    topology = _topology(text)
    spines = [s for s in topology.fabric("compute").switches if s.tier.value == "spine"]
    assert [(s.rack, s.u) for s in spines] == [("A04", 40), ("A04", 41)]
