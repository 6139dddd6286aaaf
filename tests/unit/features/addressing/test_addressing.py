"""The underlay address plan: loopbacks, /31 point-to-point links, per-leaf host subnets, ASNs, pool errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from netaddr import IPAddress, IPNetwork, IPSet

from fabricgen.core.errors import SpecError
from fabricgen.pipeline import compile_spec
from tests.conftest import INVENTORIES


def _storage(tmp_path: Path, addressing: str) -> Path:
    # The example's Lustre file systems sit in its host pool: they go, so pool errors are the only errors.
    text = (INVENTORIES / "h100-4su.yaml").read_text().split("\nlustre:\n", 1)[0] + "\n"
    start = text.index("    addressing:\n")
    marker = "      asn: {spine: 65000, leaf_base: 65100}\n"
    end = text.index(marker) + len(marker)
    end = text.index(marker) + len(marker)
    spec = tmp_path / "spec.yaml"
    spec.write_text(text[:start] + addressing + text[end:])
    return spec


def test_h100_storage_plan() -> None:
    topology = compile_spec(INVENTORIES / "h100-4su.yaml").topology
    plan = topology.addresses["storage"]
    ft = topology.fabric("storage")
    assert next(iter(plan.loopbacks.values())) == "10.22.0.1", "a /32 never takes the pool's .0"
    assert len(set(plan.loopbacks.values())) == len(ft.switches)
    assert set(plan.management) == {s.name for s in ft.switches}
    assert [plan.asn[s.name] for s in ft.switches if s.tier.value == "leaf"] == list(range(65100, 65106))
    assert {plan.asn[s.name] for s in ft.switches if s.tier.value == "spine"} == {65000}
    assert len(plan.p2p) == len(ft.links_in("leaf-spine"))
    for link in plan.p2p:
        lower, upper = IPNetwork(link.lower_ip), IPNetwork(link.upper_ip)
        assert lower.prefixlen == upper.prefixlen == 31 and lower.network == upper.network
        assert int(upper.ip) % 2 == 0 and int(lower.ip) == int(upper.ip) + 1
    for subnet in plan.hosts:
        network = IPNetwork(subnet.network)
        assert IPAddress(subnet.gateway) == network.network + 1
        assert all(IPAddress(ip) in network and IPAddress(ip) != network.broadcast for _, _, ip in subnet.hosts)
    host_ips = [ip for s in plan.hosts for _, _, ip in s.hosts]
    assert len(host_ips) == len(set(host_ips)) == len(ft.links_in("node-leaf"))


@pytest.mark.parametrize(("hosts", "p2p", "expected"), [
    ("10.20.0.0/16", "10.20.128.0/20", "10.20.0.0/16 overlaps storage.p2p (10.20.128.0/20)"),
    ("10.20.0.0/26", "10.21.0.0/20", "10.20.0.0/26's lower half (10.20.0.0/27, its host subnets: the upper half "
                                     "holds the pod ranges) is exhausted: the fabric needs 6 /25 blocks"),
    ("10.20.0.1/16", "10.21.0.0/20", "10.20.0.1/16 has host bits set (hint: did you mean 10.20.0.0/16?)"),
], ids=["overlap-names-both", "exhausted", "host-bits"])
def test_pool_errors(tmp_path: Path, hosts: str, p2p: str, expected: str) -> None:
    spec = _storage(tmp_path, f"    addressing:\n      hosts: {hosts}\n      p2p: {p2p}\n"
                              "      loopbacks: 10.22.0.0/24\n")
    with pytest.raises(SpecError) as caught:
        compile_spec(spec)
    assert expected in str(caught.value)


def test_ipoib_plan_one_subnet_per_rail() -> None:
    """InfiniBand: no loopbacks, links or ASNs; each rail's ports share one subnet, nodes in cluster order."""
    topology = compile_spec(INVENTORIES / "h100-4su.yaml").topology
    plan = topology.addresses["compute"]
    ft = topology.fabric("compute")
    assert not plan.loopbacks and not plan.p2p and not plan.asn
    assert [s.rail for s in plan.hosts] == list(range(8))
    node_order = [n.name for n in topology.cluster.nodes]
    for subnet in plan.hosts:
        network = IPNetwork(subnet.network)
        assert subnet.gateway == "" and subnet.leaf == ""
        assert len(subnet.hosts) + 2 <= network.size
        nodes = [node for node, _, _ in subnet.hosts]
        assert nodes == sorted(nodes, key=node_order.index)
        assert [IPAddress(ip) for _, _, ip in subnet.hosts] == [network.network + 1 + i for i in range(len(nodes))]
    rails = {(link.a.device, link.a.number): link.nic.rail for link in ft.links_in("node-leaf") if link.nic}
    assert all(rails[(node, port)] == s.rail for s in plan.hosts for node, port, _ in s.hosts)
    assert sum(len(s.hosts) for s in plan.hosts) == len(ft.links_in("node-leaf"))


def test_address_plan_artifacts_list_every_address_once() -> None:
    from fabricgen.features.addressing import render as address_plan

    topology = compile_spec(INVENTORIES / "h100-4su.yaml").topology
    files = {a.path: a.content.decode() for a in address_plan.render(topology)}
    storage = [line.split(",") for line in files["addressing/storage.csv"].splitlines()[1:]]
    plan = topology.addresses["storage"]
    expected = (len(plan.loopbacks) + len(plan.management) + 2 * len(plan.p2p) + len(plan.hosts)
                + sum(len(s.hosts) for s in plan.hosts) + len(plan.pods))
    assert len(storage) == expected
    assert len({row[3].split("/")[0] for row in storage}) == expected, "an address is given twice"

def test_pod_ranges_per_leaf_clear_of_every_host_address() -> None:
    """h100-4su's storage fabric carries Ethernet VFs on the DGX nodes: each of the six leaves they sit on gets a
    /23 (64 ports x 4 VFs + network, gateway, broadcast) from the host pool's upper half, leaf n at its n-th block,
    its gateway the first address, for its DGX nodes only (the first pair's top ports hold the six storage servers,
    which take no VFs); the in-band fabric (no SR-IOV) none at all."""
    from fabricgen.features.addressing import render as address_plan

    topology = compile_spec(INVENTORIES / "h100-4su.yaml").topology
    plan = topology.addresses["storage"]
    assert [(p.leaf, p.network, p.gateway) for p in plan.pods] == [
        ("storage-leaf001", "10.20.128.0/23", "10.20.128.1"), ("storage-leaf002", "10.20.130.0/23", "10.20.130.1"),
        ("storage-leaf003", "10.20.132.0/23", "10.20.132.1"), ("storage-leaf004", "10.20.134.0/23", "10.20.134.1"),
        ("storage-leaf005", "10.20.136.0/23", "10.20.136.1"), ("storage-leaf006", "10.20.138.0/23", "10.20.138.1")]
    hosts = IPSet(IPNetwork(s.network) for s in plan.hosts)
    for pod in plan.pods:
        assert not IPSet([IPNetwork(pod.network)]) & hosts
        assert IPNetwork(pod.network) in IPNetwork("10.20.0.0/16")
        assert all(n.startswith("gpu") for n in pod.nodes)
    assert [len(pod.nodes) for pod in plan.pods] == [58, 58, 64, 64, 5, 5]  # 127 DGX, a port on each side
    assert topology.addresses["inband"].pods == ()
    files = {a.path: a.content.decode() for a in address_plan.render(topology)}
    rows = files["addressing/storage-pod-ranges.csv"].splitlines()
    assert rows[0] == "fabric,leaf,network,gateway,range_start,range_end,nodes"
    assert rows[1].startswith("storage,storage-leaf001,10.20.128.0/23,10.20.128.1,10.20.128.2,10.20.129.254,"
                           "gpu001 gpu002 ")
    assert "addressing/inband-pod-ranges.csv" not in files
