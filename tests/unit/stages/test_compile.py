"""Topology compiler: reference counts (NVIDIA SuperPOD RAs), port naming, link direction and the shape rules.

Reference numbers come from /work/shared/REFERENCE.md, "Rail-optimized compute fabrics":
H100 RA compute fabric (QM9700, non-blocking, SU of 32 with one slot serving UFM) and the B200 RA at 16 SUs.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

from fabricgen.core.errors import Finding, Severity, SpecError
from fabricgen.model.cluster import Tier
from fabricgen.model.topology import LEAF_SPINE, NODE_LEAF, SPINE_CORE, FabricTopology, Topology
from fabricgen.spec.load import load_text
from fabricgen.stages.build import build_cluster
from fabricgen.stages.check import run_checks
from fabricgen.stages.compile import compile_topology, port_layout
from tests.conftest import REPO

INVENTORIES = sorted((REPO / "inventories").glob("*.yaml"))

# -- helpers -----------------------------------------------------------------------------------------------------


def compile_text(text: str, source: str = "test.yaml") -> Topology:
    return compile_topology(build_cluster(load_text(text, source)))


def compile_spec(spec: dict[str, Any]) -> Topology:
    return compile_text(json.dumps(spec))  # JSON is YAML: no quoting surprises with "{n:03d}"


def errors(topology: Topology) -> list[Finding]:
    return [f for f in run_checks(topology) if f.severity is Severity.ERROR]


def counts(ft: FabricTopology) -> tuple[list[int], list[int]]:
    """Switches per tier (leaf, spine, core) and links per tier (node-leaf, leaf-spine, spine-core)."""
    return ([len(ft.switches_in(t)) for t in Tier], [len(ft.links_in(t)) for t in (NODE_LEAF, LEAF_SPINE, SPINE_CORE)])


def qm9700_name(number: int) -> str:
    """QM9700 logical port n -> cage ceil(n/2), lane ((n-1) % 2) + 1."""
    return f"{math.ceil(number / 2)}/{(number - 1) % 2 + 1}"


NETWORK_ROW = {"name": "NET", "racks": 120, "kind": "network"}  # room for every switch the tests build


def cluster_spec(nodes: list[dict[str, Any]], fabrics: dict[str, Any], rows: list[dict[str, Any]],
                 profiles: dict[str, Any] | None = None, name: str = "t") -> dict[str, Any]:
    return {"apiVersion": "fabricgen/v1", "kind": "Cluster", "metadata": {"name": name, "site": "dc1"},
            "facility": {"rack_units": 48, "rows": [*rows, NETWORK_ROW]}, "node_profiles": profiles or {},
            "nodes": nodes, "fabrics": fabrics}


def group(pattern: str, count: int, profile: str, rows: list[str], per_rack: int, start_u: int = 2) -> dict[str, Any]:
    return {"name": pattern, "count": count, "profile": profile,
            "placement": {"rows": rows, "per_rack": per_rack, "start_u": start_u}}


def ib_compute(kind: str = "rail-optimized", su: int = 32, **topology: Any) -> dict[str, Any]:
    return {"compute": {"type": "infiniband", "speed": "NDR", "switch": "QM9700",
                        "topology": {"kind": kind, "scalable_unit": su, **topology}}}


UFM_PROFILE = {
    "role": "management", "height_u": 1,
    "nics": {"compute": [{"port": f"P{r + 1}", "model": "ConnectX-7-OSFP", "rail": r} for r in range(4)]},
}


def superpod(sus: int, **topology: Any) -> dict[str, Any]:
    """DGX H100 nodes filling `sus` SUs of 32, the last slot taken by one UFM appliance (rails 0-3, 1U)."""
    dgx = 32 * sus - 1
    nodes = [group("gpu{n:04d}", dgx, "dgx-h100", ["A"], per_rack=4),
             group("ufm{n:02d}", 1, "ufm-appliance", ["M"], per_rack=1)]
    rows = [{"name": "A", "racks": math.ceil(dgx / 4)}, {"name": "M", "racks": 1}]
    return cluster_spec(nodes, ib_compute(su=32, **({"oversubscription": 1} | topology)), rows,
                        {"ufm-appliance": UFM_PROFILE}, name=f"h100-{sus}su")


@pytest.fixture(scope="module")
def inventory() -> dict[str, Topology]:
    """Every shipped inventory compiled once for this module (bench-16k takes ~0.3 s)."""
    return {p.stem: compile_text(p.read_text(), str(p)) for p in INVENTORIES}


def assert_even_spread(ft: FabricTopology) -> None:
    """Each leaf sends the same number of links to every spine of its pod (or fabric), and each spine likewise
    to every core it reaches; every leaf reaches all spines of its pod."""
    spines = {s.name: s for s in ft.switches_in(Tier.SPINE)}
    per_pod: dict[int | None, int] = Counter(s.pod for s in spines.values())
    for tier, lower in ((LEAF_SPINE, Tier.LEAF), (SPINE_CORE, Tier.SPINE))[:ft.tiers - 1]:
        fanout: dict[str, Counter[str]] = defaultdict(Counter)
        for link in ft.links_in(tier):
            fanout[link.a.device][link.z.device] += 1
        assert set(fanout) == {s.name for s in ft.switches_in(lower)}, f"{tier}: a {lower.value} has no uplink"
        widths = set()
        for device, to in fanout.items():
            assert len(set(to.values())) == 1, f"{device} spreads unevenly: {dict(to)}"
            widths.add(len(to))
            if tier == LEAF_SPINE:
                pods = {spines[s].pod for s in to}
                assert len(pods) == 1, f"{device} reaches spines of pods {pods}"
                assert len(to) == per_pod[pods.pop()], f"{device} misses spines of its pod"
        assert len(widths) == 1, f"{tier}: fan-out differs between switches: {widths}"


# -- reference counts --------------------------------------------------------------------------------------------

H100_REFERENCE = {  # SUs -> nodes, leaves, spines, node+UFM cables, leaf-spine cables
    1: (31, 8, 4, 252, 256),
    2: (63, 16, 8, 508, 512),
    3: (95, 24, 16, 764, 768),
    4: (127, 32, 16, 1020, 1024),
}


@pytest.mark.parametrize("sus", sorted(H100_REFERENCE))
def test_h100_superpod_reference_counts(sus: int) -> None:
    nodes, leaves, spines, host_cables, leaf_spine = H100_REFERENCE[sus]
    topo = compile_spec(superpod(sus))
    ft = topo.fabric("compute")
    dgx = {n.name for n in topo.cluster.nodes if n.profile.name == "dgx-h100"}
    assert len(dgx) == nodes
    assert ft.tiers == 2
    assert ft.scalable_units == sus and ft.rails == 8
    assert counts(ft) == ([leaves, spines, 0], [host_cables, leaf_spine, 0])
    assert ft.host_ports == host_cables
    ufm_links = [link for link in ft.links_in(NODE_LEAF) if link.a.device == "ufm01"]
    assert sorted((link.rail, link.su, link.z.name) for link in ufm_links) == [
        (r, sus, "16/2") for r in range(4)]  # last slot (32) of the last SU, rails 0-3 only
    assert_even_spread(ft)
    assert errors(topo) == []


def test_h100_4su_inventory_is_the_reference(inventory: dict[str, Topology]) -> None:
    ft = inventory["h100-4su"].fabric("compute")
    assert counts(ft) == ([32, 16, 0], [1020, 1024, 0])
    assert len({link.a.device for link in ft.links_in(NODE_LEAF)}) == 129  # 127 DGX + the UFM HA pair
    # the UFM pair shares the last slot (rails 0-1 and 2-3), as NVIDIA's RA reserves one slot for UFM
    ufm = sorted((link.a.device, link.z.device, link.z.number) for link in ft.links_in(NODE_LEAF)
                 if link.a.device.startswith("ufm"))
    assert ufm == [("ufm01", f"compute-su04-leaf{r}", 32) for r in (0, 1)] + [
        ("ufm02", f"compute-su04-leaf{r}", 32) for r in (2, 3)]


def test_management_nodes_on_disjoint_rails_share_a_slot() -> None:
    """Two UFM appliances on rails 0-1 and 2-3 share the last slot; on the same rails they take one each (and a
    compute node never shares)."""
    def ufm(rails: range) -> dict[str, Any]:
        return {"role": "management", "height_u": 1, "nics": {"compute": [
            {"port": f"P{i + 1}", "model": "ConnectX-7-OSFP", "rail": r} for i, r in enumerate(rails)]}}

    def slots(second: range) -> tuple[int, dict[str, set[tuple[str, int]]]]:
        nodes = [group("gpu{n:04d}", 31, "dgx-h100", ["A"], per_rack=4),
                 group("ufma{n:02d}", 1, "ufm-a", ["M"], per_rack=1),
                 group("ufmb{n:02d}", 1, "ufm-b", ["M"], per_rack=1)]
        spec = cluster_spec(nodes, ib_compute(su=32), [{"name": "A", "racks": 8}, {"name": "M", "racks": 1}],
                            {"ufm-a": ufm(range(2)), "ufm-b": ufm(second)})
        ft = compile_spec(spec).fabric("compute")
        ends: dict[str, set[tuple[str, int]]] = defaultdict(set)
        for link in ft.links_in(NODE_LEAF):
            ends[link.a.device].add((link.z.device, link.z.number))
        return ft.scalable_units, ends

    sus, ends = slots(range(2, 4))
    assert sus == 1
    assert ends["ufma01"] == {(f"compute-su01-leaf{r}", 32) for r in (0, 1)}
    assert ends["ufmb01"] == {(f"compute-su01-leaf{r}", 32) for r in (2, 3)}
    sus, ends = slots(range(1, 3))  # rail 1 is taken: the next slot down, which makes a second SU
    assert sus == 2
    assert ends["ufma01"] == {(f"compute-su02-leaf{r}", 32) for r in (0, 1)}, "servers count down from the top"
    assert ends["ufmb01"] == {(f"compute-su02-leaf{r}", 31) for r in (1, 2)}
    assert max(n for (leaf, n) in ends["gpu0031"] if leaf.startswith("compute-su01")) == 31


def test_b200_ra_like_16_su() -> None:
    """B200 RA at 16 SUs: 128 leaves, 128 spines, 64 core, 4096 cables per tier (a core tier appears)."""
    spec = cluster_spec([group("gpu{n:04d}", 512, "dgx-h200", ["A", "B"], per_rack=4)],
                        ib_compute(su=32), [{"name": "A", "racks": 64}, {"name": "B", "racks": 64}])
    ft = compile_spec(spec).fabric("compute")
    assert ft.tiers == 3
    assert ft.scalable_units == 16 and ft.rails == 8
    assert counts(ft) == ([128, 128, 64], [4096, 4096, 4096])
    assert ft.pods == 8  # one pod per rail: 16 leaves each
    for pod in range(1, 9):
        pod_spines = [s for s in ft.switches_in(Tier.SPINE) if s.pod == pod]
        assert len(pod_spines) == 16
    assert_even_spread(ft)


def test_bench_16k_compute_fabric(inventory: dict[str, Topology]) -> None:
    ft = inventory["bench-16k"].fabric("compute")
    assert ft.tiers == 3
    assert counts(ft) == ([512, 512, 256], [16384, 16384, 16384])
    assert_even_spread(ft)
    leaves = {s.name: s for s in ft.switches_in(Tier.LEAF)}
    for link in ft.links_in(LEAF_SPINE):  # rail pods: every spine serves one rail only
        assert link.rail == leaves[link.a.device].rail


def test_ref_256_is_two_tiers_at_radix_64(inventory: dict[str, Topology]) -> None:
    """256 DGX A100 x 8 rails at 200G on SN4600 (64 native 200G QSFP56 cages): 8 SUs of 32, 64 rail leaves with 32
    ports up, and 32 spines with one link to every leaf hold the cluster non-blocking in two tiers (no third or
    fourth layer); every leaf cage carries one port."""
    ft = inventory["ref-256"].fabric("compute")
    assert ft.tiers == 2
    assert counts(ft) == ([64, 32, 0], [2048, 2048, 0])
    assert_even_spread(ft)
    assert {link.a.device for link in ft.links_in(NODE_LEAF)} == {f"dgx{n:03d}" for n in range(1, 257)}
    assert all("/" not in link.z.name for link in ft.links_in(NODE_LEAF))


# -- ports and links ---------------------------------------------------------------------------------------------


def test_qm9700_port_layout_names() -> None:
    model = compile_spec(superpod(1)).fabric("compute").fabric.switches[Tier.LEAF]
    downs, ups = port_layout(model, "NDR", 32, "NDR", 32)
    assert [n for n, _ in downs] == list(range(1, 33))
    assert [n for n, _ in ups] == list(range(33, 65))
    assert all(name == qm9700_name(n) for n, name in (*downs, *ups))
    assert (downs[0][1], downs[1][1], downs[-1][1], ups[0][1], ups[-1][1]) == ("1/1", "1/2", "16/2", "17/1", "32/2")


def test_qm9700_port_names_on_every_link(inventory: dict[str, Topology]) -> None:
    for topo in inventory.values():
        for ft in topo.fabrics:
            qm = {s.name for s in ft.switches if s.model.name == "QM9700"}
            for link in ft.links:
                for end in (link.a, link.z):
                    if end.device in qm:
                        assert end.name == qm9700_name(end.number), (end, link.tier)
                        assert 1 <= end.number <= 64


def test_rail_slot_lands_on_leaf_port() -> None:
    """Rail r of the node in SU slot s lands on leaf (SU, r), port s+1; the node end carries the profile label."""
    topo = compile_spec(superpod(2))
    ft = topo.fabric("compute")
    leaves = {s.name: s for s in ft.switches_in(Tier.LEAF)}
    slot = {n.name: i for i, n in enumerate(topo.cluster.nodes)}
    for link in ft.links_in(NODE_LEAF):
        leaf = leaves[link.z.device]
        assert link.nic is not None
        s = slot[link.a.device]
        assert (leaf.su, leaf.rail) == (s // 32 + 1, link.nic.rail)
        assert link.z.number == s % 32 + 1
        assert link.a.name == link.nic.port and link.a.number == link.nic.index + 1
    gpu0 = next(link for link in ft.links_in(NODE_LEAF) if link.a.device == "gpu0001" and link.rail == 0)
    assert (gpu0.a.name, gpu0.z.device, gpu0.z.name) == ("OSFP4P2", "compute-su01-leaf0", "1/1")
    assert gpu0.nic is not None and (gpu0.nic.dev, gpu0.nic.gpu) == ("mlx5_0", 0)


def test_link_direction_lower_tier_first(inventory: dict[str, Topology]) -> None:
    order = {Tier.LEAF: 1, Tier.SPINE: 2, Tier.CORE: 3}
    expected = {NODE_LEAF: (0, 1), LEAF_SPINE: (1, 2), SPINE_CORE: (2, 3)}
    for topo in inventory.values():
        nodes = {n.name for n in topo.cluster.nodes}
        for ft in topo.fabrics:
            level = {s.name: order[s.tier] for s in ft.switches} | dict.fromkeys(nodes, 0)
            for link in ft.links:
                assert (level[link.a.device], level[link.z.device]) == expected[link.tier], link


def test_no_port_used_twice_in_inventories(inventory: dict[str, Topology]) -> None:
    for topo in inventory.values():
        for ft in topo.fabrics:
            ends = [(end.device, end.number) for link in ft.links for end in (link.a, link.z)]
            assert len(ends) == len(set(ends)), ft.fabric.name


def test_uplinks_spread_evenly_in_inventories(inventory: dict[str, Topology]) -> None:
    for topo in inventory.values():
        for ft in topo.fabrics:
            if ft.tiers >= 2:
                assert_even_spread(ft)


def test_leaf_uplinks_go_spine_by_spine() -> None:
    """Leaf uplink ports go spine by spine; spine downlink ports go leaf by leaf (SU, rail order)."""
    ft = compile_spec(superpod(1)).fabric("compute")
    leaf0 = sorted((link.a.number, link.z.device) for link in ft.links_in(LEAF_SPINE)
                   if link.a.device == "compute-su01-leaf0")
    assert [d for _, d in leaf0] == [f"compute-spine{j:03d}" for j in range(1, 5) for _ in range(8)]
    assert [n for n, _ in leaf0] == list(range(33, 65))
    spine1 = sorted((link.z.number, link.a.device) for link in ft.links_in(LEAF_SPINE)
                    if link.z.device == "compute-spine001")
    assert [d for _, d in spine1] == [f"compute-su01-leaf{r}" for r in range(8) for _ in range(8)]
    assert [n for n, _ in spine1] == list(range(1, 65))


# -- oversubscription and uplinks ----------------------------------------------------------------------------------


def test_oversubscription_2_halves_uplinks() -> None:
    full = compile_spec(superpod(2)).fabric("compute")
    half = compile_spec(superpod(2, oversubscription=2)).fabric("compute")
    assert {s.up_ports for s in full.switches_in(Tier.LEAF)} == {32}
    assert {s.up_ports for s in half.switches_in(Tier.LEAF)} == {16}
    assert len(half.links_in(LEAF_SPINE)) == len(full.links_in(LEAF_SPINE)) // 2 == 256
    assert_even_spread(half)


def test_explicit_uplinks_override_oversubscription() -> None:
    ft = compile_spec(superpod(2, oversubscription=2, uplinks=8)).fabric("compute")
    assert {s.up_ports for s in ft.switches_in(Tier.LEAF)} == {8}
    assert len(ft.links_in(LEAF_SPINE)) == 16 * 8
    assert_even_spread(ft)


def test_oversubscription_odd_su_rounds_up() -> None:
    """ceil(downlinks / oversubscription): SU of 5 at 2:1 gives 3 uplinks per leaf."""
    spec = cluster_spec([group("h{n:02d}", 10, "hgx-8gpu-generic", ["A"], per_rack=4)],
                        ib_compute(su=5, oversubscription=2), [{"name": "A", "racks": 3}])
    ft = compile_spec(spec).fabric("compute")
    assert {s.up_ports for s in ft.switches_in(Tier.LEAF)} == {3}
    assert len(ft.links_in(LEAF_SPINE)) == 16 * 3
    assert_even_spread(ft)


# -- packing kinds -----------------------------------------------------------------------------------------------


def test_leaf_spine_packs_in_node_order(inventory: dict[str, Topology]) -> None:
    """h100-4su inband: SN4700 (32 QSFP-DD cages, 2 x 200G each) at 2:1 takes 24 hosts, one per cage (no catalog
    medium plugs a QSFP56 host per port of a split cage), + 12 uplinks on 6 cages (25 hosts would need an odd 13,
    26 one cage more than there are); 3 spines, 4 links (2 cage pairs) from each leaf; each DGX has two in-band
    ports (its bond), consecutive on one leaf, in node order from leaf001's first port; each of its 6 Lustre servers
    one, counting down from leaf001's last port (mds01 on 24), so GPU nodes coming or going move no server."""
    topo = inventory["h100-4su"]
    ft = topo.fabric("inband")
    leaves = ft.switches_in(Tier.LEAF)
    assert counts(ft) == ([11, 3, 0], [260, 132, 0])
    assert {(s.down_ports, s.up_ports) for s in leaves} == {(24, 12)}
    role = ft.fabric.role.nic_role
    servers = [(n.name, nic.index + 1) for n in topo.cluster.nodes if n.profile.role != "compute"
               for nic in n.profile.nics(role)]
    gpus = [(n.name, nic.index + 1) for n in topo.cluster.nodes if n.profile.role == "compute"
            for nic in n.profile.nics(role)]
    places = {port: 23 - i for i, port in enumerate(servers)} | {port: i for i, port in enumerate(gpus)}
    places = {port: place + (len(servers) if place >= 24 - len(servers) and port in gpus else 0)
              for port, place in places.items()}
    index = {s.name: s.index for s in leaves}
    for link in ft.links_in(NODE_LEAF):
        place = places[link.a.device, link.a.number]
        assert (index[link.z.device], link.z.number, link.z.name) == (
            place // 24 + 1, place % 24 + 1, f"{place % 24 + 1}/1"), link
    assert_even_spread(ft)


def test_an_odd_server_port_count_keeps_each_bond_on_one_leaf() -> None:
    """Field review (2026-12-03): h100-4su with a fifth OSS has seven in-band server ports at the top of
    inband-leaf001; the DGX nodes' two in-band ports (bond0) must still share a leaf, so the port left over stays free
    and the plan is clean of bond-member errors, where the DGX pairs used to start on odd ports across leaves."""
    text = (REPO / "inventories" / "h100-4su.yaml").read_text()
    old = "    count: 4\n    profile: lustre-server\n    placement: {racks: [D09, D10], per_rack: 2, start_u: 6}"
    assert text.count(old) == 1
    text = text.replace(old, old.replace("count: 4", "count: 5").replace("per_rack: 2", "per_rack: 3"))
    topology = compile_topology(build_cluster(load_text(text, "s.yaml")))
    ft = topology.fabric("inband")
    leaves: dict[str, set[str]] = defaultdict(set)
    for link in ft.links_in(NODE_LEAF):
        leaves[link.a.device].add(link.z.device)
    assert all(len(on) == 1 for node, on in leaves.items() if node.startswith("gpu")), "a DGX bond on one leaf"
    top = sorted((link.z.number, link.a.device) for link in ft.links_in(NODE_LEAF) if link.z.device == "inband-leaf001")
    assert [node for _, node in top[-7:]] == ["oss05", "oss04", "oss03", "oss02", "oss01", "mds02", "mds01"]
    assert [number for number, _ in top[-8:-7]] == [16], "port 17 is left free: the servers take 8, a DGX bond's whole"
    assert not [f for f in run_checks(topology) if f.severity is Severity.ERROR]


def _h100_with_servers(oss: int, server_ports: dict[str, int]) -> str:
    """h100-4su with ``oss`` OSS (three per rack) and ``server_ports`` declared on the named fabrics."""
    text = (REPO / "inventories" / "h100-4su.yaml").read_text()
    old = "    count: 4\n    profile: lustre-server\n    placement: {racks: [D09, D10], per_rack: 2, start_u: 6}"
    assert text.count(old) == 1
    text = text.replace(old, old.replace("count: 4", f"count: {oss}").replace("per_rack: 2", "per_rack: 4"))
    for fabric, ports in server_ports.items():
        old = {"storage": "topology: {kind: leaf-spine, oversubscription: 1}",
               "inband": "topology: {kind: leaf-spine, oversubscription: 2}"}[fabric]
        assert text.count(old) == 1
        text = text.replace(old, old.replace("}", f", server_ports: {ports}}}"))
    return text


def _compute_ports(topology: Topology, fabric: str) -> dict[tuple[str, int], tuple[str, int]]:
    return {(link.a.device, link.a.number): (link.z.device, link.z.number)
            for link in topology.fabric(fabric).links_in(NODE_LEAF) if link.a.device.startswith("gpu")}


def test_declared_server_ports_keep_every_compute_port_when_servers_are_added() -> None:
    """Field review (2026-12-03): two OSS more on h100-4su re-patched 382 DGX ports, as the compute nodes fill the
    first leaf (pair) up to the servers' block and on. With ``server_ports`` the block is declared: 4 -> 8 OSS moves
    no DGX port on the single-homed in-band fabric nor on the dual-homed storage fabric, and the servers stand at
    the top of the first leaf (pair), the ports between them and the DGX nodes free."""
    declared = {"inband": 10, "storage": 10}
    before = compile_topology(build_cluster(load_text(_h100_with_servers(4, declared), "s.yaml")))
    after = compile_topology(build_cluster(load_text(_h100_with_servers(8, declared), "s.yaml")))
    for fabric in declared:
        assert _compute_ports(before, fabric) == _compute_ports(after, fabric), fabric
    four, eight = (_compute_ports(compile_topology(build_cluster(load_text(_h100_with_servers(n, {}), "s.yaml"))),
                                  "inband") for n in (4, 8))
    assert sum(four[port] != eight.get(port) for port in four) > 200, "without the block the DGX ports shift"
    top = sorted((link.z.number, link.a.device) for link in after.fabric("inband").links_in(NODE_LEAF)
                 if link.z.device == "inband-leaf001")
    assert [node for _, node in top[-10:]] == [f"oss{n:02d}" for n in range(8, 0, -1)] + ["mds02", "mds01"]
    assert [number for number, node in top if node.startswith("gpu")][-1] == 14, "DGX ports stop below the block"
    pair = [link for link in after.fabric("storage").links_in(NODE_LEAF)
            if link.z.device in ("storage-leaf001", "storage-leaf002") and not link.a.device.startswith("gpu")]
    down = after.fabric("storage").switches_in(Tier.LEAF)[0].down_ports
    assert len(pair) == 20 and min(link.z.number for link in pair) > down - 10
    assert not [f for f in run_checks(after) if f.severity is Severity.ERROR]


@pytest.mark.parametrize(("fabric", "ports", "message"), [
    ("inband", 4, "the servers have 6 ports on this fabric but server_ports keeps 4"),
    ("inband", 7, "server_ports 7 is no multiple of a compute node's 2 ports here"),
    ("storage", 4, "the servers have 12 ports on this fabric but server_ports keeps 4 on each leaf of the first pair"),
])
def test_a_server_block_too_small_or_splitting_a_node_is_refused(fabric: str, ports: int, message: str) -> None:
    """A declared block the servers overflow, or one that would split a compute node's ports over two leaves, is
    a spec error at the fabric's topology with the value to use."""
    with pytest.raises(SpecError) as caught:
        compile_topology(build_cluster(load_text(_h100_with_servers(4, {fabric: ports}), "s.yaml")))
    [issue] = caught.value.issues
    assert issue.path == f"fabrics.{fabric}.topology" and issue.message.startswith(message), issue
    assert issue.hint


def test_server_ports_are_refused_on_rail_optimized_fabrics() -> None:
    """Rail-optimized slots are fixed by rail and SU, not filled port by port: no block to keep."""
    text = (REPO / "inventories" / "h100-4su.yaml").read_text().replace(
        "topology: {kind: rail-optimized, scalable_unit: 32,", "topology: {kind: rail-optimized, server_ports: 2, "
        "scalable_unit: 32,", 1)
    with pytest.raises(SpecError) as caught:
        build_cluster(load_text(text, "s.yaml"))
    assert [(i.path, i.message.split(",")[0]) for i in caught.value.issues] == [
        ("fabrics.compute.topology.server_ports", "rail-optimized leaves are fixed by rail and scalable unit")]


def test_fat_tree_packs_node_ports_in_order() -> None:
    """QM9700 fat-tree, 1:1: 32 hosts + 32 uplinks per leaf; a node's 8 ports are consecutive."""
    spec = cluster_spec([group("h{n:02d}", 10, "hgx-8gpu-generic", ["A"], per_rack=4)],
                        ib_compute(kind="fat-tree"), [{"name": "A", "racks": 3}])
    topo = compile_spec(spec)
    ft = topo.fabric("compute")
    assert counts(ft) == ([3, 2, 0], [80, 96, 0])
    assert {(s.down_ports, s.up_ports) for s in ft.switches_in(Tier.LEAF)} == {(32, 32)}
    placed = sorted((link.z.device, link.z.number, link.a.device, link.a.number) for link in ft.links_in(NODE_LEAF))
    expected = [(f"compute-leaf{k // 32 + 1:03d}", k % 32 + 1, f"h{k // 8 + 1:02d}", k % 8 + 1) for k in range(80)]
    assert placed == expected
    assert ft.rails == 0 and all(link.rail is None for link in ft.links)
    assert_even_spread(ft)
    assert errors(topo) == []


def roce_storage(**topology: Any) -> dict[str, Any]:
    return {"storage": {"type": "roce", "speed": "400G", "switch": "SN5600",
                        "topology": {"kind": "leaf-spine", **topology}}}


def test_storage_is_dual_homed_by_default(inventory: dict[str, Topology]) -> None:
    """h100-4su storage: leaves in pairs, both storage ports of every DGX and server on the two leaves of one pair
    (NVIDIA's RAs cable storage to two switches); each port is addressed in its own leaf's subnet."""
    topo = inventory["h100-4su"]
    ft = topo.fabric("storage")
    assert ft.fabric.topology.attachment.value == "dual-homed"
    leaves = {s.name: s.index for s in ft.switches_in(Tier.LEAF)}
    assert len(leaves) % 2 == 0
    by_node: dict[str, list[str]] = defaultdict(list)
    for link in ft.links_in(NODE_LEAF):
        by_node[link.a.device].append(link.z.device)
    assert len(by_node) == 127 + 6
    for node, on in by_node.items():
        pair = {(leaves[leaf] - 1) // 2 for leaf in on}
        assert len(on) == 2 and len(set(on)) == 2 and len(pair) == 1, f"{node}: {on}"
    subnets = {(host[0], host[1]): subnet.leaf for subnet in topo.addresses["storage"].hosts for host in subnet.hosts}
    assert subnets[("gpu001", 1)] != subnets[("gpu001", 2)]
    assert errors(topo) == []


def test_dual_homed_odd_ports_start_on_the_emptier_leaf() -> None:
    """One-port nodes alternate sides; a three-port node puts two ports on the emptier leaf; a node that does not
    fit its pair starts the next one."""
    one = {"role": "storage", "height_u": 1,
           "nics": {"storage": [{"port": "P1", "model": "ConnectX-7-QSFP112-2P", "netdev": "enp1s0f0np0"}]}}
    three = {"role": "storage", "height_u": 1,
             "nics": {"storage": [{"port": f"P{i}", "model": "ConnectX-7-QSFP112-2P"} for i in range(3)]}}
    spec = cluster_spec([group("a{n:02d}", 3, "one", ["A"], per_rack=8), group("b{n:02d}", 1, "three", ["A"],
                                                                            per_rack=8, start_u=20)],
                        roce_storage(), [{"name": "A", "racks": 1}], {"one": one, "three": three})
    ft = compile_spec(spec).fabric("storage")
    placed = sorted((link.a.device, link.a.number, link.z.device) for link in ft.links_in(NODE_LEAF))
    assert placed == [("a01", 1, "storage-leaf001"), ("a02", 1, "storage-leaf002"), ("a03", 1, "storage-leaf001"),
                      ("b01", 1, "storage-leaf002"), ("b01", 2, "storage-leaf001"), ("b01", 3, "storage-leaf002")]


def test_single_attachment_packs_a_node_on_one_leaf() -> None:
    spec = cluster_spec([group("g{n:02d}", 4, "dgx-h100", ["A"], per_rack=4)], roce_storage(attachment="single"),
                        [{"name": "A", "racks": 1}])
    ft = compile_spec(spec).fabric("storage")
    assert counts(ft)[0] == [1, 0, 0] and {link.z.device for link in ft.links_in(NODE_LEAF)} == {"storage-leaf001"}


def test_dual_homed_needs_packed_leaves() -> None:
    spec = cluster_spec([group("g{n:02d}", 4, "dgx-h100", ["A"], per_rack=4)],
                        {"storage": {**roce_storage()["storage"], "topology": {"kind": "top-of-rack",
                                                                                "attachment": "dual-homed"}}},
                        [{"name": "A", "racks": 1}])
    with pytest.raises(SpecError, match="top-of-rack leaves are fixed by rack"):
        compile_spec(spec)


def test_leaf_spine_never_grows_a_third_tier() -> None:
    spec = cluster_spec([group("h{n:03d}", 300, "hgx-8gpu-generic", ["A"], per_rack=4)],
                        ib_compute(kind="leaf-spine"), [{"name": "A", "racks": 75}])
    with pytest.raises(SpecError, match="at most two tiers"):
        compile_spec(spec)
    fat = compile_spec({**spec, "fabrics": ib_compute(kind="fat-tree")}).fabric("compute")
    assert fat.tiers == 3
    with pytest.raises(SpecError, match="at most two tiers") as caught:
        compile_spec({**spec, "fabrics": ib_compute(kind="leaf-spine", tiers=3)})
    assert [i.path for i in caught.value.issues] == ["fabrics.compute.topology.tiers"]


def test_top_of_rack_one_leaf_per_rack(inventory: dict[str, Topology]) -> None:
    topo = inventory["h100-4su"]
    ft = topo.fabric("oob")
    leaves = ft.switches_in(Tier.LEAF)
    racks = {n.rack.name for n in topo.cluster.nodes}
    # the DGX racks, then D09 and D10 of the storage servers
    assert {s.rack for s in leaves} == racks and len(leaves) == len(racks) == 32 + 2
    assert all(s.model.name == "SN2201" and s.name == f"oob-{s.rack.lower()}" for s in leaves if s.rack)
    rack_of = {n.name: n.rack.name for n in topo.cluster.nodes}
    by_leaf = {s.name: s for s in leaves}
    for link in ft.links_in(NODE_LEAF):
        leaf = by_leaf[link.z.device]
        assert rack_of[link.a.device] == leaf.rack
        assert link.speed == "1G" and 1 <= link.z.number <= 48 and link.z.name == str(link.z.number)
    per_leaf = Counter(link.z.device for link in ft.links_in(NODE_LEAF))
    assert all(per_leaf[s.name] == s.down_ports for s in leaves)
    assert per_leaf["oob-d01"] == 4 + 2  # the last DGX rack also holds the UFM HA pair
    for link in ft.links_in(LEAF_SPINE):  # SN2201 uplinks: QSFP28 cages 49-52 at 100G
        assert link.speed == "100G" and link.a.name in {"49", "50"} and link.a.number in {49, 50}
    assert {s.up_ports for s in leaves} == {2}
    assert len(ft.links_in(LEAF_SPINE)) == 2 * 34
    assert_even_spread(ft)


def test_top_of_rack_skips_empty_racks() -> None:
    spec = cluster_spec([group("s{n:02d}", 6, "hgx-8gpu-generic", ["A"], per_rack=3)],
                        {"oob": {"type": "ethernet", "speed": "1G", "uplink_speed": "100G",
                                 "switch": {"leaf": "SN2201", "spine": "SN4700"},
                                 "topology": {"kind": "top-of-rack"}}},
                        [{"name": "A", "racks": 5}])
    ft = compile_spec(spec).fabric("oob")
    assert [s.rack for s in ft.switches_in(Tier.LEAF)] == ["A01", "A02"]
    assert counts(ft) == ([2, 2, 0], [6, 4, 0])


# -- tiers and scalable units --------------------------------------------------------------------------------------


def test_single_leaf_auto_has_one_tier(inventory: dict[str, Topology]) -> None:
    storage = inventory["lab-1su"].fabric("storage")  # dual-homed: the pair of leaves needs spines
    assert storage.tiers == 2 and counts(storage)[0] == [2, 2, 0]
    profile = {"one-rail": {"height_u": 1, "nics": {"compute": [{"port": "P1", "model": "ConnectX-7-OSFP"}]}}}
    spec = cluster_spec([group("n{n:02d}", 20, "one-rail", ["A"], per_rack=20)], ib_compute(su=32),
                        [{"name": "A", "racks": 1}], profile)
    ft = compile_spec(spec).fabric("compute")
    assert ft.tiers == 1 and counts(ft) == ([1, 0, 0], [20, 0, 0])


def test_single_leaf_with_tiers_2_gets_a_spine() -> None:
    profile = {"one-rail": {"height_u": 1, "nics": {"compute": [{"port": "P1", "model": "ConnectX-7-OSFP"}]}}}
    spec = cluster_spec([group("n{n:02d}", 20, "one-rail", ["A"], per_rack=20)], ib_compute(su=32, tiers=2),
                        [{"name": "A", "racks": 1}], profile)
    ft = compile_spec(spec).fabric("compute")
    assert ft.tiers == 2 and counts(ft) == ([1, 1, 0], [20, 32, 0])


def test_partial_su_warns_and_builds_full_leaves() -> None:
    spec = cluster_spec([group("gpu{n:04d}", 40, "dgx-h100", ["A"], per_rack=4)], ib_compute(su=32),
                        [{"name": "A", "racks": 10}])
    topo = compile_spec(spec)
    ft = topo.fabric("compute")
    assert ft.scalable_units == 2
    assert counts(ft)[0][0] == 16 and {s.down_ports for s in ft.switches_in(Tier.LEAF)} == {32}
    assert len(ft.links_in(NODE_LEAF)) == 40 * 8
    assert len(ft.links_in(LEAF_SPINE)) == 16 * 32  # cabled upward in full
    findings = run_checks(topo)
    assert [f for f in findings if f.severity is Severity.ERROR] == []
    partial = [f for f in findings if f.check == "partial-su"]
    assert len(partial) == 1 and partial[0].severity is Severity.WARNING
    assert partial[0].subject == "SU 2" and "8 of 32" in partial[0].message


def test_full_su_has_no_partial_warning() -> None:
    assert [f for f in run_checks(compile_spec(superpod(2))) if f.check == "partial-su"] == []


@pytest.mark.parametrize("path", INVENTORIES, ids=lambda p: p.stem)
def test_checks_find_no_errors_on_inventories(path: Path, inventory: dict[str, Topology]) -> None:
    assert errors(inventory[path.stem]) == []


def test_compile_is_deterministic_across_hash_seeds() -> None:
    """Rendered artifacts do not depend on PYTHONHASHSEED (set/dict iteration order of strings)."""
    script = ("import hashlib,sys;from pathlib import Path;from fabricgen.spec.load import load_text;"
              "from fabricgen.stages.build import build_cluster;from fabricgen.stages.compile import compile_topology;"
              "from fabricgen.stages.render import render;p=Path(sys.argv[1]);"
              "a=render(compile_topology(build_cluster(load_text(p.read_text(),'h.yaml'))));"
              "print(hashlib.sha256(b''.join(x.path.encode()+x.content for x in a)).hexdigest())")
    spec = str(REPO / "inventories" / "h100-4su.yaml")
    digests = {subprocess.run([sys.executable, "-c", script, spec], check=True, capture_output=True, text=True,
                              env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2")}
    assert len(digests) == 1


# -- regressions (each was a bug: port reuse, double cabling, a false port-budget error) ---------------------------


def test_rail_optimized_storage_fabric_is_rejected() -> None:
    """Non-compute NICs have no rail: all storage NICs of a node landed on one rail-0 leaf slot (ports used twice)."""
    spec = cluster_spec([group("gpu{n:02d}", 4, "dgx-h100", ["A"], per_rack=4)],
                        {"storage": {"type": "roce", "speed": "400G", "switch": "SN5600",
                                     "topology": {"kind": "rail-optimized", "scalable_unit": 4}}},
                        [{"name": "A", "racks": 1}])
    with pytest.raises(SpecError, match="rail-optimized fabrics attach compute NICs") as caught:
        compile_spec(spec)
    assert [i.path for i in caught.value.issues] == ["fabrics.storage.topology.kind"]


def test_node_port_is_cabled_in_one_fabric_only() -> None:
    """Two fabrics of one role attaching the same group would cable every NIC port twice."""
    fabrics = ib_compute(su=4) | {"compute2": {**ib_compute(su=4)["compute"], "role": "compute"}}
    spec = cluster_spec([group("gpu{n:02d}", 4, "dgx-h100", ["A"], per_rack=4)], fabrics,
                        [{"name": "A", "racks": 1}])
    with pytest.raises(SpecError, match="already attach to fabric 'compute'"):
        compile_spec(spec)
    spec["fabrics"]["compute2"]["nodes"] = ["gpu{n:02d}"]  # naming the group explicitly does not make it legal
    with pytest.raises(SpecError, match="already attach to fabric 'compute'"):
        compile_spec(spec)


def test_split_compute_islands_share_no_port() -> None:
    """Two fabrics of one role over disjoint node groups are legal and cable each NIC port once."""
    fabrics = {"compute": {**ib_compute(su=4)["compute"], "nodes": ["a{n:02d}"]},
               "compute2": {**ib_compute(su=4)["compute"], "role": "compute", "nodes": ["b{n:02d}"]}}
    spec = cluster_spec([group("a{n:02d}", 4, "dgx-h100", ["A"], per_rack=4),
                         group("b{n:02d}", 4, "dgx-h100", ["B"], per_rack=4)], fabrics,
                        [{"name": "A", "racks": 1}, {"name": "B", "racks": 1}])
    topo = compile_spec(spec)
    ports = Counter((link.a.device, link.a.name) for ft in topo.fabrics for link in ft.links_in(NODE_LEAF))
    assert len(ports) == 8 * 8 and max(ports.values()) == 1
    assert errors(topo) == []


def test_full_sn2201_rack_passes_port_budget() -> None:
    """SN2201 has 48 x 1G + 4 x 100G: a rack of 48 BMCs plus 2 uplinks fits (the check once counted 48 ports)."""
    profile = {"tiny": {"height_u": 1, "nics": {"bmc": {"port": "BMC", "model": "bmc-1g-rj45"}}}}
    spec = cluster_spec([group("n{n:03d}", 96, "tiny", ["A"], per_rack=48, start_u=1)],
                        {"oob": {"type": "ethernet", "speed": "1G", "uplink_speed": "100G",
                                 "switch": {"leaf": "SN2201", "spine": "SN4700"}, "topology": {"kind": "top-of-rack"}}},
                        [{"name": "A", "racks": 2}], profile)
    spec["facility"]["rack_units"] = 60
    topo = compile_spec(spec)
    leaves = topo.fabrics[0].switches_in(Tier.LEAF)
    assert {(s.down_ports, s.up_ports) for s in leaves} == {(48, 2)}
    assert errors(topo) == []
