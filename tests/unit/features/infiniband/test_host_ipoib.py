"""IPoIB host addresses: one netplan file per node on an InfiniBand fabric with an IPoIB plan (netplan accepts it
in tests/external/infiniband/test_host_ipoib.py)."""

from __future__ import annotations

import pytest
import yaml
from netaddr import IPNetwork

from fabricgen.features.infiniband import ipoib as host_ipoib
from fabricgen.model.topology import Topology
from fabricgen.pipeline import compile_spec
from tests.conftest import INVENTORIES


@pytest.fixture(scope="module")
def topology() -> Topology:
    return compile_spec(INVENTORIES / "h100-4su.yaml").topology


@pytest.fixture(scope="module")
def files(topology: Topology) -> dict[str, bytes]:
    return {a.path: a.content for a in host_ipoib.render(topology)}


def test_every_node_on_the_fabric_gets_its_plan_addresses(topology: Topology, files: dict[str, bytes]) -> None:
    plan = topology.addresses["compute"]
    expected: dict[str, dict[str, str]] = {}
    for node in topology.cluster.nodes:
        nics = {n.index + 1: n for n in node.profile.compute}
        for subnet in plan.hosts:
            prefix = IPNetwork(subnet.network).prefixlen
            for name, port, ip in subnet.hosts:
                if name == node.name:
                    expected.setdefault(node.name, {})[nics[port].netdev] = f"{ip}/{prefix}"
    assert set(files) == {f"hosts/{n}/netplan-ipoib.yaml" for n in expected}
    for node, ports in expected.items():
        ethernets = yaml.safe_load(files[f"hosts/{node}/netplan-ipoib.yaml"])["network"]["ethernets"]
        assert {dev: e["addresses"] for dev, e in ethernets.items()} == {d: [a] for d, a in ports.items()}
        assert all(e["infiniband-mode"] == "datagram" and e["mtu"] == 4092 and "routes" not in e
                   for e in ethernets.values())


def test_no_ipoib_files_without_a_plan() -> None:
    assert host_ipoib.render(compile_spec(INVENTORIES / "lab-1su.yaml").topology) == []
