"""A DGX H100/H200 compute cage is a twin-port OSFP holding two ConnectX-7 ports (OSFP<n>P1 and OSFP<n>P2, the
profile's `cage`): one twin-port flat-top transceiver serves both, so the bill of materials orders one per cage, not
one single-port module per link (field review U4: 1,020 single-port modules for h100-4su, none of which lights
the cage's second port); two ports of one cage whose runs would take different transceivers are refused."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest

from fabricgen.features.cabling.checks import host_cage_optics
from fabricgen.features.cabling.plan import bill_of_materials
from fabricgen.model.cabling import Cable
from fabricgen.model.topology import Topology
from fabricgen.pipeline import compile_spec
from tests.conftest import INVENTORIES


@pytest.fixture(scope="module")
def h100() -> Topology:
    return compile_spec(INVENTORIES / "h100-4su.yaml").topology


def _dgx_compute(topology: Topology) -> list[Cable]:
    return [c for c in topology.cables if c.fabric == "compute" and c.tier == "node-leaf"
            and c.a.form_factor == "twin-port-OSFP"]


def test_one_twin_port_transceiver_per_dgx_cage(h100: Topology) -> None:
    cables = _dgx_compute(h100)
    dgx = {c.a.device for c in cables}
    assert len(dgx) == 127 and len(cables) == 127 * 8
    per_cage = Counter((c.a.device, c.a.cage) for c in cables)
    assert len(per_cage) == 127 * 4 and set(per_cage.values()) == {2}
    assert all(c.a.cage == c.a.port[:-2] for c in cables), "OSFP<n>P1 and OSFP<n>P2 sit in cage OSFP<n>"
    assert {c.a_optic.part for c in cables if c.a_optic} == {"MMA4Z00-NS-FLT"}
    bom = {line.part: line.count for line in bill_of_materials([], cables)}
    assert bom["MMA4Z00-NS-FLT"] == 127 * 4
    assert "MMA4Z00-NS400" not in bom, "no single-port module at a DGX compute port"
    assert list(host_cage_optics(h100)) == []


def test_other_hosts_keep_one_transceiver_per_port(h100: Topology) -> None:
    """The UFM appliances' ConnectX-7 OSFP cards are single-port cages: one single-port module each."""
    others = [c for c in h100.cables if c.tier == "node-leaf" and c.a.form_factor == "OSFP"
              and c.a_optic is not None]
    assert others and {c.a_optic.part for c in others if c.a_optic} == {"MMA4Z00-NS400"}
    assert all(c.a.cage == c.a.port for c in others)
    assert bill_of_materials([], others)[0].count == len(others)


def test_a_cage_whose_ports_need_two_transceivers_is_refused(h100: Topology) -> None:
    """A run past multimode's 50 m on one port of a cage takes a single-mode module there; the cage holds one."""
    cables = list(h100.cables)
    first = next(i for i, c in enumerate(cables) if c in _dgx_compute(h100))
    single_mode = next(m for m in h100.cluster.media if m.name == "ndr-smf")
    cables[first] = replace(cables[first], medium=single_mode, run_m=60.0, length_m=60.0)
    [finding] = host_cage_optics(replace(h100, cables=tuple(cables)))
    device, cage = cables[first].a.device, cables[first].a.cage
    assert finding.check == "host-cage-optics" and finding.position is not None
    assert f"{device} cage {cage}" in finding.message
    assert "MMS4X00-NM-FLT" in finding.message and "MMA4Z00-NS-FLT" in finding.message
