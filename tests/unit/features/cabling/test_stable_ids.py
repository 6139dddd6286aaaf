"""Field review U1: a cable's id is the label printed on the installed cable, and a switch's loopback its router
id, so neither may move when nodes are added or removed at the end (or the last rack is dropped). The id is the
switch-side port's (``<Z switch>-<port number>``), loopbacks and management addresses go top tier first."""

from __future__ import annotations

import pytest

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
    for cable in labs[0].cables:
        assert cable.id == f"{cable.z.device}-{cable.z.port_number:03d}"
