"""Address plans that stay put as the cluster grows or shrinks (field review of the sync renames, "still open"):
top-of-rack subnets of one size at their rack's place, pod ranges at their leaf's place in the host pool's upper
half, IPoIB rails sized for ``topology.max_scalable_units``. Each test compares a spec with one edit of it."""

from __future__ import annotations

from pathlib import Path

import pytest
from bench.address_stability import switch_values
from netaddr import IPAddress, IPNetwork

from fabricgen.core.errors import SpecError
from fabricgen.features.addressing.plan import rack_leaf_ports
from fabricgen.model.addressing import FabricAddresses
from fabricgen.model.hardware import PortGroup, SwitchModel
from fabricgen.pipeline import compile_spec
from tests.conftest import INVENTORIES

EXAMPLE = (INVENTORIES / "h100-4su.yaml").read_text()
GPUS = "  - name: gpu{n:03d}\n    count: 127\n"
BMC_ONLY = ("node_profiles:\n  bmc-only:\n    role: management\n    height_u: 1\n    nics:\n"
            "      bmc: {port: BMC, model: bmc-1g-rj45}\n")


def _plan(tmp_path: Path, text: str, fabric: str, name: str = "spec") -> FabricAddresses:
    spec = tmp_path / f"{name}.yaml"
    spec.write_text(text)
    return compile_spec(spec).topology.addresses[fabric]


def _edit(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


def _hosts(plan: FabricAddresses) -> dict[tuple[str, int], str]:
    """Each host port's address with its prefix length."""
    return {(node, port): f"{ip}/{s.network.split('/')[1]}" for s in plan.hosts for node, port, ip in s.hosts}


def _empty_rack_a02(text: str) -> str:
    """h100-4su without gpu005-008, the DGX of rack A02: gpu001-004 stay in A01 and gpu009 on start in A03."""
    later = ", ".join([f"A{i:02d}" for i in range(3, 11)] + [f"{r}{i:02d}" for r in "BCD" for i in range(1, 11)])
    text = _edit(text, GPUS + "    profile: dgx-h100\n    placement: {rows: [A, B, C, D], per_rack: 4, start_u: 2}\n",
                 "  - name: gpu00{n}\n    count: 4\n    profile: dgx-h100\n"
                 "    placement: {racks: [A01], per_rack: 4, start_u: 2}\n"
                 "  - name: gpu{n:03d}\n    count: 119\n    start: 9\n    profile: dgx-h100\n"
                 f"    placement: {{racks: [{later}], per_rack: 4, start_u: 2}}\n")
    return text.replace('["gpu{n:03d}"]', '["gpu00{n}", "gpu{n:03d}"]')


def test_top_of_rack_subnets_are_one_size_at_their_racks_place() -> None:
    """Every OOB leaf (an SN2201: 48 x 1G) gets a /26 whatever its rack holds, at the block its rack's position in
    the facility gives: A01 the first, B01 (rack 11) the 11th, C01 the 27th (after the six network racks N01-06)."""
    plan = compile_spec(INVENTORIES / "h100-4su.yaml").topology.addresses["oob"]
    subnets = {s.leaf: s for s in plan.hosts}
    assert {IPNetwork(s.network).prefixlen for s in plan.hosts} == {26}
    assert [subnets[leaf].network for leaf in ("oob-a01", "oob-a02", "oob-b01", "oob-c01", "oob-d10")] == [
        "10.34.0.0/26", "10.34.0.64/26", "10.34.2.128/26", "10.34.6.128/26", "10.34.11.64/26"]
    a02 = subnets["oob-a02"]
    assert a02.gateway == "10.34.0.65"
    assert [ip for _, _, ip in a02.hosts] == ["10.34.0.66", "10.34.0.67", "10.34.0.68", "10.34.0.69"]


def test_a_rack_emptied_or_filled_moves_no_other_racks_addresses(tmp_path: Path) -> None:
    """Rack A02 emptied (gpu005-008 gone), or given two more nodes (six BMCs: the old plan's /29 became a /28 and
    every later rack shifted): no other BMC's address or prefix changes."""
    before = _hosts(_plan(tmp_path, EXAMPLE, "oob", "before"))
    emptied = _hosts(_plan(tmp_path, _empty_rack_a02(EXAMPLE), "oob", "emptied"))
    assert {key for key in before if key not in emptied} == {(f"gpu00{n}", 1) for n in range(5, 9)}
    assert {key: emptied[key] for key in emptied} == {key: before[key] for key in emptied}
    with_profile = _edit(EXAMPLE, "node_profiles:\n", BMC_ONLY)
    filled = _edit(with_profile, "  - name: ufm01\n", "  - name: bmc-only{n:02d}\n    count: 2\n    profile: bmc-only\n"
                   "    placement: {racks: [A02], per_rack: 2, start_u: 40}\n  - name: ufm01\n")
    base = _hosts(_plan(tmp_path, with_profile, "oob", "base"))
    grown = _hosts(_plan(tmp_path, filled, "oob", "grown"))
    assert set(grown) - set(base) == {("bmc-only01", 1), ("bmc-only02", 1)}
    assert {key: grown[key] for key in base} == base


def test_top_of_rack_pool_exhausted_by_the_last_racks_place(tmp_path: Path) -> None:
    """A /22 holds 16 /26s; the OOB leaves stand in racks up to D10, the facility's 46th: a SpecError naming the
    pool, the blocks needed and the rack they must reach (the old plan fitted 34 /29s in it)."""
    text = _edit(EXAMPLE, "      hosts: 10.34.0.0/16\n", "      hosts: 10.34.0.0/22\n")
    with pytest.raises(SpecError) as caught:
        _plan(tmp_path, text, "oob")
    assert ("fabrics.oob.addressing.hosts: 10.34.0.0/22 is exhausted: the fabric needs 46 /26 blocks, one per "
            "facility rack up to D10's (hint: use a larger pool)") in str(caught.value)


def test_rack_leaf_ports_count_to_the_last_host_speed_port() -> None:
    """The host subnet must reach the highest port number a host can take: the SN2201's 48 RJ45 ports; on a model
    whose first cages cannot run the host speed, the ports numbered before them count too (compile numbers every
    cage in turn)."""
    access = PortGroup("access", 48, "RJ45", (("1G", 1),))
    uplink = PortGroup("uplink", 4, "QSFP28", (("100G", 1), ("25G", 4)))
    assert rack_leaf_ports(SwitchModel("SN2201", "NVIDIA", "ethernet", 1, (access, uplink)), "1G") == 48
    assert rack_leaf_ports(SwitchModel("odd", "x", "ethernet", 1, (uplink, access)), "1G") == 4 * 4 + 48
    assert rack_leaf_ports(SwitchModel("odd", "x", "ethernet", 1, (access, uplink)), "25G") == 48 + 4 * 4


def test_pod_ranges_stay_when_a_leaf_pair_goes(tmp_path: Path) -> None:
    """127 -> 122 DGX removes the storage fabric's third leaf pair: the other four leaves keep their pod ranges
    (carved after every host subnet, they all moved down by 2,048 addresses), each at its leaf's block of the host
    pool's upper half."""
    before = {p.leaf: p.network for p in _plan(tmp_path, EXAMPLE, "storage", "before").pods}
    after = {p.leaf: p.network for p in _plan(tmp_path, _edit(EXAMPLE, GPUS, GPUS.replace("127", "122")), "storage",
                                              "after").pods}
    assert set(before) - set(after) == {"storage-leaf005", "storage-leaf006"}
    assert after == {leaf: before[leaf] for leaf in after}
    assert [IPNetwork(before[f"storage-leaf00{n}"]).network for n in range(1, 7)] == [
        IPAddress("10.20.128.0") + 512 * n for n in range(6)]


def _ib_plan(tmp_path: Path, gpus: int, name: str, planned: str = "") -> FabricAddresses:
    """h100-4su's compute fabric in SUs of 16 (127 DGX and the UFM fill 8) with ``gpus`` DGX (the network racks
    made to hold its twice as many leaves)."""
    text = _edit(EXAMPLE, "scalable_unit: 32", f"scalable_unit: 16{planned}")
    text = _edit(text, "  slack_m: 1.0\n", "  slack_m: 1.0\n  switches_per_network_rack: 48\n")
    return _plan(tmp_path, _edit(text, GPUS, GPUS.replace("127", str(gpus))), "compute", name)


def test_rail_subnets_sized_for_the_planned_scalable_units(tmp_path: Path) -> None:
    """Without max_scalable_units, 7 -> 8 SUs of 16 turns every rail's /25 into a /24 and renumbers it; planned for 16
    SUs, each rail is a /23 from the start and the SU added changes no surviving address but the UFM's (which takes
    the last SU's last slot)."""
    built_7, built_8 = _hosts(_ib_plan(tmp_path, 111, "seven")), _hosts(_ib_plan(tmp_path, 127, "eight"))
    assert {v.split("/")[1] for v in built_7.values()} == {"25"}
    assert {v.split("/")[1] for v in built_8.values()} == {"24"}
    planned = ", max_scalable_units: 16"
    seven, eight = _hosts(_ib_plan(tmp_path, 111, "p7", planned)), _hosts(_ib_plan(tmp_path, 127, "p8", planned))
    assert {v.split("/")[1] for v in (*seven.values(), *eight.values())} == {"23"}
    changed = {node for node, _ in seven if seven[(node, _)] != eight[(node, _)]}
    assert changed == {"ufm01", "ufm02"}


def test_max_scalable_units_below_the_sus_built_is_an_error_at_the_field(tmp_path: Path) -> None:
    text = _edit(EXAMPLE, "scalable_unit: 32", "scalable_unit: 32,\n                max_scalable_units: 3")
    with pytest.raises(SpecError) as caught:
        _plan(tmp_path, text, "compute")
    line = text[:text.index("max_scalable_units")].count("\n") + 1
    assert str(caught.value) == (
        f"{tmp_path / 'spec.yaml'}:{line}:17: fabrics.compute.topology.max_scalable_units: 3 is below the 4 scalable "
        "units the fabric's nodes already fill (32 slots each) (hint: plan for at least 4, or remove it to size the "
        "rail subnets for the SUs built)")


def test_max_scalable_units_only_on_rail_optimized_fabrics(tmp_path: Path) -> None:
    text = _edit(EXAMPLE, "topology: {kind: top-of-rack, uplinks: 2}",
                 "topology: {kind: top-of-rack, uplinks: 2, max_scalable_units: 4}")
    with pytest.raises(SpecError) as caught:
        _plan(tmp_path, text, "oob")
    assert ("fabrics.oob.topology.max_scalable_units: top-of-rack fabrics have no scalable units to plan for (hint: "
            "remove max_scalable_units, or use kind: rail-optimized)") in str(caught.value)


def test_an_emptied_rack_changes_no_other_top_of_rack_leafs_values(tmp_path: Path) -> None:
    """Rack A02 emptied: every other OOB leaf keeps its loopback, management address, ASN and uplink /31s (they
    followed the leaf's index: 220 of 237 values changed). What changes is on the aggregation switches' breakout
    legs only, which now reach other leaves: their ends follow the leaf cabled there."""
    before = switch_values(_plan(tmp_path, EXAMPLE, "oob", "before"))
    after = switch_values(_plan(tmp_path, _empty_rack_a02(EXAMPLE), "oob", "after"))
    assert {key[0] for key in before.keys() - after.keys()} == {"oob-a02", "oob-agg01", "oob-agg02"}  # its legs
    assert not any(device == "oob-a02" for device, _ in after)
    changed = {key for key in before.keys() & after.keys() if before[key] != after[key]}
    assert {device for device, _ in changed} <= {"oob-agg01", "oob-agg02"}
    assert all(what.startswith("p2p ") for _, what in changed) and len(changed) <= 4


def test_top_of_rack_switch_values_sit_at_their_racks_place() -> None:
    """A leaf's loopback, management address and ASN at its rack's facility position (A01 the first, B01 the
    11th, C01 the 27th: after the six network racks), the aggregation switches after every facility rack; the
    management gateway (10.37.0.1) is skipped, never given."""
    plan = compile_spec(INVENTORIES / "h100-4su.yaml").topology.addresses["oob"]
    assert [plan.loopbacks[s] for s in ("oob-a01", "oob-a02", "oob-b01", "oob-c01", "oob-agg01")] == [
        "10.36.0.1", "10.36.0.2", "10.36.0.11", "10.36.0.27", "10.36.0.47"]
    assert [plan.management[s] for s in ("oob-a01", "oob-b01", "oob-agg02")] == ["10.37.0.2", "10.37.0.12",
                                                                                 "10.37.0.49"]
    assert "10.37.0.1" not in plan.management.values()
    assert [plan.asn[s] for s in ("oob-a01", "oob-c01")] == [65300, 65326]
    uplinks = {link.lower_ip for link in plan.p2p if link.lower == "oob-b01"}
    assert uplinks == {"10.35.0.41/31", "10.35.0.43/31"}  # place 10, two uplinks: /31 blocks 20 and 21


def _network_row(text: str, racks: int, max_racks: int | None = None) -> str:
    planned = "" if max_racks is None else f", max_racks: {max_racks}"
    return _edit(text, "{name: N, racks: 6, kind: network}", f"{{name: N, racks: {racks}{planned}, kind: network}}")


def _oob(tmp_path: Path, text: str, name: str) -> dict[tuple[str, str], str]:
    plan = _plan(tmp_path, text, "oob", name)
    return switch_values(plan) | {(node, str(port)): ip for s in plan.hosts for node, port, ip in s.hosts}


def test_a_row_grown_up_to_its_max_racks_renumbers_no_later_rack(tmp_path: Path) -> None:
    """h100-4su's network row N (third of five) grown from 6 to 8 racks: without max_racks rows C and D take
    positions two further on, so their racks' OOB subnets, BMC addresses and the OOB switches' values move (field
    review of the elevation, B1: 55 BMCs and 102 switch values); planned with max_racks: 8 none moves."""
    before, after = _oob(tmp_path, EXAMPLE, "six"), _oob(tmp_path, _network_row(EXAMPLE, 8), "eight")
    assert sum(before[key] != after[key] for key in before.keys() & after.keys()) > 100
    before = _oob(tmp_path, _network_row(EXAMPLE, 6, 8), "planned-six")
    after = _oob(tmp_path, _network_row(EXAMPLE, 8, 8), "planned-eight")
    assert len(before.keys() & after.keys()) > 300
    assert [key for key in before.keys() & after.keys() if before[key] != after[key]] == []
