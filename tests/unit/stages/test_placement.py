"""Switch placement: every switch gets a rack and U without collisions, top-of-rack leaves the top U of their rack,
explicit tier placements; a spec without a network rack or a rack without a free top U is refused."""

from __future__ import annotations

from collections import Counter
from itertools import pairwise
from pathlib import Path

import pytest
from bench.bench import spec_text

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


def _placed(tmp_path: Path, text: str, name: str) -> dict[str, tuple[str | None, int | None]]:
    spec = tmp_path / f"{name}.yaml"
    spec.write_text(text)
    return {sw.name: (sw.rack, sw.u) for ft in compile_spec(spec).topology.fabrics for sw in ft.switches}


H100 = (INVENTORIES / "h100-4su.yaml").read_text()


def test_a_storage_leaf_pair_gone_moves_no_other_switch(tmp_path: Path) -> None:
    """127 -> 122 DGX: storage-leaf005/006, two of the four storage spines and the OOB leaf of the emptied rack
    go; every other switch keeps its rack and U (in-band leaves and spines stacked above them used to drop 4U,
    12 switches moved). Only the two storage spines left, recabled to every leaf anyway, find a new home."""
    before = _placed(tmp_path, H100, "before")
    after = _placed(tmp_path, H100.replace("    count: 127\n", "    count: 122\n", 1), "after")
    assert before.keys() - after.keys() == {"storage-leaf005", "storage-leaf006", "storage-spine03",
                                            "storage-spine04", "oob-d02"}
    moved = {name for name in after if before[name] != after[name]}
    assert moved <= {"storage-spine01", "storage-spine02"}


def test_a_new_scalable_unit_moves_no_switch_of_the_others(tmp_path: Path) -> None:
    """A fifth SU planned (``max_scalable_units: 5``, so the compute leaves' range holds it) and then built (127
    -> 159 DGX): SU 1-4's leaves, the storage leaves that keep their nodes and every OOB leaf stand where they
    stood; the new SU's leaves take free slots of their own range, not the U of a switch placed after them. (The
    spine tiers, 16 -> 32 compute spines, each leaf's uplinks re-run, widen their ranges and move those above.)"""
    planned = H100.replace("scalable_unit: 32,", "scalable_unit: 32, max_scalable_units: 5,").replace(
        "  slack_m: 1.0\n", "  slack_m: 1.0\n  switches_per_network_rack: 24\n")
    before = _placed(tmp_path, planned, "before")
    after = _placed(tmp_path, planned.replace("    count: 127\n", "    count: 159\n", 1), "after")
    assert {name for name in after.keys() - before.keys() if name.startswith("compute-su05")} == {
        f"compute-su05-leaf{r}" for r in range(8)}
    # storage-leaf005/006's nodes change (the new SU's DGX join them); the OOB aggregation switches are spines
    kept = [name for name in before if name.startswith(("compute-su", "storage-leaf00", "oob-"))
            and name not in {"storage-leaf005", "storage-leaf006", "oob-agg01", "oob-agg02"}]
    assert [name for name in kept if before[name] != after[name]] == []
    assert {u for name, (_, u) in after.items() if name.startswith("compute-su05")} == set(range(1, 9))


def test_each_tier_holds_one_slot_range_in_every_network_rack() -> None:
    """h100-4su: an SU's 8 leaves at U1-8 of whichever network rack holds them, the storage leaves (2U) at U9
    and the OOB aggregation switches at U19 alike (leaf ranges first, then the spines'); no two tiers share a U."""
    topology = compile_spec(INVENTORIES / "h100-4su.yaml").topology
    us: dict[tuple[str, str], set[int]] = {}
    for ft in topology.fabrics:
        for sw in ft.switches:
            if sw.rack and sw.rack.startswith("N") and sw.u is not None:
                us.setdefault((ft.fabric.name, sw.tier.value), set()).add(sw.u)
    assert us[("compute", "leaf")] == set(range(1, 9))
    assert us[("storage", "leaf")] == {9} and us[("oob", "spine")] == {19}
    ranges = sorted(us.values(), key=min)
    assert all(max(low) < min(high) for low, high in pairwise(ranges))


def test_slot_ranges_past_the_rack_top_are_refused() -> None:
    """Eight SUs planned on one network rack: the compute leaves' range alone needs 64U of its 48, refused with
    every range and what to change (before, the leaves stacked until the rack's budget ran out)."""
    text = LAB.replace("scalable_unit: 8}", "scalable_unit: 8, max_scalable_units: 8}")
    with pytest.raises(SpecError) as caught:
        _topology(text)
    message = str(caught.value)
    assert "the network racks' slot ranges reach U" in message and "compute leaf U1-U64 (64 x 1U)" in message
    assert "lower topology.max_scalable_units" in message


def test_a_core_tier_stands_together_nearest_its_home(tmp_path: Path) -> None:
    """bench's 4,096-GPU spec, a three-tier compute fabric: the cores of a group are cabled to the same spine of
    every SU and so share a home; the 64 cores stand in the 10 network racks nearest their homes, stacked above
    the slot ranges, not one range slot in each of 64 of the 96 network racks (that spread bench's 65,536-GPU
    spec's 1,024 cores over 512 of 768 racks, and 21 spine-core runs needed 100.2 m, past every NDR medium)."""
    spec = tmp_path / "bench-4096.yaml"
    spec.write_text(spec_text(4096))
    topology = compile_spec(spec).topology
    cores = [sw for sw in topology.fabric("compute").switches if sw.tier.value == "core"]
    per_rack = Counter(sw.rack for sw in cores)
    assert len(cores) == 64 and len(per_rack) == 10
    ranges_top = max(sw.u for ft in topology.fabrics for sw in ft.switches
                     if sw.tier.value != "core" and sw.rack in per_rack and sw.u is not None
                     and sw.u < topology.cluster.facility.rack_units)
    assert all(sw.u is not None and sw.u > ranges_top for sw in cores)
