"""1:2 splitter cabling: NDR200 fibers on QM9700 twin-port cages and HDR100 AOCs on QM8700 split ports.

A splitter is one physical cable whose switch-side connector serves two consecutive logical ports of a cage; the
plan keeps one cable per link (the legs), sharing ``physical``; the BOM counts physical cables and connectors.
"""

from __future__ import annotations

import csv
import io
import math
from collections import Counter
from dataclasses import replace

import pytest

from fabricgen.core.errors import Severity, SpecError
from fabricgen.features.cabling import sheets as cable_sheets
from fabricgen.features.cabling.checks import cable_plan
from fabricgen.features.cabling.plan import switch_cage, switch_connector, switch_lane
from fabricgen.features.cabling.sheets import CABLE_COLUMNS
from fabricgen.features.netbox import render as netbox_set
from fabricgen.model.topology import Topology
from fabricgen.pipeline import compile_spec
from fabricgen.spec.load import load_text
from fabricgen.stages.build import build_cluster
from fabricgen.stages.check import run_checks
from fabricgen.stages.compile import compile_topology
from tests.conftest import INVENTORIES
from tests.helpers.cabling import bom_counts, by_physical, host_cables

NDR200 = """
apiVersion: fabricgen/v1
kind: Cluster
metadata: {name: split, site: s1}
facility:
  rows:
    - {name: A, racks: 4}
    - {name: N, racks: 1, kind: network}
nodes:
  - {name: "hgx{n:02d}", count: 7, profile: hgx-8gpu-generic, placement: {rows: [A], per_rack: 2, start_u: 2}}
fabrics:
  compute:
    type: infiniband
    speed: NDR200
    uplink_speed: NDR
    switch: QM9700
    topology: {kind: rail-optimized, scalable_unit: 8}
"""

HDR100 = """
apiVersion: fabricgen/v1
kind: Cluster
metadata: {name: hdr, site: s1}
facility:
  rows:
    - {name: A, racks: 2}
    - {name: N, racks: 1, kind: network}
node_profiles:
  cpu-1u:
    height_u: 1
    nics:
      compute:
        - {dev: mlx5_0, netdev: ib0, port: P1, model: ConnectX-7-QSFP112-2P}
nodes:
  - {name: "cn{n:02d}", count: 5, profile: cpu-1u, placement: {rows: [A], per_rack: 3, start_u: 2}}
fabrics:
  compute:
    type: infiniband
    speed: HDR100
    uplink_speed: HDR
    switch: QM8700
    topology: {kind: fat-tree}
"""


def _topology(text: str) -> Topology:
    return compile_topology(build_cluster(load_text(text, "spec.yaml")))


def _csv(content: bytes) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(content.decode())))


def test_two_host_links_share_one_physical_splitter() -> None:
    topology = _topology(NDR200)
    hosts = host_cables(topology)
    assert {c.medium.name for c in hosts} == {"ndr200-mmf-splitter"}
    groups = by_physical(hosts)
    # 7 nodes on each of 8 rail leaves: lanes 1/1+1/2, 1/3+1/4, 2/1+2/2 full, 2/3 alone (its spare leg unused).
    assert Counter(len(legs) for legs in groups.values()) == {2: 24, 1: 8}
    for physical, legs in groups.items():
        assert [c.id for c in legs] == [f"{physical}/L{c.leg}" for c in legs], "a leg is named after its splitter"
        assert len({(c.z.device, switch_connector(c.z.port, 2)) for c in legs}) == 1, "one switch connector"
        assert [c.leg for c in legs] == [(switch_lane(c.z.port) - 1) % 2 + 1 for c in legs]
        assert len({c.a.device for c in legs}) == len(legs), "every leg to its own host"
        assert all(c.label.startswith(f"{physical}/L{c.leg} {c.a.device}:") for c in legs)
    pair = next(legs for legs in groups.values() if len(legs) == 2)
    assert {switch_lane(c.z.port) for c in pair} in ({1, 2}, {3, 4})
    # issue 19: a leaf numbers its splitters as its connectors, -001 (1/1+1/2), -002 (1/3+1/4) ..., not -001, -003
    leaf0 = {physical: legs[0].z.port for physical, legs in groups.items() if legs[0].z.device == "compute-su01-leaf0"}
    assert leaf0 == {"compute-su01-leaf0-001": "1/1", "compute-su01-leaf0-002": "1/3", "compute-su01-leaf0-003": "2/1",
                     "compute-su01-leaf0-004": "2/3"}
    assert not [f for f in run_checks(topology) if f.severity is Severity.ERROR]


def test_legs_of_a_splitter_are_one_part_at_the_longest_run() -> None:
    topology = _topology(NDR200)
    for legs in by_physical(host_cables(topology)).values():
        assert len({(c.length_m, c.part, c.medium) for c in legs}) == 1
        longest = max(c.run_m for c in legs)
        assert (legs[0].length_m, legs[0].part) == legs[0].medium.standard_length(longest)


def test_bom_counts_physical_cables_and_connectors() -> None:
    topology = _topology(NDR200)
    hosts = host_cables(topology)
    bom = bom_counts(topology)
    connectors = {(c.z.device, switch_connector(c.z.port, 2)) for c in hosts}
    splitters = sum(n for part, n in bom.items() if part.startswith("MFP7E20-"))
    assert splitters == len(connectors) == len({c.physical for c in hosts}) == 32
    per_leaf = Counter(c.z.device for c in hosts)
    assert splitters == sum(math.ceil(n / 2) for n in per_leaf.values())
    # One host transceiver per leg; switch transceivers: ceil(connectors / 2) per cage (a twin-port OSFP takes two
    # splitters); the NDR uplinks are straight fibers, two per cage at both ends.
    assert bom["MMA4Z00-NS400"] == len(hosts) == 56
    per_cage = Counter((device, cage) for device, (cage, _) in connectors)
    uplink_ends = Counter((device, switch_cage(port)) for c in topology.cables if c.tier != "node-leaf"
                          for device, port in ((c.a.device, c.a.port), (c.z.device, c.z.port)))
    expected = sum(math.ceil(n / 2) for n in per_cage.values()) + sum(math.ceil(n / 2) for n in uplink_ends.values())
    assert bom["MMA4Z00-NS"] == expected
    assert set(per_cage.values()) == {2}, "7 hosts per leaf: two cages of two connectors each"


def test_cables_csv_has_physical_cable_and_leg() -> None:
    topology = _topology(NDR200)
    artifacts = {a.path: a.content for a in cable_sheets.render(topology)}
    assert CABLE_COLUMNS[:6] == ("cable_id", "physical_cable", "leg", "leg_fibers", "polarity", "label")
    rows = _csv(artifacts["cabling/cables.csv"])
    assert tuple(rows[0]) == CABLE_COLUMNS and len(rows) == len(topology.cables)
    host_rows = [r for r in rows if r["tier"] == "node-leaf"]
    assert {r["leg"] for r in host_rows} == {"1", "2"}
    assert {(r["leg_fibers"], r["polarity"]) for r in rows} == {("", "")}, "only a breakout's legs name fibers"
    assert all(r["label"].startswith(f"{r['physical_cable']}/L{r['leg']} ") for r in host_rows)
    uplinks = [r for r in rows if r["tier"] != "node-leaf"]
    assert all(r["physical_cable"] == r["cable_id"] and r["leg"] == "" for r in uplinks)
    bom = _csv(artifacts["cabling/bom.csv"])
    assert sum(int(b["count"]) for b in bom if b["category"] == "cable") == len({r["physical_cable"] for r in rows})
    assert {b["description"] for b in bom if b["part"].startswith("MFP7E20-")} <= {
        f"optics+fiber 1:2 splitter {n} m" for n in (3, 5, 10, 15, 20, 30, 50)}
    netbox = [row for a in netbox_set.render(topology) if a.path.startswith("netbox/09-cables")  # one or its parts
              for row in _csv(a.content)]
    # one NetBox cable per physical cable (a splitter's two legs are one), labelled as its plugs' labels begin, its
    # profile the part's (review D1): a splitter with one leg in use is still one 2-connector cable, saying so
    groups: dict[str, list[dict[str, str]]] = {}
    for r in rows:
        groups.setdefault(r["physical_cable"], []).append(r)
    assert sorted(n["label"] for n in netbox) == sorted(groups)
    held = {n["label"]: n for n in netbox}
    for physical, legs in groups.items():
        assert held[physical]["profile"] == ("trunk-2c1p" if legs[0]["leg"] else ""), physical
        assert (", 1 of 2 legs used (" in held[physical]["description"]) == (len(legs) == 1 and bool(legs[0]["leg"]))
    assert any(len(legs) == 2 for legs in groups.values()) and len(netbox) < len(rows)
    assert any(len(legs) == 1 and legs[0]["leg"] for legs in groups.values()), "no splitter with a leg unused"


def test_a_connector_takes_the_first_medium_serving_every_leg() -> None:
    """A spec splitter that reaches the shorter leg of a pair but not the longer: the pair takes the next row."""
    hosts = host_cables(_topology(NDR200))
    pair = next(legs for legs in by_physical(hosts).values() if len(legs) == 2 and legs[0].run_m != legs[1].run_m)
    short, long_ = sorted(c.run_m for c in pair)
    reach = round((short + long_) / 2, 3)
    override = f"""
catalog:
  media:
    - name: short-splitter
      speeds: [NDR200]
      ends: [host-switch]
      kind: optics+fiber
      legs: 2
      reach_m: {reach}
      cables: [{{length_m: {reach}, part: SHORT-SPLITTER}}]
      host_optic: {{part: HOST-OPTIC, connections: 1}}
      switch_optic: {{part: TWIN-OPTIC, connections: 2}}
      netbox_type: mmf-om4
"""
    topology = _topology(NDR200 + override)
    by_id = {c.id: c for c in topology.cables}
    legs = [by_id[c.id] for c in pair]
    assert {c.medium.name for c in legs} == {"ndr200-mmf-splitter"}, "the longer leg is out of the spec row's reach"
    assert len({c.physical for c in legs}) == 1
    assert "short-splitter" in {c.medium.name for c in host_cables(topology)}, "pairs within reach still take it"
    assert not [f for f in cable_plan(topology) if f.severity is Severity.ERROR]


def test_cable_plan_check_catches_inconsistent_legs() -> None:
    topology = _topology(NDR200)
    cables = list(topology.cables)
    legs = next(legs for legs in by_physical(host_cables(topology)).values() if len(legs) == 2)
    second = cables.index(legs[1])
    longer = legs[1].medium.cables[-1]
    cables[second] = replace(legs[1], length_m=longer[0], part=longer[1])
    findings = [f for f in cable_plan(replace(topology, cables=tuple(cables))) if f.check == "cable-splitter"]
    assert findings and findings[0].subject == legs[0].physical and "first leg" in findings[0].message
    # A leg moved onto another connector, and a third leg on a 1:2 splitter.
    stray = next(c for c in host_cables(topology) if c.physical != legs[0].physical and c.z.device == legs[0].z.device)
    cables = list(topology.cables)
    cables[cables.index(stray)] = replace(stray, physical=legs[0].physical, leg=2)
    messages = [f.message for f in cable_plan(replace(topology, cables=tuple(cables))) if f.check == "cable-splitter"]
    assert any("3 legs" in m for m in messages) and any("another switch connector" in m for m in messages)
    assert any("numbered" in m for m in messages)


def test_hdr100_split_ports_take_aoc_splitters() -> None:
    topology = _topology(HDR100)
    hosts = host_cables(topology)
    assert {c.medium.name for c in hosts} == {"hdr100-aoc-splitter"}
    groups = by_physical(hosts)
    assert sorted(len(v) for v in groups.values()) == [1, 2, 2]  # 5 hosts: QM8700 cages 1 and 2 full, 3 half
    assert all(len({switch_cage(c.z.port) for c in legs}) == 1 for legs in groups.values())
    bom = bom_counts(topology)
    assert sum(n for part, n in bom.items() if part.startswith("MFS1S50-H")) == 3
    assert not [f for f in run_checks(topology) if f.severity is Severity.ERROR]


def test_ndr_links_are_ordinary_cables() -> None:
    """The 4-SU H100 example at NDR and 400G (compute, storage): no splitters, every cable its own physical cable."""
    topology = compile_spec(INVENTORIES / "h100-4su.yaml").topology
    cables = [c for c in topology.cables if c.fabric in ("compute", "storage")]
    assert all(c.leg == 0 and c.physical == c.id and c.medium.legs == 1 for c in cables)
    assert all(c.label.startswith(f"{c.id} ") for c in cables)
    bom = bom_counts(topology)
    cable_parts = {c.part for c in cables}
    assert sum(bom[p] for p in cable_parts) == len(cables)


@pytest.mark.parametrize("legs", [0, 9])
def test_legs_out_of_range_is_a_spec_error(legs: int) -> None:
    override = f"""
catalog:
  media:
    - {{name: bad, speeds: [NDR200], ends: [host-switch], kind: aoc, legs: {legs}, reach_m: 5,
       cables: [{{length_m: 5, part: X}}], netbox_type: aoc}}
"""
    with pytest.raises(SpecError) as caught:
        _topology(NDR200 + override)
    assert "legs" in str(caught.value)


def test_splitters_serve_switch_to_switch_links_only_as_named_breakouts() -> None:
    """A switch-to-switch splitter (a breakout) must name the lower-tier cages its legs plug into
    (host_form_factors); one that does not never serves a switch link."""
    override = """
catalog:
  media:
    - {name: any-splitter, speeds: [NDR], ends: [host-switch, switch-switch], kind: aoc, legs: 2, reach_m: 100,
       cables: [{length_m: 100, part: SPLIT}], netbox_type: aoc}
"""
    topology = _topology(NDR200 + override)
    assert all(c.medium.legs == 1 for c in topology.cables if c.tier != "node-leaf")
