"""One plug per switch cage (two for a twin-port transceiver): straight QSFP56/QSFP28 cables per logical port of a
split SN4700 QSFP-DD cage cannot be plugged (field review F1); the check names those cages, and passes twin-port
OSFP cages with two fibers and DAC splitters that fill their cage."""

from __future__ import annotations

from dataclasses import replace

from fabricgen.core.errors import Severity
from fabricgen.features.cabling.checks import cage_plugs
from fabricgen.pipeline import compile_spec
from tests.conftest import INVENTORIES


def test_split_qsfp_dd_cages_with_a_plug_per_port_are_named() -> None:
    topology = compile_spec(INVENTORIES / "lab-1su.yaml").topology
    found = {f.subject: f for f in cage_plugs(topology)}
    assert set(found) == {"storage", "oob"}
    storage = found["storage"]
    assert storage.severity is Severity.WARNING
    # port_config.ini of Mellanox-SN4700-V64: Ethernet0 lanes 0-3 (etp1a) and Ethernet4 lanes 4-7 (etp1b) share cage 1;
    # dual-homed storage (2 leaves, 2 spines) fills both ports of 68 cages, hosts and uplinks
    assert storage.message.startswith("68 switch cages get more plugs than they take: storage-leaf001 cage 1 (2 "
                                      "cables), storage-leaf001 cage 2 (2 cables), storage-leaf001 cage 17 (2 cables) "
                                      "and 65 more")
    assert "oob-agg01 cage 1 (4 cables)" in found["oob"].message, "C128: 4 x 100G per cage"


def test_twin_port_optics_and_cage_filling_splitters_pass() -> None:
    """h100-4su's SN5600 storage fabric: twin-port OSFP transceivers with two fibers per cage, and compute QM9700
    cages the same: no finding for them."""
    topology = compile_spec(INVENTORIES / "h100-4su.yaml").topology
    assert {f.subject for f in cage_plugs(topology)} == {"inband", "oob"}
    # a third fiber into a twin-port cage is one too many
    storage = [c for c in topology.cables if c.fabric == "storage" and c.tier == "leaf-spine"]
    first, second = storage[0], storage[1]
    assert first.z_optic is not None and first.z_optic.connections == 2
    extra = replace(second, id="storage-999999", physical="storage-999999",
                    z=replace(second.z, port=first.z.port.split("/")[0] + "/2"))
    crowded = replace(topology, cables=(*topology.cables, extra))
    assert any(f.subject == "storage" for f in cage_plugs(crowded))
