"""Property tests of the topology compiler over random small, valid specs (hypothesis).

Each spec has one compute fabric (rail-optimized, fat-tree, leaf-spine or top-of-rack) over 1..300 nodes of a
custom profile with 1..8 compute NICs (rails, listed in a random order), sometimes a few management nodes that
serve a subset of the rails, and a facility sized to fit. Specs always build; compiling may be infeasible, which
must be reported as a SpecError and nothing else. Compiled specs must satisfy the shape rules of
fabricgen.stages.compile (module docstring) and pass every check.
"""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from fabricgen.core.errors import Severity, SpecError
from fabricgen.model.cluster import Cluster, Tier, TopologyKind
from fabricgen.model.topology import LEAF_SPINE, NODE_LEAF, SPINE_CORE, FabricTopology, Topology
from fabricgen.spec.load import load_text
from fabricgen.stages.build import build_cluster
from fabricgen.stages.check import run_checks
from fabricgen.stages.compile import compile_topology
from fabricgen.stages.render import render

PROPERTY = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])

SWITCHES: dict[str, list[tuple[str, tuple[str, ...]]]] = {  # fabric type -> (switch model, host speeds it runs)
    "infiniband": [("QM9700", ("NDR",)), ("QM8700", ("HDR",))],
    # ConnectX-7 runs 400G as 4 x 100G-PAM4, the SN4700 as 8 x 50G-PAM4: build refuses that pair (lane widths)
    "roce": [("SN5600", ("400G", "200G", "100G")), ("SN4700", ("200G", "100G"))],
}
KINDS = [k.value for k in TopologyKind]


@dataclass(frozen=True)
class Case:
    """A generated spec and the parameters it was drawn from (for the expected-shape formulas)."""

    text: str
    kind: TopologyKind
    nodes: int
    rails: int
    scalable_unit: int
    oversubscription: float
    uplinks: int | None


@st.composite
def cases(draw: st.DrawFn) -> Case:
    fabric_type = draw(st.sampled_from(sorted(SWITCHES)))
    model, speeds = draw(st.sampled_from(SWITCHES[fabric_type]))
    speed = draw(st.sampled_from(speeds))
    kind = draw(st.sampled_from(KINDS))
    nodes = draw(st.integers(1, 300))
    rails = draw(st.integers(1, 8))
    order = draw(st.permutations(range(rails)))  # NIC i serves rail order[i]
    height = draw(st.integers(1, 4))
    per_rack = draw(st.integers(1, 44 // height))
    su = draw(st.integers(2, 32))
    oversub = draw(st.sampled_from([1, 1, 2, 3, 1.5]))
    uplinks = draw(st.one_of(st.none(), st.none(), st.integers(1, 16)))
    tiers = draw(st.sampled_from(["auto", "auto", "auto", 2] + ([] if kind == "leaf-spine" else [3])))
    mgmt_rails = draw(st.lists(st.integers(0, rails - 1), min_size=1, max_size=rails, unique=True))
    mgmt = draw(st.integers(0, 3))
    mgmt_first = draw(st.booleans())

    racks = math.ceil(nodes / per_rack)
    rows = max(draw(st.integers(1, 3)), math.ceil(racks / 200))
    row_names = [f"R{i}" for i in range(rows)]

    def nic(i: int, rail: int) -> dict[str, Any]:
        return {"port": f"P{i}", "model": "ConnectX-7-OSFP", "dev": f"mlx5_{i}", "rail": rail}

    profiles: dict[str, Any] = {
        "gpu": {"height_u": height, "gpus": rails, "nics": {"compute": [nic(i, r) for i, r in enumerate(order)]}},
        "mgmt": {"role": "management", "height_u": 1, "nics": {"compute": [nic(i, r) for i, r in
                                                                           enumerate(mgmt_rails)]}},
    }
    groups = [{"name": "g{n:03d}", "count": nodes, "profile": "gpu",
               "placement": {"rows": row_names, "per_rack": per_rack, "start_u": 2}}]
    facility_rows = [{"name": n, "racks": math.ceil(racks / rows)} for n in row_names]
    facility_rows.append({"name": "NET", "racks": 40, "kind": "network"})  # room for every switch tier
    if mgmt:
        management = {"name": "m{n}", "count": mgmt, "profile": "mgmt",
                      "placement": {"rows": ["M"], "per_rack": 1, "start_u": 2}}
        groups.insert(0 if mgmt_first else 1, management)
        facility_rows.append({"name": "M", "racks": mgmt})
    topology: dict[str, Any] = {"kind": kind, "scalable_unit": su, "tiers": tiers, "oversubscription": oversub}
    if uplinks is not None:
        topology["uplinks"] = uplinks
    spec = {
        "apiVersion": "fabricgen/v1", "kind": "Cluster", "metadata": {"name": "prop", "site": "lab"},
        "facility": {"rack_units": 48, "rows": facility_rows}, "node_profiles": profiles, "nodes": groups,
        "fabrics": {"compute": {"type": fabric_type, "speed": speed, "switch": model, "topology": topology}},
    }
    return Case(json.dumps(spec), TopologyKind(kind), nodes, rails, su, float(oversub), uplinks)


def build(case: Case) -> Cluster:
    return build_cluster(load_text(case.text, "prop.yaml"))  # the generator only makes specs that build


def compiled(case: Case) -> Topology | None:
    """The topology, or None when the spec is infeasible (which must be a SpecError)."""
    try:
        topology = compile_topology(build(case))
    except SpecError:
        event("infeasible")
        return None
    event(f"feasible, {topology.fabrics[0].tiers} tier(s)")
    return topology


def expected_uplinks(case: Case, down: int) -> int:
    if case.uplinks is not None:
        return case.uplinks
    if case.kind is TopologyKind.TOP_OF_RACK:
        return 2
    return math.ceil(down / case.oversubscription)


def model_capacity(ft: FabricTopology, model_name: str) -> tuple[int, int]:
    """(logical port numbers, cages) of a switch model: every cage counted at its widest breakout."""
    model = next(s.model for s in ft.switches if s.model.name == model_name)
    return (sum(g.cages * max(n for _, n in g.ports_per_cage) for g in model.port_groups),
            sum(g.cages for g in model.port_groups))


# -- properties --------------------------------------------------------------------------------------------------


@PROPERTY
@given(cases())
def test_infeasible_specs_raise_spec_error_only(case: Case) -> None:
    cluster = build(case)
    try:
        topology = compile_topology(cluster)
    except SpecError as exc:
        assert exc.issues and all(i.path.startswith("fabrics.compute") for i in exc.issues)
        event("infeasible")
        return
    event("feasible")
    # cage-plugs may refuse a compiled plan: whether a split cage's cables plug depends on the runs and the
    # catalog's media (an SN5600 100G cage beyond the 2 m DAC splitter), which compile does not see
    assert [str(f) for f in run_checks(topology) if f.severity is Severity.ERROR and f.check != "cage-plugs"] == []


@PROPERTY
@given(cases())
def test_ports_are_used_once_and_fit_the_switch(case: Case) -> None:
    topology = compiled(case)
    if topology is None:
        return
    ft = topology.fabrics[0]
    numbers = Counter((end.device, end.number) for link in ft.links for end in (link.a, link.z))
    names = Counter((end.device, end.name) for link in ft.links for end in (link.a, link.z))
    assert max(numbers.values()) == 1, [k for k, v in numbers.items() if v > 1][:5]
    assert max(names.values()) == 1, [k for k, v in names.items() if v > 1][:5]
    nodes = {n.name for n in topology.cluster.nodes}
    host = Counter((link.a.device, link.a.name) for link in ft.links_in(NODE_LEAF))
    assert set(host) == {(n.name, nic.port) for n in topology.cluster.nodes for nic in n.profile.compute}

    by_switch: dict[str, list[tuple[int, str, str, bool]]] = defaultdict(list)  # number, name, speed, is_down
    for link in ft.links:
        by_switch[link.z.device].append((link.z.number, link.z.name, link.speed, True))
        if link.a.device not in nodes:
            by_switch[link.a.device].append((link.a.number, link.a.name, link.speed, False))
    for sw in ft.switches:
        used = by_switch.get(sw.name, [])
        numbers_max, cages_max = model_capacity(ft, sw.model.name)
        assert len(used) <= numbers_max and all(1 <= n <= numbers_max for n, *_ in used), sw.name
        assert sum(d for *_, d in used) <= sw.down_ports and sum(not d for *_, d in used) <= sw.up_ports, sw.name
        cages = [int(name.split("/")[0]) for _, name, *_ in used]
        assert all(1 <= c <= cages_max for c in cages), sw.name
        lanes: Counter[int] = Counter(cages)
        cage_speed: dict[int, set[str]] = defaultdict(set)
        for (_, _, speed, _), cage in zip(used, cages, strict=True):
            cage_speed[cage].add(speed)
        groups = [g for g in sw.model.port_groups for _ in range(g.cages)]
        for cage, speeds in cage_speed.items():
            assert len(speeds) == 1, f"{sw.name} cage {cage} runs at {speeds}"
            per_cage = groups[cage - 1].per_cage(speeds.pop())
            assert 0 < lanes[cage] <= per_cage, f"{sw.name} cage {cage}: {lanes[cage]} lanes, {per_cage} allowed"


@PROPERTY
@given(cases())
def test_rails_align_with_scalable_units(case: Case) -> None:
    topology = compiled(case)
    if topology is None or case.kind is not TopologyKind.RAIL_OPTIMIZED:
        return
    ft = topology.fabrics[0]
    leaves = {s.name: s for s in ft.switches_in(Tier.LEAF)}
    sus = math.ceil(len(topology.cluster.nodes) / case.scalable_unit)
    compute = [n.name for n in topology.cluster.nodes if n.profile.role == "compute"]
    servers = [n.name for n in topology.cluster.nodes if n.profile.role != "compute"]
    # compute nodes count up from the first slot, the management nodes down from the last (they share rails here,
    # so none shares a slot)
    slot = {name: i for i, name in enumerate(compute)} | {
        name: sus * case.scalable_unit - 1 - k for k, name in enumerate(servers)}
    node_su: dict[str, set[int | None]] = defaultdict(set)
    for link in ft.links_in(NODE_LEAF):
        leaf, nic = leaves[link.z.device], link.nic
        assert nic is not None and nic.rail is not None
        s = slot[link.a.device]
        assert leaf.rail == nic.rail == link.rail, (link.a, link.z)
        assert leaf.su == link.su == s // case.scalable_unit + 1, (link.a, link.z)
        assert link.z.number == s % case.scalable_unit + 1, (link.a, link.z)  # port s+1 of its SU leaf
        node_su[link.a.device].add(leaf.su)
    assert all(len(node_sus) == 1 for node_sus in node_su.values())
    assert ft.scalable_units == sus and ft.rails == case.rails
    assert sorted((s.su, s.rail) for s in leaves.values()) == [(u, r) for u in range(1, sus + 1)
                                                               for r in range(case.rails)]
    assert {s.down_ports for s in leaves.values()} == {case.scalable_unit}


@PROPERTY
@given(cases())
def test_link_counts_follow_the_formulas(case: Case) -> None:
    topology = compiled(case)
    if topology is None:
        return
    ft = topology.fabrics[0]
    leaves, spines = ft.switches_in(Tier.LEAF), ft.switches_in(Tier.SPINE)
    host_ports = sum(len(n.profile.compute) for n in topology.cluster.nodes)
    assert len(ft.links_in(NODE_LEAF)) == ft.host_ports == host_ports
    for leaf in leaves:
        assert leaf.up_ports == expected_uplinks(case, leaf.down_ports), leaf
    if case.kind is TopologyKind.TOP_OF_RACK:
        assert len(leaves) == len({n.rack.name for n in topology.cluster.nodes})
    elif case.kind is not TopologyKind.RAIL_OPTIMIZED:  # packed: full leaves in node order, the last one partial
        per_leaf = leaves[0].down_ports
        assert {s.down_ports for s in leaves} == {per_leaf}
        # the servers' ports at the first leaf's top, rounded up to a whole compute node's (its bond on one leaf)
        servers = sum(len(n.profile.compute) for n in topology.cluster.nodes if n.profile.role != "compute")
        block = max((len(n.profile.compute) for n in topology.cluster.nodes if n.profile.role == "compute"), default=1)
        assert len(leaves) == math.ceil((host_ports - servers + math.ceil(servers / block) * block) / per_leaf)
    if ft.tiers == 1:
        assert len(leaves) == 1 and not spines and len(ft.links) == host_ports
        return
    assert len(ft.links_in(LEAF_SPINE)) == sum(s.up_ports for s in leaves) == len(leaves) * leaves[0].up_ports
    if ft.tiers == 2:
        assert not ft.links_in(SPINE_CORE) and not ft.switches_in(Tier.CORE)
        assert len(spines) >= min(2, len(leaves))
        return
    assert case.kind is not TopologyKind.LEAF_SPINE
    # three tiers: spines are non-blocking (uplinks = downlinks of a full pod) and every uplink is cabled
    assert all(s.up_ports == s.down_ports for s in spines)
    assert len(ft.links_in(SPINE_CORE)) == sum(s.up_ports for s in spines)
    down_used = Counter(link.z.device for link in ft.links_in(LEAF_SPINE))
    if all(down_used[s.name] == s.down_ports for s in spines):  # every pod full: core tier mirrors leaf tier
        assert len(ft.links_in(SPINE_CORE)) == len(ft.links_in(LEAF_SPINE))
    assert ft.pods == len({s.pod for s in spines})


@PROPERTY
@given(cases())
def test_uplinks_spread_evenly(case: Case) -> None:
    topology = compiled(case)
    if topology is None or topology.fabrics[0].tiers == 1:
        return
    ft = topology.fabrics[0]
    spines = {s.name: s for s in ft.switches_in(Tier.SPINE)}
    spines_per_pod = Counter(s.pod for s in spines.values())
    leaf_fanout: dict[str, Counter[str]] = defaultdict(Counter)
    for link in ft.links_in(LEAF_SPINE):
        leaf_fanout[link.a.device][link.z.device] += 1
    assert set(leaf_fanout) == {s.name for s in ft.switches_in(Tier.LEAF)}
    for leaf, to in leaf_fanout.items():
        assert len(set(to.values())) == 1, f"{leaf}: {dict(to)}"
        pods = {spines[s].pod for s in to}
        assert len(pods) == 1 and len(to) == spines_per_pod[pods.pop()], f"{leaf} misses spines of its pod"
    spine_fanout: dict[str, Counter[str]] = defaultdict(Counter)
    for link in ft.links_in(SPINE_CORE):
        spine_fanout[link.a.device][link.z.device] += 1
    if ft.tiers == 3:
        assert set(spine_fanout) == set(spines)
        assert len({len(to) for to in spine_fanout.values()}) == 1
    for spine, to in spine_fanout.items():
        assert len(set(to.values())) == 1, f"{spine}: {dict(to)}"


@PROPERTY
@given(cases())
def test_links_go_upward(case: Case) -> None:
    topology = compiled(case)
    if topology is None:
        return
    ft = topology.fabrics[0]
    level = {s.name: 1 + list(Tier).index(s.tier) for s in ft.switches}
    level |= {n.name: 0 for n in topology.cluster.nodes}
    step = {NODE_LEAF: 0, LEAF_SPINE: 1, SPINE_CORE: 2}
    for link in ft.links:
        assert (level[link.a.device], level[link.z.device]) == (step[link.tier], step[link.tier] + 1), link


@PROPERTY
@given(cases())
def test_compile_is_deterministic(case: Case) -> None:
    topology = compiled(case)
    if topology is None:
        return
    again = compile_topology(build(case))
    first, second = render(topology), render(again)
    assert [(a.path, a.mode) for a in first] == [(a.path, a.mode) for a in second]
    for a, b in zip(first, second, strict=True):
        assert a.content == b.content, a.path


@PROPERTY
@given(cases())
def test_cable_plan_is_one_physical_cable_per_link(case: Case) -> None:
    """Random facilities: one cable per link, every port cabled once, lengths orderable and within reach."""
    topology = compiled(case)
    if topology is None:
        return
    links = sum(len(ft.links) for ft in topology.fabrics)
    assert len(topology.cables) == links
    ports: set[tuple[str, str]] = set()
    longest: dict[str, float] = defaultdict(float)  # a splitter's legs are one cable at its longest leg's run
    for cable in topology.cables:
        longest[cable.physical] = max(longest[cable.physical], cable.run_m)
    for cable in topology.cables:
        for end in (cable.a, cable.z):
            assert (end.device, end.port) not in ports, f"{end.device}:{end.port} cabled twice"
            ports.add((end.device, end.port))
        assert cable.run_m <= cable.length_m <= cable.medium.reach_m
        assert (cable.length_m, cable.part) in cable.medium.cables
        assert cable.speed in cable.medium.speeds or (cable.leg and cable.speed in cable.medium.cage_pair)
        shorter = [length for length, _ in cable.medium.cables if length < cable.length_m]
        assert all(length < longest[cable.physical] for length in shorter), "shortest standard length that fits"
