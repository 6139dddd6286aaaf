"""IPoIB host interfaces: each node's IPoIB addresses on the interface carrying its IPoIB partition (netplan
accepts the netplan files and systemd's own documentation every networkd key, in
tests/external/infiniband/test_host_ipoib.py)."""

from __future__ import annotations

import configparser

import pytest
import yaml
from netaddr import IPNetwork

from fabricgen.features.infiniband import ipoib as host_ipoib
from fabricgen.model.topology import Topology
from fabricgen.pipeline import compile_spec
from tests.conftest import INVENTORIES, REPO

MULTI_TENANT = REPO / "tests/data/infiniband/multi-tenant.yaml"


@pytest.fixture(scope="module")
def topology() -> Topology:
    return compile_spec(INVENTORIES / "h100-4su.yaml").topology


@pytest.fixture(scope="module")
def files(topology: Topology) -> dict[str, bytes]:
    return {a.path: a.content for a in host_ipoib.render(topology)}


def test_compute_nodes_get_their_plan_addresses_on_the_parent(topology: Topology, files: dict[str, bytes]) -> None:
    """h100-4su runs IPoIB on tenant-a, the compute partition at P_Key index 0: the parent interfaces carry it. The
    UFM appliances are members of no IPoIB partition: no file."""
    plan = topology.addresses["compute"]
    expected: dict[str, dict[str, str]] = {}
    for node in topology.cluster.nodes:
        if node.profile.role != "compute":
            continue
        nics = {n.index + 1: n for n in node.profile.compute}
        for subnet in plan.hosts:
            prefix = IPNetwork(subnet.network).prefixlen
            for name, port, ip in subnet.hosts:
                if name == node.name:
                    expected.setdefault(node.name, {})[nics[port].netdev] = f"{ip}/{prefix}"
    assert set(files) == {f"hosts/{n}/{f}" for n in expected for f in ("netplan-ipoib.yaml", "sysctl-ipoib.conf")}
    for node, ports in expected.items():
        ethernets = yaml.safe_load(files[f"hosts/{node}/netplan-ipoib.yaml"])["network"]["ethernets"]
        assert {dev: e["addresses"] for dev, e in ethernets.items()} == {d: [a] for d, a in ports.items()}
        assert all(e["infiniband-mode"] == "datagram" and e["mtu"] == 4092 and "routes" not in e and e["optional"]
                   for e in ethernets.values())
        sysctl = [line for line in files[f"hosts/{node}/sysctl-ipoib.conf"].decode().splitlines()
                  if line and not line.startswith("#")]
        assert sysctl == [f"net/ipv4/conf/{dev}/{key}" for dev in ports for key in ("arp_ignore = 1",
                                                                                     "arp_announce = 2")]
    gpu001 = files["hosts/gpu001/netplan-ipoib.yaml"].decode()
    assert "partition tenant-a (0x0001) at P_Key index 0, on the parent" in gpu001


def test_no_ipoib_files_without_a_plan() -> None:
    assert host_ipoib.render(compile_spec(INVENTORIES / "lab-1su.yaml").topology) == []


def _ini(content: bytes) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(strict=False)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string(content.decode())
    return parser


def test_ipoib_off_index_0_runs_on_child_interfaces() -> None:
    """multi-tenant: index 0 holds each tenant's compute partition, IPoIB runs on each tenant's IPoIB partition
    (beta: 0x0022): a child ib<n>.8022 per port, created by systemd-networkd with the full-member P_Key, the address
    on the child and none on the parent; no netplan file."""
    topology = compile_spec(MULTI_TENANT).topology
    files = {a.path: a.content for a in host_ipoib.render(topology)}
    assert not [p for p in files if p.endswith("netplan-ipoib.yaml")]
    nodes = {p.split("/")[1] for p in files}
    assert nodes == {f"alpha{i:02d}" for i in range(1, 5)} | {f"beta{i:02d}" for i in range(1, 4)}
    base = "hosts/beta02/systemd-network/61-fabricgen-"
    assert len([p for p in files if p.startswith("hosts/beta02/")]) == 8 * 3 + 1  # + sysctl-ipoib.conf
    assert "net/ipv4/conf/ib3.8022/arp_ignore = 1" in files["hosts/beta02/sysctl-ipoib.conf"].decode()
    netdev = _ini(files[f"{base}ib3.8022.netdev"])
    assert dict(netdev["NetDev"]) == {"Name": "ib3.8022", "Kind": "ipoib", "MTUBytes": "4092"}
    assert dict(netdev["IPoIB"]) == {"PartitionKey": "0x8022", "Mode": "datagram"}
    parent = _ini(files[f"{base}ib3.network"])
    assert parent["Match"]["Name"] == "ib3" and parent["Network"]["IPoIB"] == "ib3.8022"
    assert "Address" not in parent["Network"]
    child = _ini(files[f"{base}ib3.8022.network"])
    plan = {(name, port): f"{ip}/{IPNetwork(s.network).prefixlen}" for s in topology.addresses["compute"].hosts
            for name, port, ip in s.hosts}
    assert child["Network"]["Address"] == plan[("beta02", 4)]
