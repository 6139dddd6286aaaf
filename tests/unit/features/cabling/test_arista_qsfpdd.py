"""Arista QSFP-DD cabling: a 7060DX5-64S (QSFP-DD, 8 x 50G-PAM4) leaf reaches 400G hosts with 4 x 100G-PAM4 optics
(QSFP112 or OSFP ConnectX-7) only through a DR4 module, and a 7060X6-64PE spine (OSFP cages split 2 x 400G) through
one twin-MPO OSFP module per two leaf links; QSFP-DD to QSFP-DD takes DAC, then AOC, SR8 and DR4 by length."""

from __future__ import annotations

from collections import Counter

import pytest

from fabricgen.model.topology import Topology
from fabricgen.spec.load import load_text
from fabricgen.stages.build import build_cluster
from fabricgen.stages.compile import compile_topology
from tests.helpers.cabling import bom_counts

SPEC = """
apiVersion: fabricgen/v1
kind: Cluster
metadata: {name: qdd, site: s1}
facility:
  rows:
    - {name: A, racks: 4}
    - {name: N, racks: 2, kind: network}
node_profiles:
  srv:
    height_u: 2
    nics:
      storage:
        - {dev: mlx5_0, netdev: eth0, port: P1, model: NIC}
        - {dev: mlx5_1, netdev: eth1, port: P2, model: NIC}
nodes:
  - {name: "s{n:02d}", count: 32, profile: srv, placement: {rows: [A], per_rack: 8, start_u: 2}}
fabrics:
  storage:
    type: roce
    speed: 400G
    switch: {leaf: 7060DX5-64S, spine: SPINE}
    topology: {kind: leaf-spine}
"""


def _topology(nic: str, spine: str = "7060X6-64PE") -> Topology:
    text = SPEC.replace("NIC", nic).replace("SPINE", spine)
    return compile_topology(build_cluster(load_text(text, "qdd.yaml")))


@pytest.mark.parametrize(("nic", "medium", "host_optic"), [
    ("ConnectX-7-QSFP112-2P", "qsfpdd-400g-dr4-host-qsfp112", "MMS1X00-NS400"),
    ("ConnectX-7-OSFP", "qsfpdd-400g-dr4-host-osfp", "MMS4X00-NS400"),
])
def test_400g_hosts_on_a_qsfpdd_leaf_take_dr4(nic: str, medium: str, host_optic: str) -> None:
    """No DAC joins 8 x 50G to 4 x 100G: every host link is a DR4 pair, an NVIDIA optic at the NIC."""
    hosts = [c for c in _topology(nic).cables if c.tier == "node-leaf"]
    assert {c.medium.name for c in hosts} == {medium}
    assert {(c.a_optic and c.a_optic.part, c.z_optic and c.z_optic.part) for c in hosts} == {
        (host_optic, "QDD-400G-DR4")}


def test_qsfpdd_leaf_to_osfp_spine_shares_one_twin_port_module_per_two_links() -> None:
    topology = _topology("ConnectX-7-QSFP112-2P")
    uplinks = [c for c in topology.cables if c.tier == "leaf-spine"]
    assert {c.medium.name for c in uplinks} == {"qsfpdd-osfp-400g-dr4"}
    assert {(c.a.form_factor, c.z.form_factor) for c in uplinks} == {("QSFP-DD", "OSFP")}
    assert {(c.a_optic and c.a_optic.part, c.z_optic and c.z_optic.part) for c in uplinks} == {
        ("QDD-400G-DR4", "OSFP-800G-2XDR4")}
    bom = bom_counts(topology)
    hosts = sum(1 for c in topology.cables if c.tier == "node-leaf")
    assert bom["OSFP-800G-2XDR4"] == len(uplinks) // 2  # two 400G links per OSFP cage
    assert bom["QDD-400G-DR4"] == len(uplinks) + hosts    # one per leaf cage, uplinks and host ports


def test_qsfpdd_to_qsfpdd_goes_dac_aoc_sr8_dr4_by_reach() -> None:
    """Leaf and spine both QSFP-DD: the cheapest row that reaches, in catalog order."""
    uplinks = [c for c in _topology("ConnectX-7-QSFP112-2P", spine="7060DX5-64S").cables if c.tier == "leaf-spine"]
    picked = Counter(c.medium.name for c in uplinks)
    assert set(picked) <= {"qsfpdd-400g-dac", "qsfpdd-400g-aoc", "qsfpdd-400g-sr8", "qsfpdd-400g-dr4"}
    for cable in uplinks:
        assert cable.run_m <= cable.length_m <= cable.medium.reach_m
        if cable.medium.name == "qsfpdd-400g-aoc":
            assert cable.run_m > 2.5  # the DAC would have reached
    assert {c.z_optic.part for c in uplinks if c.z_optic} <= {"QDD-400G-SR8", "QDD-400G-DR4"}
