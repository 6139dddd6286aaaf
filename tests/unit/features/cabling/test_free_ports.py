"""cabling/free-ports.csv: every switch connector no cable plugs into, with the id a cable there takes. A site team
grows into these (a node added, a replacement run): the list and the cable ids must agree with what the plan cables
once a node is there, and no free connector may be one a cable already takes."""

from __future__ import annotations

import csv
import io

import pytest

from fabricgen.features.cabling import sheets
from fabricgen.features.cabling.plan import free_ports
from fabricgen.model.topology import Topology
from fabricgen.pipeline import compile_spec
from tests.conftest import INVENTORIES
from tests.helpers.cabling import lab_with


@pytest.fixture(scope="module")
def h100() -> Topology:
    return compile_spec(INVENTORIES / "h100-4su.yaml").topology



def test_the_ufm_slots_unused_rails_are_the_compute_fabrics_only_free_ports(h100: Topology) -> None:
    """h100-4su: 127 DGX and the UFM pair (rails 0-3 of SU 4's last slot) fill every compute connector but that
    slot's rails 4-7, the second connector of cage 16 of SU 4's leaves 4-7, which a 128th DGX would take."""
    free = [(f.device, f.number, f.cage, f.cage_connector, f.port, f.optic, f.cable_id) for f in free_ports(h100)
            if f.fabric == "compute"]
    assert free == [(f"compute-su04-leaf{r}", 32, 16, 2, "16/2", "installed", f"compute-su04-leaf{r}-032")
                    for r in range(4, 8)], "the cage's optic is in: its first port is cabled"


def test_a_free_connector_is_one_no_cable_takes_and_every_one_is_listed(h100: Topology) -> None:
    """Free and cabled connectors partition each switch's: the free ids are no cable's, and with the cabled ones
    every switch's connectors 1..n are there once (a cable's id is its Z connector's; an A-end switch, a leaf's
    uplink, counts as cabled from its own free list)."""
    free = [f for f in free_ports(h100) if f.kind == "connector"]
    cable_ids = {c.physical for c in h100.cables}
    assert not {f.cable_id for f in free} & cable_ids
    switches = {sw.name: sw for ft in h100.fabrics for sw in ft.switches}
    by_switch: dict[str, list[int]] = {}
    for f in free:
        by_switch.setdefault(f.device, []).append(f.number)
    assert set(by_switch) <= set(switches)
    for name, numbers in by_switch.items():
        assert numbers == sorted(set(numbers)), name
    spines = [sw.name for sw in h100.fabric("compute").switches if sw.name.startswith("compute-spine")]
    assert len(spines) == 16 and not set(spines) & set(by_switch), "the spines' 64 cages x 2 connectors are cabled"


def test_a_node_removed_frees_its_connectors_under_the_ids_its_cables_had() -> None:
    """lab-1su without hgx07-08: their connectors on the switches that stay are listed free under the very ids
    their cables carried, so a node put back is cabled with the labels already on the cables (rack L04's OOB
    switch, which held only their BMCs, goes with them)."""
    full, fewer = lab_with(8), lab_with(6)
    remaining = {sw.name for ft in fewer.fabrics for sw in ft.switches}
    gone = {c.physical for c in full.cables if c.a.device in ("hgx07", "hgx08") and c.z.device in remaining}
    free = {f.cable_id for f in free_ports(fewer)}
    assert gone and gone <= free
    assert not {f.cable_id for f in free_ports(full)} & gone


def test_free_ports_csv_lists_them_in_faceplate_order(h100: Topology) -> None:
    """The CSV the site team reads: one row per free connector, switch by switch, the connector numbers rising."""
    [artifact] = [a for a in sheets.render(h100) if a.path == "cabling/free-ports.csv"]
    rows = list(csv.DictReader(io.StringIO(artifact.content.decode())))
    assert tuple(rows[0]) == sheets.FREE_COLUMNS
    assert len(rows) == len(free_ports(h100))
    ufm_slot = [r for r in rows if r["device"] == "compute-su04-leaf4"]
    assert ufm_slot == [{"fabric": "compute", "device": "compute-su04-leaf4", "model": "QM9700", "rack": "N06",
                         "u": "5", "connector": "32", "cage": "16", "cage_connector": "2", "port": "16/2",
                         "form_factor": "OSFP", "free": "connector", "optic": "installed",
                         "cable_id": "compute-su04-leaf4-032"}]


def test_a_splitters_legs_no_device_takes_are_free_under_their_leg_ids(h100: Topology) -> None:
    """Field review (growth): oob-agg01's 1:4 breakouts to the OOB leaves of row A's last racks plug two legs of
    four; the other two are free ports a rack added takes next, listed under the splitter's leg ids and the
    ports the legs land on (3/3, 3/4 beside the cabled 3/1, 3/2), their optic already in the cage."""
    legs = [(f.port, f.cable_id, f.optic) for f in free_ports(h100) if f.device == "oob-agg01" and f.cage == 3]
    cabled = sorted(c.z.port for c in h100.cables if c.physical == "oob-agg01-003")
    assert cabled == ["3/1", "3/2"]
    assert legs == [("3/3", "oob-agg01-003/L3", "installed"), ("3/4", "oob-agg01-003/L4", "installed")]
    assert all(f.kind == "breakout leg" for f in free_ports(h100) if f.cable_id.count("/L"))
