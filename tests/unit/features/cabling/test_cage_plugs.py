"""Every cable can be plugged (field review F1): a split SN4700 QSFP-DD cage (2 x 200G Mellanox-SN4700-V64, 4 x 100G
Mellanox-SN4700-C128) takes one plug, so the plan gives it one host on its first port, one cage-pair cable per
lane-aligned pair of switch cages, or a DR4 breakout to four SN2201 uplinks; the cage-plugs check is an error for a
straight cable per logical port and for a straight plug on any port but its connector's first."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest

from fabricgen.core.errors import Severity
from fabricgen.features.cabling.checks import breakout_fanout, cage_plugs
from fabricgen.features.cabling.plan import switch_cage, switch_lane
from fabricgen.model.hardware import single_port_groups
from fabricgen.model.topology import Topology
from fabricgen.pipeline import compile_spec
from fabricgen.stages.compile import _InfeasibleError, port_layout
from tests.conftest import INVENTORIES
from tests.helpers.cabling import by_physical


@pytest.fixture(scope="module")
def lab() -> Topology:
    return compile_spec(INVENTORIES / "lab-1su.yaml").topology


@pytest.fixture(scope="module")
def h100() -> Topology:
    return compile_spec(INVENTORIES / "h100-4su.yaml").topology


def test_examples_are_pluggable(lab: Topology, h100: Topology) -> None:
    assert list(cage_plugs(lab)) == []
    assert list(cage_plugs(h100)) == []


def test_hosts_take_the_first_port_of_cages_no_splitter_serves(lab: Topology, h100: Topology) -> None:
    """No catalog medium plugs a QSFP56 host per port of a 2 x 200G QSFP-DD cage: one host per cage, on `/1`."""
    for topology, fabric in ((lab, "storage"), (h100, "inband")):
        hosts = [c for c in topology.cables if c.fabric == fabric and c.tier == "node-leaf"]
        assert hosts and all(switch_lane(c.z.port) == 1 and c.leg == 0 for c in hosts)
        cages = [(c.z.device, switch_cage(c.z.port)) for c in hosts]
        assert len(cages) == len(set(cages))


def test_switch_links_share_one_cable_per_lane_aligned_cage_pair(lab: Topology, h100: Topology) -> None:
    for topology, fabric in ((lab, "storage"), (h100, "inband")):
        links = [c for c in topology.cables if c.fabric == fabric and c.tier == "leaf-spine"]
        by_cable: dict[str, list[str]] = {}
        for c in links:
            assert c.medium.legs == 1 and c.speed in c.medium.cage_pair
            assert switch_lane(c.a.port) == switch_lane(c.z.port) == c.leg
            by_cable.setdefault(c.physical, []).append(f"{c.a.device}:{switch_cage(c.a.port)}-"
                                                       f"{c.z.device}:{switch_cage(c.z.port)}")
        assert all(len(pairs) == 2 and len(set(pairs)) == 1 for pairs in by_cable.values())
    parts = {c.part for c in h100.cables if c.fabric == "inband" and c.tier == "leaf-spine"}
    assert {p.split("-")[0] for p in parts} <= {"QSFPDD", "MPO16"}


def test_oob_uplinks_are_dr4_breakouts(lab: Topology, h100: Topology) -> None:
    """SN2201 QSFP28 uplinks (4 x 25G NRZ) into C128 cages (4 x 100G on 2 x 50G PAM4 lanes each): one DR4 per
    agg cage, a DR1 on each leaf, a 1:4 MPO-to-LC breakout between them; NVIDIA's own pair on NVIDIA switches
    (Cumulus Linux, "DR1 and DR4 Modules": MMS1V00-WM, MMS1V70-CM)."""
    for topology in (lab, h100):
        up = [c for c in topology.cables if c.fabric == "oob" and c.tier == "leaf-spine"]
        assert up and all(c.medium.name == "qsfpdd-dr4-breakout-4x100g" for c in up)
        assert {(c.a_optic.part if c.a_optic else "", c.z_optic.part if c.z_optic else "") for c in up} == {
            ("MMS1V70-CM", "MMS1V00-WM")}
        legs: dict[str, set[str]] = {}
        for c in up:
            assert c.leg == switch_lane(c.z.port)
            legs.setdefault(c.physical, set()).add(f"{c.z.device}:{switch_cage(c.z.port)}")
        assert all(len(cages) == 1 for cages in legs.values())


def test_a_straight_cable_per_split_port_is_an_error(lab: Topology) -> None:
    """The plan before the fix: each link of a cage pair its own straight cable."""
    unpaired = tuple(replace(c, physical=c.id, leg=0) if c.fabric == "storage" and c.tier == "leaf-spine" else c
                     for c in lab.cables)
    found = [f for f in cage_plugs(replace(lab, cables=unpaired)) if f.subject == "storage"]
    assert [f.severity for f in found] == [Severity.ERROR, Severity.ERROR]
    assert found[0].message.startswith("40 switch cages get more plugs than they take: storage-leaf001 cage 21 (2 "
                                       "cables)")
    assert found[1].message.startswith("20 straight cables end on a port their plug does not drive")


def test_a_lone_straight_plug_off_the_first_port_is_an_error(lab: Topology) -> None:
    host = next(c for c in lab.cables if c.fabric == "storage" and c.tier == "node-leaf")
    moved = replace(host, z=replace(host.z, port=switch_cage(host.z.port) + "/2"))
    found = list(cage_plugs(replace(lab, cables=tuple(moved if c is host else c for c in lab.cables))))
    assert len(found) == 1 and found[0].severity is Severity.ERROR
    assert f"{host.id} at storage-leaf001:1/2" in found[0].message


def test_twin_port_optics_take_two_cables_not_three(h100: Topology) -> None:
    """SN5600 twin-port OSFP transceivers: two fibers per cage pass; a third is one too many."""
    storage = [c for c in h100.cables if c.fabric == "storage" and c.tier == "leaf-spine"]
    first, second = storage[0], storage[1]
    assert first.z_optic is not None and first.z_optic.connections == 2
    extra = replace(second, id="storage-999999", physical="storage-999999",
                    z=replace(second.z, port=first.z.port.split("/")[0] + "/2"))
    crowded = replace(h100, cables=(*h100.cables, extra))
    assert any(f.subject == "storage" for f in cage_plugs(crowded))


def test_no_room_for_one_host_per_cage_is_refused(lab: Topology) -> None:
    """32 hosts at 200G on an SN4700 leaf, one per cage, leave no cage for 16 uplinks: refused, saying why."""
    model = next(sw.model for ft in lab.fabrics for sw in ft.switches if sw.model.name == "SN4700")
    single = single_port_groups(model, "200G", lab.cluster.media)
    assert single == {"main"}
    assert len(port_layout(model, "200G", 16, "200G", 32, single)[0]) == 16
    with pytest.raises(_InfeasibleError) as caught:
        port_layout(model, "200G", 32, "200G", 16, single)
    assert "its cages split at 200G take one host each, on their first port" in str(caught.value)
    assert "add such a splitter" in caught.value.hint


def test_arista_switches_take_arista_breakout_optics(h100: Topology) -> None:
    """The same breakout on an Arista cage takes Arista's pair (vendor_optics), the NVIDIA end keeps NVIDIA's."""
    leg = next(c for c in h100.cables if c.medium.name == "qsfpdd-dr4-breakout-4x100g")
    arista = replace(leg, z=replace(leg.z, vendor="Arista"))
    assert (arista.a_optic, arista.z_optic) == (leg.a_optic, leg.medium.switch_optic_for("QSFP-DD", "Arista"))
    assert arista.z_optic is not None and arista.z_optic.part == "QDD-400G-DR4"
    assert leg.medium.switch_optic_for("QSFP28", "Arista").part == "QSFP-100G-DR"  # type: ignore[union-attr]


def test_breakouts_fill_agg_cages_row_by_row(h100: Topology) -> None:
    """Field review G2: one harness's legs lie in adjacent racks of one row, within the row's fan-out (2 m: four
    racks 0.6 m apart); the last cage of a row is left partly used (rows A-C: 10 racks, 4 + 4 + 2 legs), and so is
    a cage before a gap (row D's leaves stand in D01-D02 and D09-D10: 2 + 2)."""
    racks = {r.name: r for r in h100.cluster.facility.racks}
    legs = by_physical([c for c in h100.cables if c.medium.name == "qsfpdd-dr4-breakout-4x100g"])
    assert len(legs) == 2 * (3 * 3 + 2)  # two aggs: three cages in each of rows A-C, two in row D
    for group in legs.values():
        places = [racks[c.a.rack] for c in group]
        assert len({r.row for r in places}) == 1
        assert (max(r.index for r in places) - min(r.index for r in places)) * 0.6 <= group[0].medium.fanout_m
        assert sorted(r.index for r in places) == list(range(min(r.index for r in places),
                                                             min(r.index for r in places) + len(places)))
    assert Counter(len(g) for g in legs.values()) == {4: 12, 2: 10}
    assert list(breakout_fanout(h100)) == []


def test_a_breakout_across_rows_is_refused(h100: Topology) -> None:
    """The plan before the fix: agg cage 3 fanned out to A09, A10 and B01, B02 (two rows)."""
    legs = [c for c in h100.cables if c.z.device == "oob-agg01" and c.z.port in ("3/1", "3/2", "4/1", "4/2")]
    moved = {c.id: replace(c, physical=legs[0].physical, leg=i + 1, z=replace(c.z, port=f"3/{i + 1}"))
             for i, c in enumerate(legs)}
    cables = tuple(moved.get(c.id, c) for c in h100.cables)
    found = list(breakout_fanout(replace(h100, cables=cables)))
    assert [(f.severity, f.check, f.subject) for f in found] == [(Severity.ERROR, "breakout-fanout", "fabrics.oob")]
    assert f"{legs[0].physical} (oob-agg01:3) to A09, A10, B01, B02: rows A, B, fan-out 2 m" in found[0].message
    assert found[0].position is not None and found[0].hint


def test_a_breakout_beyond_its_fanout_is_refused(h100: Topology) -> None:
    """Legs in one row but farther apart than the medium's fan-out (a 1 m fan-out for four racks 0.6 m apart)."""
    legs = [c for c in h100.cables if c.medium.name == "qsfpdd-dr4-breakout-4x100g"]
    short = replace(legs[0].medium, fanout_m=1.0)
    cables = tuple(replace(c, medium=short) if c.medium is legs[0].medium else c for c in h100.cables)
    found = list(breakout_fanout(replace(h100, cables=cables)))
    assert len(found) == 1 and "1.8 m along row A, fan-out 1 m" in found[0].message


def test_breakout_legs_print_their_fibers_and_polarity(h100: Topology) -> None:
    """Field review G5: leg n is the DR4's lane n, the agg's sub-port n: MPO positions n / 13-n, Type B."""
    for c in h100.cables:
        if c.medium.name == "qsfpdd-dr4-breakout-4x100g":
            assert c.leg == switch_lane(c.z.port)
            assert c.leg_fibers == f"{c.leg}/{13 - c.leg}"
            assert c.leg_order == (f"leg {c.leg} of 4: MPO fibers {c.leg}/{13 - c.leg}, MPO-12/APC female, 8 fibers, "
                                   "Type B")
        elif c.tier == "node-leaf":
            assert c.leg_order == ""
