"""The lab's plan of h100-4su's storage fabric: a namespace per switch, a veth per planned switch-to-switch
cable, each end the NOS port the read-back finds at the planned cage; a cable with no port in a configuration
is named, with every other one, in one error."""
from __future__ import annotations

import dataclasses
from collections import Counter

import pytest

from fabricgen.core.errors import ConfigReadError
from fabricgen.features.ethernet.nos.sonic.routing import routing
from fabricgen.features.lab.plan import IFNAMSIZ, PREFIX, lab_fabric, lab_id
from fabricgen.model.routing import SwitchRouting
from fabricgen.model.topology import LEAF_SPINE, FabricTopology
from fabricgen.pipeline import compile_spec
from tests.conftest import INVENTORIES, REPO
from tests.helpers.ethernet import STORAGE_SWITCHES

GOLDEN = REPO / "tests/golden/h100-4su/switches"


@pytest.fixture(scope="module")
def storage() -> FabricTopology:
    [ft] = [ft for ft in compile_spec(INVENTORIES / "h100-4su.yaml").topology.fabrics if ft.fabric.name == "storage"]
    return ft


@pytest.fixture(scope="module")
def switches() -> dict[str, SwitchRouting]:
    return {s: routing(s, (GOLDEN / s / "config_db.json").read_bytes()) for s in STORAGE_SWITCHES}


def test_one_veth_per_planned_cable_on_the_configured_ports(storage: FabricTopology,
                                                            switches: dict[str, SwitchRouting]) -> None:
    lab = lab_fabric("h100-4su", storage, switches)
    assert sorted(lab.namespaces) == sorted(STORAGE_SWITCHES)
    assert all(n.startswith(f"{PREFIX}{lab_id('h100-4su', 'storage')}-") for n in lab.namespaces.values())
    links = [link for link in storage.links if link.tier == LEAF_SPINE]
    assert len(lab.veths) == len(links) == 384
    by_namespace = {n: s for s, n in lab.namespaces.items()}
    for link, veth in zip(links, lab.veths, strict=True):
        leaf, spine = switches[by_namespace[veth.a_namespace]], switches[by_namespace[veth.z_namespace]]
        assert (leaf.name, spine.name) == (link.a.device, link.z.device)
        a = next(p for p in leaf.ports if p.name == veth.a_interface)
        z = next(p for p in spine.ports if p.name == veth.z_interface)
        assert (a.panel, z.panel) == (link.a.name, link.z.name)
        # the configs agree with the plan: each end's description names the other, both on one /31
        assert a.description == f"{spine.name}:{z.panel}" and z.description == f"{leaf.name}:{a.panel}"
        assert a.addresses[0].network == z.addresses[0].network
    ends = Counter((v.a_namespace, v.a_interface) for v in lab.veths) + Counter(
        (v.z_namespace, v.z_interface) for v in lab.veths)
    assert set(ends.values()) == {1} and all(len(name) <= IFNAMSIZ for _, name in ends)


def test_lab_ids_differ_per_cluster_and_fabric() -> None:
    assert len({lab_id("a", "storage"), lab_id("b", "storage"), lab_id("a", "compute"), lab_id("as", "torage")}) == 4


def test_a_cable_without_a_configured_port_is_named(storage: FabricTopology,
                                                    switches: dict[str, SwitchRouting]) -> None:
    leaf = switches["storage-leaf001"]
    broken = dict(switches)
    broken["storage-leaf001"] = dataclasses.replace(leaf, ports=tuple(p for p in leaf.ports if p.panel != "33/1"))
    del broken["storage-spine04"]
    with pytest.raises(ConfigReadError) as caught:
        lab_fabric("h100-4su", storage, broken)
    lines = str(caught.value).splitlines()
    assert "fabric storage: storage-leaf001 port 33/1 (cable storage-leaf001:33/1 - storage-spine01:1/1) is in no " \
           "port of its configuration" in lines
    assert sum("storage-spine04 port" in line for line in lines) == 96 and len(lines) == 97
