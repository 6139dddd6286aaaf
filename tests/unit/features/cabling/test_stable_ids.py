"""Field review U1: a cable's id is the label printed on the installed cable, and a switch's loopback its router
id, so neither may move when nodes are added or removed at the end (or the last rack is dropped). The id is the
switch-side port's (``<Z switch>-<port number>``), loopbacks and management addresses go top tier first."""

from __future__ import annotations

from dataclasses import replace

import pytest

from fabricgen.features.cabling.plan import _cage_pair_ids, switch_cage, switch_lane
from fabricgen.model.topology import Topology
from fabricgen.spec.load import load_text
from fabricgen.stages.build import build_cluster
from fabricgen.stages.compile import compile_topology
from tests.conftest import INVENTORIES


def _lab(nodes: int) -> Topology:
    """lab-1su with ``nodes`` of its 8 nodes (2 a rack: 6 drops rack L04), the SM pair on nodes that remain."""
    text = (INVENTORIES / "lab-1su.yaml").read_text()
    assert text.count("    count: 8\n") == 1 and text.count("{name: hgx08, priority: 14}") == 1
    text = text.replace("    count: 8\n", f"    count: {nodes}\n").replace(
        "{name: hgx08, priority: 14}", f"{{name: hgx{nodes:02d}, priority: 14}}")
    return compile_topology(build_cluster(load_text(text, "lab.yaml")))


@pytest.fixture(scope="module")
def labs() -> tuple[Topology, Topology]:
    return _lab(8), _lab(6)


def _ids(topology: Topology) -> dict[tuple[str, str, str, str], tuple[str, str]]:
    return {(c.a.device, c.a.port, c.z.device, c.z.port): (c.id, c.physical) for c in topology.cables}


def test_surviving_cables_keep_their_ids(labs: tuple[Topology, Topology]) -> None:
    full, shrunk = (_ids(t) for t in labs)
    surviving = full.keys() & shrunk.keys()
    assert len(surviving) == len(shrunk) > 100 and len(full) - len(surviving) == 22  # hgx07, hgx08 and oob-l04
    assert [ends for ends in surviving if full[ends] != shrunk[ends]] == []
    assert len({i for i, _ in full.values()}) == len(full), "ids are unique"


def test_surviving_switches_keep_their_loopbacks_and_management(labs: tuple[Topology, Topology]) -> None:
    full, shrunk = labs
    for fabric in ("storage", "oob"):
        before, after = full.addresses[fabric], shrunk.addresses[fabric]
        assert before is not None and after is not None
        kept = before.loopbacks.keys() & after.loopbacks.keys()
        assert kept and {s: before.loopbacks[s] for s in kept} == {s: after.loopbacks[s] for s in kept}
        assert {s: before.management[s] for s in kept if s in after.management} == {
            s: after.management[s] for s in kept if s in before.management}
    assert "oob-l04" in full.addresses["oob"].loopbacks.keys() - shrunk.addresses["oob"].loopbacks.keys()  # type: ignore[union-attr]


def test_the_id_is_the_switch_side_port(labs: tuple[Topology, Topology]) -> None:
    """A cable's id is its switch-side port's; a cage-pair cable's, its one plug in the switch-side cage, the cage's
    (its links ``<id>/L<port in the cage>``)."""
    pairs = 0
    for cable in labs[0].cables:
        if cable.leg and cable.medium.legs == 1:
            pairs += 1
            assert cable.physical == f"{cable.z.device}-{int(switch_cage(cable.z.port)):03d}"
            assert cable.id == cable.name == f"{cable.physical}/L{switch_lane(cable.z.port)}"
        else:
            assert cable.id == f"{cable.z.device}-{cable.z.port_number:03d}"
    assert pairs == 40


@pytest.mark.parametrize("spec", ["lab-1su", "h100-4su"])
def test_cage_pair_cables_are_numbered_without_gaps(spec: str) -> None:
    """Re-review of D6: a spine whose cages are all cage pairs numbers its cables as its cages, -001, -002 ... (they
    were -001, -003 ...: each took its first link's port number, the second link's number on no label)."""
    topology = compile_topology(build_cluster(load_text((INVENTORIES / f"{spec}.yaml").read_text(), "s.yaml")))
    by_switch: dict[str, set[int]] = {}
    for cable in topology.cables:
        if cable.leg and cable.medium.legs == 1:
            device, _, number = cable.physical.rpartition("-")
            assert device == cable.z.device
            by_switch.setdefault(device, set()).add(int(number))
    assert by_switch and all(numbers == set(range(1, len(numbers) + 1)) for numbers in by_switch.values())
    assert len({c.id for c in topology.cables}) == len(topology.cables), "ids are unique"


def test_a_cage_pair_keeps_its_port_id_where_the_cage_id_is_taken(labs: tuple[Topology, Topology]) -> None:
    """Where a cage's id is already another cable's port id on the switch (an earlier cage split into cables of
    their own: here a made-up cable on storage-spine01's port number 2), that cage pair keeps its first link's port
    id; a later cage whose id that is then does the same; no id is used twice."""
    as_ports = [replace(c, id=f"{c.z.device}-{c.z.port_number:03d}",
                        physical=f"{c.z.device}-{c.z.port_number - c.leg + 1:03d}") if c.leg and c.medium.legs == 1
                else c for c in labs[0].cables]
    ordinary = next(c for c in as_ports if not c.leg and c.tier != "node-leaf")
    squatter = replace(ordinary, id="storage-spine01-002", physical="storage-spine01-002",
                       z=replace(ordinary.z, device="storage-spine01", port="99", port_number=2))
    named = _cage_pair_ids([*as_ports, squatter])
    spine01 = {c.z.port: c for c in named if c.z.device == "storage-spine01" and c.leg}
    # cage 2's id is the squatter's: cage 2 keeps its port id (2/1 is port 3), which cage 3's id then is too
    assert [spine01[f"{cage}/1"].physical.removeprefix("storage-spine01-") for cage in (1, 2, 3, 4)] == [
        "001", "003", "005", "004"]
    assert spine01["2/2"].id == "storage-spine01-003/L2"
    assert len({c.id for c in named}) == len(named), "ids are unique"
