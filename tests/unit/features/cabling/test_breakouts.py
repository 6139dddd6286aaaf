"""Ethernet breakouts on SN5600 host links: one 800G twin-port OSFP cage split 2 x 400G (MCP7Y00 1:2 DAC, or a
twin-port transceiver with two straight fibers), 4 x 200G (MCP7Y50 1:4 DAC, or two 1:2 fibers) or 4 x 100G
(MCP7Y70-H 1:4 DAC), through the splitter machinery of test_splitters.py.

A DAC splitter's plug fills its cage, so its legs are all the logical ports of the cage; a cage the 1:4 DAC does
not reach in full is cabled as the two 1:2 fiber connectors of a twin-port transceiver instead.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import replace

import pytest

from fabricgen.core.errors import Severity, SpecError
from fabricgen.features.cabling.checks import cable_plan
from fabricgen.features.cabling.plan import switch_cage, switch_connector, switch_lane
from fabricgen.features.ethernet.nos.sonic.skus import skus as sonic_skus
from fabricgen.model.cabling import Cable
from fabricgen.model.topology import Topology
from fabricgen.spec.catalog import shipped
from fabricgen.spec.load import load_text
from fabricgen.stages.build import build_cluster
from fabricgen.stages.check import run_checks
from fabricgen.stages.compile import compile_topology
from tests.helpers.cabling import bom_counts, by_physical, host_cables

# One top-of-rack SN5600 per rack (top U), eight 2U servers below it from U2 up, two storage NICs each: with
# slack 1.2 m the three lowest servers are 3.02..3.2 m from the leaf (beyond the 3 m DACs), the rest 2.57..2.93 m.
TOR = """
apiVersion: fabricgen/v1
kind: Cluster
metadata: {name: brk, site: s1}
facility:
  slack_m: SLACK
  rows:
    - {name: A, racks: 2}
    - {name: N, racks: 1, kind: network}
node_profiles:
  srv:
    height_u: 2
    nics:
      storage:
        - {dev: mlx5_0, netdev: eth0, port: P1, model: NIC}
        - {dev: mlx5_1, netdev: eth1, port: P2, model: NIC}
nodes:
  - {name: "s{n:02d}", count: 16, profile: srv, placement: {rows: [A], per_rack: 8, start_u: 2}}
fabrics:
  storage:
    type: roce
    speed: SPEED
    uplink_speed: 800G
    switch: LEAF
    topology: {kind: top-of-rack}
"""


def _topology(speed: str, nic: str, *, slack: float = 1.2, leaf: str = "SN5600", extra: str = "") -> Topology:
    text = TOR.replace("SPEED", speed).replace("NIC", nic).replace("SLACK", str(slack)).replace("LEAF", leaf)
    return compile_topology(build_cluster(load_text(text + extra, "spec.yaml")))


def _errors(topology: Topology) -> list[str]:
    return [f"{f.check} {f.subject} {f.message}" for f in run_checks(topology) if f.severity is Severity.ERROR]


def _cage(cable: Cable) -> tuple[str, str]:
    return cable.z.device, switch_cage(cable.z.port)


def test_400g_osfp_hosts_share_one_2x400g_dac_per_cage() -> None:
    topology = _topology("400G", "ConnectX-7-OSFP")
    hosts = host_cables(topology)
    dacs = [c for c in hosts if c.medium.name == "osfp-dac-splitter-2x400g"]
    straight = [c for c in hosts if c.medium.name == "eth400-osfp-host-mmf"]
    assert len(dacs) + len(straight) == len(hosts) == 32
    assert len(dacs) == 20, "the five upper servers of each rack are within the DAC's 3 m"
    for physical, legs in by_physical(dacs).items():
        assert len(legs) == 2 and [c.id for c in legs] == [f"{physical}/L1", f"{physical}/L2"], "one DAC, two legs"
        assert {switch_lane(c.z.port) for c in legs} == {1, 2} and len({_cage(c) for c in legs}) == 1
        assert [c.leg for c in legs] == [1, 2]
        assert len({(c.part, c.length_m) for c in legs}) == 1
        assert (legs[0].length_m, legs[0].part) == legs[0].medium.standard_length(max(c.run_m for c in legs))
        assert legs[0].part.startswith("MCP7Y00-N") and legs[0].a_optic is None and legs[0].z_optic is None
    assert all(c.leg == 0 and c.physical == c.id for c in straight), "beyond 3 m: two straight fibers per cage"
    assert not {_cage(c) for c in dacs} & {_cage(c) for c in straight}, "a DAC cage holds nothing else"
    bom = bom_counts(topology)
    assert sum(n for part, n in bom.items() if part.startswith("MCP7Y00-")) == len(by_physical(dacs)) == 10
    # Transceivers only where fibers run: one per host port, one twin-port per switch cage (two fibers each).
    assert bom["MMA4Z00-NS400"] == len(straight) == 12
    assert bom["MMA4Z00-NS"] == len({_cage(c) for c in straight}) == 6
    assert not _errors(topology)


def test_200g_cage_takes_one_1x4_dac_or_two_1x2_fibers() -> None:
    topology = _topology("200G", "ConnectX-7-OSFP")
    hosts = host_cables(topology)
    by_cage: dict[tuple[str, str], list[Cable]] = defaultdict(list)
    for cable in hosts:
        by_cage[_cage(cable)].append(cable)
    dac_cages = {cage for cage, cables in by_cage.items() if cables[0].medium.name == "osfp-dac-splitter-4x200g"}
    assert len(dac_cages) == 4, "cages 3 and 4 of each leaf: all four servers on them within 3 m"
    for cage, cables in by_cage.items():
        media = {c.medium.name for c in cables}
        if cage in dac_cages:
            assert media == {"osfp-dac-splitter-4x200g"} and len({c.physical for c in cables}) == 1
            assert sorted(c.leg for c in cables) == [1, 2, 3, 4]
        else:  # a cage the DAC does not reach in full: the two MPO connectors of a twin-port, one 1:2 fiber each
            assert media == {"eth200-mmf-splitter"}
            for legs in by_physical(cables).values():
                assert len(legs) == 2 and len({(c.z.device, switch_connector(c.z.port, 2)) for c in legs}) == 1
    # Cage 2 of each leaf: lanes 1-2 at 3.02 m, 3-4 at 2.93 m. The near pair could take a 1:4 DAC alone, but the
    # plug would fill the cage the far pair needs: both pairs take fibers.
    cage2 = by_cage[("storage-a01", "2")]
    assert {c.medium.name for c in cage2} == {"eth200-mmf-splitter"}
    assert min(c.run_m for c in cage2) <= 3 < max(c.run_m for c in cage2)
    bom = bom_counts(topology)
    assert bom["MCP7Y50-N003"] == len(dac_cages)
    fibers = [c for c in hosts if c.medium.name == "eth200-mmf-splitter"]
    assert sum(n for part, n in bom.items() if part.startswith("MFP7E20-")) == len({c.physical for c in fibers}) == 8
    assert bom["MMA4Z00-NS400"] == len(fibers) == 16, "one host optic per fiber leg, none on DAC legs"
    assert bom["MMA4Z00-NS"] == len({_cage(c) for c in fibers}) == 4, "two 1:2 fibers per twin-port"
    assert not _errors(topology)


def test_qsfp112_hosts_on_sn5600_take_transceivers() -> None:
    """The QSFP112 DAC splitters (MCP7Y10/MCP7Y40) are discontinued: QSFP112 hosts take fibers even in-rack."""
    at_400 = host_cables(_topology("400G", "ConnectX-7-QSFP112-2P"))
    assert {c.medium.name for c in at_400} == {"eth400-mmf"} and all(c.leg == 0 for c in at_400)
    at_200 = _topology("200G", "BlueField-3-B3220")
    assert {c.medium.name for c in host_cables(at_200)} == {"eth200-mmf-splitter-qsfp112"}
    assert Counter(len(legs) for legs in by_physical(host_cables(at_200)).values()) == {2: 16}
    assert bom_counts(at_200)["MMA1Z00-NS400"] == 32
    assert not _errors(at_200)


def test_100g_qsfp112_hosts_take_the_4x100g_dac_within_2m() -> None:
    topology = _topology("100G", "ConnectX-7-QSFP112-2P", slack=0.0)
    hosts = host_cables(topology)
    assert {c.medium.name for c in hosts} == {"osfp-dac-splitter-4x100g"}
    groups = by_physical(hosts)
    assert Counter(len(legs) for legs in groups.values()) == {4: 8}
    assert all({switch_lane(c.z.port) for c in legs} == {1, 2, 3, 4} for legs in groups.values())
    assert sum(n for part, n in bom_counts(topology).items() if part.startswith("MCP7Y70-H")) == 8
    assert not _errors(topology)


def test_dgx_twin_port_cages_never_take_dac_splitters() -> None:
    """A DGX H100 compute port sits in a twin-port OSFP cage: the single-port OSFP ends of MCP7Y00 do not fit."""
    hosts = host_cables(_topology("400G", "ConnectX-7-DGX-OSFP"))
    assert {c.medium.name for c in hosts} == {"eth400-osfp-host-mmf"}
    dgx = {n["model"] for n in shipped("node_profiles").entries["dgx-h100"]["nics"]["compute"]}
    assert dgx == {"ConnectX-7-DGX-OSFP"}


def test_a_splitter_plug_must_fill_its_cage() -> None:
    """A 1:2 DAC on a cage split 4 ways, or a 1:4 DAC on one split 8 ways (7060X6-64PE at 100G), is no plan."""
    half = """
catalog:
  media:
    - {name: half-cage-dac, speeds: [200G], ends: [host-switch], kind: dac, legs: 2, reach_m: 5,
       switch_form_factors: [OSFP], cables: [{length_m: 5, part: HALF}], netbox_type: dac-passive}
"""
    hosts = host_cables(_topology("200G", "ConnectX-7-OSFP", extra=half))
    assert "half-cage-dac" not in {c.medium.name for c in hosts}
    arista = host_cables(_topology("100G", "ConnectX-7-QSFP112-2P", slack=0.0, leaf="7060X6-64PE"))
    assert {c.medium.legs for c in arista} == {1}


def test_cable_plan_flags_a_dac_cage_shared_with_another_cable() -> None:
    topology = _topology("400G", "ConnectX-7-OSFP")
    cables = list(topology.cables)
    dac = next(c for c in cables if c.medium.name == "osfp-dac-splitter-2x400g" and c.leg == 2)
    straight = next(c for c in cables if c.medium.name == "eth400-osfp-host-mmf")
    cables[cables.index(dac)] = replace(dac, medium=straight.medium, part=straight.part, length_m=5.0,
                                        physical=dac.id, leg=0)
    findings = [f for f in cable_plan(replace(topology, cables=tuple(cables))) if f.check == "cable-splitter"]
    assert any(f.subject == dac.physical and "whole cage" in f.message and dac.id in f.message for f in findings)


@pytest.mark.parametrize("name", ["osfp-dac-splitter-2x400g", "osfp-dac-splitter-4x200g", "osfp-dac-splitter-4x100g",
                                  "eth200-mmf-splitter", "eth200-mmf-splitter-qsfp112"])
def test_breakout_rows_come_before_the_straight_rows_of_their_speeds(name: str) -> None:
    rows = shipped("media").document.data["media"]
    index = next(i for i, row in enumerate(rows) if row["name"] == name)
    row = rows[index]
    assert row["legs"] > 1 and row["source"].startswith("https://docs.nvidia.com/")
    for earlier in rows[:index]:
        shared = set(earlier["speeds"]) & set(row["speeds"])
        if shared and earlier.get("legs", 1) == 1 and "host-switch" in earlier["ends"]:
            # An earlier straight row of the same speed must not fit the same cages.
            cages = set(earlier.get("switch_form_factors", ())) & set(row["switch_form_factors"])
            assert earlier.get("switch_form_factors") and not cages, (earlier["name"], sorted(shared))



def test_switch_lanes_agree_with_the_sonic_lane_map() -> None:
    """switches.yaml lanes (the lane-width check) and NVIDIA's SKUs (skus/*.yaml, the SONiC port rows) agree: every
    cage of every SKU has the lanes its port group declares, split evenly among its ports."""
    switches = shipped("switches").entries
    checked = 0
    for model, found in sonic_skus().items():
        groups = switches[model]["port_groups"]
        for sku in found:
            for cage, rows in sku.ports.items():
                group = next(g for i, g in enumerate(groups) if cage <= sum(x["cages"] for x in groups[:i + 1]))
                if "lanes" in group:
                    assert sum(r.lane_count for r in rows) == group["lanes"], (sku.hwsku, cage)
                    assert len({r.lane_count for r in rows}) == 1, (sku.hwsku, cage)
                    checked += 1
    assert checked >= 64 + 32


@pytest.mark.parametrize(("speed", "leaf", "ok"), [
    ("400G", "SN4700", False),      # 4 x 100G-PAM4 NIC, 8 x 50G-PAM4 Spectrum-3 port
    ("200G", "SN4700", True),       # 4 x 50G on both
    ("100G", "SN4700", True),       # 2 x 50G on both
    ("400G", "SN5600", True),       # 4 x 100G on both
    ("400G", "7060DX5-64S", True),  # no lane data for the Arista leaf: not checked
])
def test_lane_widths_of_nic_and_leaf_must_match(speed: str, leaf: str, ok: bool) -> None:
    text = TOR.replace("SPEED", speed).replace("NIC", "ConnectX-7-QSFP112-2P").replace("SLACK", "1.0")
    text = text.replace("LEAF", leaf).replace("uplink_speed: 800G", "uplink_speed: 400G" if leaf != "SN5600" else
                                             "uplink_speed: 800G")
    if ok:
        build_cluster(load_text(text, "spec.yaml"))
        return
    with pytest.raises(SpecError) as caught:
        build_cluster(load_text(text, "spec.yaml"))
    assert "runs 400G as 4 x 100G but SN4700 ports run it as 8 x 50G" in str(caught.value)
