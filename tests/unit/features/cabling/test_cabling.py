"""The cable plan: geometry, media choice, one row per physical cable, BOM, end labels (NetBox's files are tested in
tests/unit/features/netbox/, switch placement in tests/unit/stages/test_placement.py)."""

from __future__ import annotations

import csv
import io
from collections import Counter
from pathlib import Path

import pytest

from fabricgen.core.errors import Severity, SpecError
from fabricgen.features.cabling.plan import RACK_UNIT_M, bill_of_materials
from fabricgen.features.cabling.sheets import CABLE_COLUMNS
from fabricgen.model.topology import Topology
from fabricgen.pipeline import compile_spec, render_spec
from fabricgen.spec.load import load_text
from fabricgen.stages.build import build_cluster
from fabricgen.stages.check import run_checks
from fabricgen.stages.compile import compile_topology
from tests.conftest import INVENTORIES
from tests.helpers.cabling import GEOMETRY_SPEC as LAB


def _topology(text: str) -> Topology:
    return compile_topology(build_cluster(load_text(text, "spec.yaml")))


def _csv_rows(content: bytes) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(content.decode())))


def test_every_link_is_one_cable_with_lower_tier_first() -> None:
    topology = _topology(LAB)
    links = sum(len(f.links) for f in topology.fabrics)
    assert len(topology.cables) == links
    ids = [c.id for c in topology.cables]
    assert len(set(ids)) == len(ids)
    for cable in topology.cables:
        if cable.tier == "node-leaf":
            assert cable.a.device.startswith("hgx")
            if cable.fabric == "compute":  # rail ends carry the GPU, RDMA device and netdev of their rail
                assert cable.a.rdma_dev and cable.a.netdev and cable.a.gpu == cable.rail
    assert not [f for f in run_checks(topology) if f.severity is Severity.ERROR]


def test_run_length_geometry() -> None:
    topology = _topology(LAB)
    f = topology.cluster.facility
    top = f.rack_units * RACK_UNIT_M + f.tray_height_m
    oob = next(c for c in topology.cables if c.fabric == "oob" and c.tier == "node-leaf" and c.a.device == "hgx01")
    # hgx01 (8U at U2) and its top-of-rack leaf (1U at U48) share rack A01: a straight vertical run.
    assert oob.a.rack == oob.z.rack == "A01" and oob.z.u == 48
    expected = abs((2 - 1 + 4) * RACK_UNIT_M - (48 - 1 + 0.5) * RACK_UNIT_M) + f.slack_m
    assert oob.run_m == pytest.approx(expected, abs=0.01)
    compute = next(c for c in topology.cables if c.fabric == "compute" and c.a.device == "hgx03")
    # hgx03 sits in A02 (index 2, row 0); leaves fill the network rack N01 (index 1, row 1) from U1.
    node_mid = (compute.a.u - 1 + 4) * RACK_UNIT_M
    leaf_mid = (compute.z.u - 1 + 0.5) * RACK_UNIT_M
    expected = (top - node_mid) + (top - leaf_mid) + 1 * f.rack_width_m + 1 * f.row_pitch_m + f.slack_m
    assert compute.run_m == pytest.approx(expected, abs=0.01)
    assert compute.length_m >= compute.run_m
    assert compute.length_m in [length for length, _ in compute.medium.cables]
    shorter = [length for length, _ in compute.medium.cables if length < compute.length_m]
    assert all(length < compute.run_m for length in shorter), "the shortest standard length that fits is chosen"


def test_out_of_reach_run_names_the_cable() -> None:
    far = LAB.replace("row_pitch_m: 2.4", "row_pitch_m: 900")
    with pytest.raises(SpecError) as caught:
        _topology(far)
    text = str(caught.value)
    assert "compute-su01-leaf0-001 hgx01:" in text and "no medium in the catalog serves it" in text
    assert "more not listed" in text


def test_media_follow_catalog_preference() -> None:
    """A short in-rack run takes the first (cheapest) medium that serves it; long runs take optics."""
    topology = _topology(LAB)
    by_tier = {(c.fabric, c.tier): c for c in topology.cables}
    oob_host = by_tier[("oob", "node-leaf")]
    assert oob_host.medium.kind == "copper-patch"
    for cable in topology.cables:
        candidates = [m for m in topology.cluster.media if cable.speed in m.speeds and
                      ("host-switch" if cable.tier == "node-leaf" else "switch-switch") in m.ends]
        first_fit = next(m for m in candidates if m.standard_length(cable.run_m) is not None)
        assert cable.medium == first_fit


def test_h100_reference_cables_per_tier() -> None:
    """NVIDIA H100 SuperPOD 4 SU: 1020 node+UFM cables and 1024 leaf-spine cables on the compute fabric."""
    topology = compile_spec(INVENTORIES / "h100-4su.yaml").topology
    per_tier = Counter(c.tier for c in topology.cables if c.fabric == "compute")
    assert per_tier == {"node-leaf": 1020, "leaf-spine": 1024}


def test_bom_totals_equal_rows() -> None:
    topology = compile_spec(INVENTORIES / "h100-4su.yaml").topology
    artifacts = {a.path: a.content for a in render_spec(compile_spec(INVENTORIES / "h100-4su.yaml"))}
    bom = _csv_rows(artifacts["cabling/bom.csv"])
    cables = _csv_rows(artifacts["cabling/cables.csv"])
    physical = {r["physical_cable"]: r for r in cables}  # a breakout or cage-pair cable is one row per link
    assert sum(int(r["count"]) for r in bom if r["category"] == "cable") == len(physical) < len(cables)
    assert sum(int(r["count"]) for r in bom if r["category"] == "switch") == sum(
        len(f.switches) for f in topology.fabrics)
    by_part = Counter(r["cable_part"] for r in physical.values())
    assert {r["part"]: int(r["count"]) for r in bom if r["category"] == "cable"} == dict(by_part)
    # Transceivers: a twin-port switch optic serves two cables of one cage, so never more optics than cables.
    optics = Counter()
    for row in cables:
        for side in ("a_optic", "z_optic"):
            if row[side]:
                optics[row[side]] += 1
    for line in (r for r in bom if r["category"] == "transceiver"):
        assert 0 < int(line["count"]) <= optics[line["part"]]


def test_twin_port_optics_are_shared_per_cage() -> None:
    topology = compile_spec(INVENTORIES / "h100-4su.yaml").topology
    leaf_spine = [c for c in topology.cables if c.fabric == "compute" and c.tier == "leaf-spine"]
    optic = leaf_spine[0].z_optic
    assert optic is not None and optic.connections == 2
    bom = {b.part: b.count for b in bill_of_materials([], leaf_spine)}
    # 1024 cables, two switch ends each, two cables per twin-port cage optic -> 1024 optics.
    assert bom[optic.part] == 1024


def test_csv_columns_and_end_labels() -> None:
    artifacts = {a.path: a.content for a in render_spec(compile_spec(INVENTORIES / "lab-1su.yaml"))}
    rows = _csv_rows(artifacts["cabling/cables.csv"])
    assert tuple(rows[0]) == CABLE_COLUMNS
    by_cable: dict[str, list[dict[str, str]]] = {}
    for row in rows:
        by_cable.setdefault(row["physical_cable"], []).append(row)
    shapes = set()
    for physical, legs in by_cable.items():  # one label per plug: the cable, the end, where the other end goes
        a_devices = {r["a_device"] for r in legs}
        z_ports = "+".join(r["z_port"] for r in legs)
        if len(legs) == 1:  # an ordinary cable: a plug at each end
            (r,) = legs
            shape = "cable"
            assert r["a_label"] == f"{physical}/A to {r['z_rack']} {r['z_device']} {r['z_port']}"
            assert r["z_label"] == f"{physical}/Z to {r['a_rack']} {r['a_device']} {r['a_port']}"
        elif len(a_devices) == 1:  # a cage-pair cable: one plug at each end, both cages' ports on it
            shape = "cage pair"
            for r in legs:
                assert r["a_label"] == f"{physical}/A to {r['z_rack']} {r['z_device']} {z_ports}"
                a_ports = "+".join(x["a_port"] for x in legs)
                assert r["z_label"] == f"{physical}/Z to {r['a_rack']} {r['a_device']} {a_ports}"
        else:  # a splitter: one trunk plug (Z) naming its legs' racks and devices, a plug per leg (A)
            shape = "splitter"
            racks, devices = ",".join(dict.fromkeys(r["a_rack"] for r in legs)), ",".join(r["a_device"] for r in legs)
            for r in legs:
                assert r["a_label"] == f"{physical}/L{r['leg']}/A to {r['z_rack']} {r['z_device']} {r['z_port']}"
                assert r["z_label"] == f"{physical}/Z to {racks} {devices}"
        shapes.add(shape)
    assert shapes == {"cable", "cage pair", "splitter"}


def test_cable_render_is_deterministic(tmp_path: Path) -> None:
    spec = INVENTORIES / "lab-1su.yaml"
    first = {a.path: a.content for a in render_spec(compile_spec(spec))}
    second = {a.path: a.content for a in render_spec(compile_spec(spec))}
    assert first == second
