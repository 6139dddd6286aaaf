"""Field review U1: a cable's id is the label printed on the installed cable, and a switch's loopback its router
id, so neither may move when nodes are added or removed (or the last rack is dropped). A cable is numbered by
the connector of its switch side (``<Z switch>-<n>``, the links of a splitter or cage pair ``<id>/L<leg>``),
counted across the switch's cages in faceplate order (two per twin-port OSFP cage, else one): a full switch reads
1, 2, 3 ... without a gap (issue 19: the crew reads a gap as a missing cable), and a cable keeps its number while it
stays plugged where it is, whatever comes or goes around it, so no id ever names another cable (field review,
2026-12-03). Loopbacks and management addresses go top tier first."""

from __future__ import annotations

from dataclasses import replace

import pytest

from fabricgen.features.cabling.handoff import port_order
from fabricgen.features.cabling.plan import _Place, _places, _switch_ids, physical_cables, switch_cage
from fabricgen.model.cabling import Cable
from fabricgen.model.hardware import Medium
from fabricgen.model.topology import Topology
from fabricgen.spec.load import load_text
from fabricgen.stages.build import build_cluster
from fabricgen.stages.compile import compile_topology
from tests.conftest import INVENTORIES
from tests.helpers.cabling import lab_with


@pytest.fixture(scope="module")
def labs() -> tuple[Topology, Topology]:
    return lab_with(8), lab_with(6)


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


def _numbers(cables: tuple[Cable, ...] | list[Cable]) -> dict[str, list[tuple[int, str]]]:
    """Each switch's physical cables (the ones it is the switch side of) as (number, first port), in port order."""
    first: dict[str, dict[str, str]] = {}
    for c in cables:
        ports = first.setdefault(c.z.device, {})
        if c.physical not in ports or port_order(c.z.port) < port_order(ports[c.physical]):
            ports[c.physical] = c.z.port
    out: dict[str, list[tuple[int, str]]] = {}
    for device, ports in first.items():
        for physical, port in ports.items():
            name, _, number = physical.rpartition("-")
            assert name == device, f"{physical} is not numbered by its switch side {device}"
            out.setdefault(device, []).append((int(number), port))
        out[device].sort(key=lambda n: port_order(n[1]))
    return out


def _as_planned(cables: list[Cable]) -> list[Cable]:
    """Cables named as the plan names them before numbering: a link its Z port's id, a physical cable of several its
    first link's (a link with ``leg`` 0 a cable of its own)."""
    first: dict[str, int] = {}
    for c in cables:
        if c.leg:
            first[c.physical] = min(first.get(c.physical, c.z.port_number), c.z.port_number)
    return [replace(c, id=f"{c.z.device}-{c.z.port_number:03d}", physical=f"{c.z.device}-{first[c.physical]:03d}"
                    if c.leg else f"{c.z.device}-{c.z.port_number:03d}") for c in cables]


def _assert_consecutive(cables: tuple[Cable, ...] | list[Cable]) -> None:
    """Every switch's physical cables are -001, -002 ... in physical port order (its connectors all used up to its
    last cable's), a link of several ``<id>/L<leg>``, every id unique."""
    for device, numbered in _numbers(cables).items():
        assert [n for n, _ in numbered] == list(range(1, len(numbered) + 1)), (device, numbered)
    _assert_well_named(cables)


def _assert_well_named(cables: tuple[Cable, ...] | list[Cable]) -> None:
    """Each switch's numbers rise with its ports, a link of several is ``<id>/L<leg>``, every id unique."""
    for device, numbered in _numbers(cables).items():
        assert [n for n, _ in numbered] == sorted({n for n, _ in numbered}), (device, numbered)
    for c in cables:
        assert c.id == c.name == (f"{c.physical}/L{c.leg}" if c.leg else c.physical)
    assert len({c.id for c in cables}) == len(cables), "ids are unique"


@pytest.mark.parametrize("spec", ["lab-1su", "h100-4su", "spectrumx-1su"])
def test_every_switch_numbers_its_cables_without_gaps(spec: str) -> None:
    """The examples' switches use every connector up to their last cable's, so each reads -001, -002 ... in port
    order: h100-4su's breakout switches (a 1:4 harness per cage, 4 logical ports each) read -001, -002 ... as their
    cages, where the first leg's port number gave -001, -005 ... (issue 19)."""
    topology = compile_topology(build_cluster(load_text((INVENTORIES / f"{spec}.yaml").read_text(), "s.yaml")))
    _assert_consecutive(topology.cables)
    if spec == "h100-4su":
        agg = [c for c in topology.cables if c.z.device == "oob-agg01"]
        harnesses = {c.physical: switch_cage(c.z.port) for c in agg}
        assert len(harnesses) == 11 and all(c.medium.legs == 4 for c in agg)
        assert harnesses == {f"oob-agg01-{n:03d}": str(n) for n in range(1, 12)}, "harness n in cage n"
        assert [c.id for c in agg if c.physical == "oob-agg01-002"] == [f"oob-agg01-002/L{n}" for n in (1, 2, 3, 4)]
    if spec == "lab-1su":
        pairs = [c for c in topology.cables if c.leg and c.medium.legs == 1]
        assert len(pairs) == 40 and all(c.physical == f"{c.z.device}-{int(switch_cage(c.z.port)):03d}" for c in pairs)


def test_two_plugs_in_a_cage_of_one_connector_keep_distinct_ids(labs: tuple[Topology, Topology]) -> None:
    """storage-spine01's QSFP-DD cages take one plug each (cage pairs); made to hold cage 2's two links as cables of
    their own (the cage-plugs check refuses such a plan: a straight plug drives the cage's first port only), both
    are cage 2's connector, yet their ids stay distinct, the second suffixed, and no other cable moves."""
    def own(c: Cable) -> Cable:
        return replace(c, leg=0) if c.z.device == "storage-spine01" and switch_cage(c.z.port) == "2" else c

    named = _switch_ids(_as_planned([own(c) for c in labs[0].cables]), *_context(labs[0]))
    spine01 = {c.z.port: c.id for c in named if c.z.device == "storage-spine01"}
    assert [spine01[p] for p in ("1/1", "1/2", "2/1", "2/2", "3/1", "3/2")] == [
        "storage-spine01-001/L1", "storage-spine01-001/L2", "storage-spine01-002", "storage-spine01-002.2",
        "storage-spine01-003/L1", "storage-spine01-003/L2"]
    before = {(c.a.device, c.a.port, c.z.device, c.z.port): c.id for c in labs[0].cables}
    assert len({c.id for c in named}) == len(named), "ids are unique"
    assert {c.z.device for c in named if before[c.a.device, c.a.port, c.z.device, c.z.port] != c.id} == {
        "storage-spine01"}


def _context(topology: Topology) -> tuple[dict[str, _Place], tuple[Medium, ...]]:
    """What ``_switch_ids`` reads beside the cables: where each device stands (its model) and the catalog media."""
    return _places(topology.cluster, topology.fabrics), topology.cluster.media


def _renumbered(before: Topology, after: Topology) -> tuple[list[str], set[str]]:
    """The cables present in both (same ends) whose id changed, and the switches that gained or lost a cable."""
    old, new = _ids(before), _ids(after)
    changed = {ends[2] for ends in old.keys() ^ new.keys()}
    return sorted(old[ends][0] for ends in old.keys() & new.keys() if old[ends] != new[ends]), changed


def _h100(gpus: int) -> Topology:
    text = (INVENTORIES / "h100-4su.yaml").read_text()
    assert text.count("    count: 127\n") == 1
    text = text.replace("    count: 127\n", f"    count: {gpus}\n")
    return compile_topology(build_cluster(load_text(text, "s.yaml")))


def test_a_one_node_change_renumbers_no_other_cable() -> None:
    """h100-4su with one GPU node fewer (gpu127 goes): no surviving cable is renumbered, on its own leaves or any
    other switch; its leaves' -031 is free (the UFM's cables, on the last SU's last slot, stay -032)."""
    full, shrunk = _h100(127), _h100(126)
    renumbered, changed = _renumbered(full, shrunk)
    assert len(full.cables) - len(shrunk.cables) >= 8 and changed, "gpu127's cables are gone"
    assert renumbered == []
    _assert_well_named(shrunk.cables)
    leaf0 = {c.physical: c.a.device for c in shrunk.cables if c.z.device == "compute-su04-leaf0"}
    assert "compute-su04-leaf0-031" not in leaf0 and leaf0["compute-su04-leaf0-032"] == "ufm01"


def test_gpu_nodes_gone_give_no_id_to_another_cable() -> None:
    """Field review (2026-12-03): h100-4su at 120 GPU nodes gave gpu121's id to the UFM (its ports packed after the
    GPUs'). Servers now sit on the top slots and ports, numbered by connector: on the fabrics whose switches stay
    (compute, in-band) no id names a cable of other ends, and no server's port moves. The storage fabric loses two
    of its four spines, so its spines are cabled anew (each leaf's uplinks spread over two); the OOB fabric's rack
    D01, emptied of gpu121-124, takes the UFM pair, whose placement fills row D's first free racks."""
    full, shrunk = _h100(127), _h100(120)
    before = {c.id: (c.a.device, c.a.port, c.z.device, c.z.port) for c in full.cables}
    reused = {c.fabric for c in shrunk.cables
              if c.id in before and before[c.id] != (c.a.device, c.a.port, c.z.device, c.z.port)}
    assert reused == {"storage", "oob"}
    def server_ports(topology: Topology) -> dict[tuple[str, str], tuple[str, str, str]]:
        return {(c.a.device, c.a.port): (c.z.device, c.z.port, c.id) for c in topology.cables
                if c.a.device.startswith(("ufm", "mds", "oss")) and c.fabric != "oob"}

    assert len(server_ports(full)) == 22 and server_ports(shrunk) == server_ports(full)  # UFM 4, MDS/OSS 6 + 12


def test_a_cable_gone_from_the_middle_renumbers_nothing(labs: tuple[Topology, Topology]) -> None:
    """A cable gone from the middle of a switch's ports (lab-1su's storage-spine01 without its cage 2 pair)
    renumbers nothing: cage 3 stays -003, and -002 is free, as cage 2 is."""
    full = labs[0]
    gone = [c for c in full.cables if not (c.z.device == "storage-spine01" and switch_cage(c.z.port) == "2")]
    named = _switch_ids(_as_planned(gone), *_context(full))
    before = {(c.a.device, c.a.port, c.z.device, c.z.port): c.id for c in full.cables}
    assert [c.id for c in named if before[c.a.device, c.a.port, c.z.device, c.z.port] != c.id] == []
    spine01 = {c.z.port: c.physical for c in named if c.z.device == "storage-spine01"}
    assert (spine01["1/1"], spine01["3/1"], spine01["4/1"]) == (
        "storage-spine01-001", "storage-spine01-003", "storage-spine01-004")
    _assert_well_named(named)
    assert len(list(physical_cables(named))) == len(list(physical_cables(full.cables))) - 1


def test_renumbered_keeps_every_other_field(labs: tuple[Topology, Topology]) -> None:
    """``Cable.renumbered`` passes the fields by hand (dataclasses.replace is too slow per cable): it must be
    replace() of the id and physical cable, whatever fields Cable has or gains; splitter legs and cage-pair links
    (leg > 0) too."""
    cables = [c for c in labs[0].cables if c.leg][:3] + list(labs[0].cables[:3])
    assert any(c.leg for c in cables)
    for cable in cables:
        assert cable.renumbered("x-001", "x-000") == replace(cable, id="x-001", physical="x-000")
