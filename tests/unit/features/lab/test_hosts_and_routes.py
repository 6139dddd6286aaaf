"""The lab's pure parts beyond the switches: which hosts a sample runs, a host namespace's ``ip -batch`` from its
rendered netplan (a bond as a bridge over its primary), netplan that is not netplan, the routes eBGP's rules give
each switch of h100-4su's storage fabric (64 paths on a leaf, 16 on a spine, no spine learning another spine),
a session that cannot come up taken out of the expectation, a cable without a session named, and the CLI's refusal
without root or FRR."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fabricgen.cli import app
from fabricgen.core.errors import ConfigReadError
from fabricgen.features.ethernet.nos.sonic.routing import routing
from fabricgen.features.lab import netns
from fabricgen.features.lab.check import expected_routes, narrowed, unsessioned_cables
from fabricgen.features.lab.netplan import host_interfaces
from fabricgen.features.lab.plan import lab_fabric, sample_hosts
from fabricgen.model.routing import SwitchRouting
from fabricgen.model.topology import FabricTopology
from fabricgen.pipeline import compile_spec
from tests.conftest import INVENTORIES, REPO
from tests.helpers.ethernet import STORAGE_LEAVES, STORAGE_SWITCHES

GOLDEN = REPO / "tests/golden/h100-4su"


@pytest.fixture(scope="module")
def compiled_fabrics() -> dict[str, tuple[FabricTopology, dict[str, object]]]:
    compiled = compile_spec(INVENTORIES / "h100-4su.yaml")
    nodes = {n.name: n for n in compiled.topology.cluster.nodes}
    return {ft.fabric.name: (ft, nodes) for ft in compiled.topology.fabrics}


@pytest.fixture(scope="module")
def switches() -> dict[str, SwitchRouting]:
    return {s: routing(s, (GOLDEN / "switches" / s / "config_db.json").read_bytes()) for s in STORAGE_SWITCHES}


def test_a_sample_is_the_first_hosts_of_each_leaf_and_every_storage_server(compiled_fabrics: dict) -> None:
    ft, nodes = compiled_fabrics["storage"]
    # gpu001 is first on leaf001 and leaf002 (dual-homed), gpu059 on leaf003/004, gpu123 on leaf005/006; the
    # servers count down from the first pair's last ports (mds01 on the last), in plan (port) order after its DGXs
    assert sample_hosts(ft, nodes, 1) == ("gpu001", "oss04", "oss03", "oss02", "oss01", "mds02", "mds01", "gpu059",
                                          "gpu123")
    assert sample_hosts(ft, nodes, 2)[:5] == ("gpu001", "gpu002", "oss04", "oss03", "oss02")
    assert len(sample_hosts(ft, nodes, None)) == 127 + 6


def test_host_batch_from_netplan_with_a_bond() -> None:
    path = GOLDEN / "hosts/gpu001/netplan-inband.yaml"
    interfaces = host_interfaces([(str(path), path.read_bytes())], ["enp170s0f1np1", "enp41s0f1np1"])
    assert [i.name for i in interfaces] == ["bond0", "enp170s0f1np1", "enp41s0f1np1"]
    lines = netns.host_batch(interfaces, {"enp170s0f1np1", "enp41s0f1np1"}).splitlines()
    assert lines[:8] == ["link set lo up", "link add bond0 type bridge", "link set bond0 mtu 9000",
                         "link set enp170s0f1np1 master bond0", "address add 10.30.0.2/27 dev bond0",
                         "link set bond0 up", "link set enp170s0f1np1 mtu 9000", "link set enp170s0f1np1 up"]
    assert "link set enp41s0f1np1 master bond0" not in lines  # the backup member carries nothing
    rule = lines.index("rule add from 10.30.0.2 table 201 priority 201")  # in-band tables apart from RoCE's
    assert lines[rule:rule + 5] == ["rule add from 10.30.0.2 table 201 priority 201",
                                    "route add 10.30.0.0/16 via 10.30.0.1 dev bond0 metric 201",
                                    "route add 10.32.0.0/24 via 10.30.0.1 dev bond0 metric 201",
                                    "route add 10.31.0.0/20 via 10.30.0.1 dev bond0 metric 201",
                                    "route add 10.30.0.0/27 scope link dev bond0 table 201"]
    assert lines[-1] == "route add 10.31.0.0/20 via 10.30.0.1 dev bond0 table 201"


def test_netplan_that_is_not_netplan_names_the_file() -> None:
    with pytest.raises(ConfigReadError, match=r"^x/netplan-roce.yaml: not netplan as fabricgen writes it"):
        host_interfaces([("x/netplan-roce.yaml", b"network: {ethernets: {eth0: {addresses: [300.1.1.1/24]}}}")],
                        ["eth0"])


def test_expected_routes_follow_ebgp(switches: dict[str, SwitchRouting]) -> None:
    expected = expected_routes(switches)
    leaf006 = switches["storage-leaf006"]
    for prefix in leaf006.networks:  # loopback and host subnet: over every uplink session of a leaf
        assert len(expected["storage-leaf001"][prefix].via) == 64
        assert len(expected["storage-spine01"][prefix].via) == 16
    spine02 = switches["storage-spine02"].loopback.network
    assert expected["storage-spine01"][spine02].via == ()  # one AS, no allowas-in: dropped
    assert len(expected["storage-leaf001"][spine02].via) == 16
    assert set(expected["storage-leaf001"]) == {p for s in STORAGE_SWITCHES if s != "storage-leaf001"
                                                for p in switches[s].networks}


def test_a_maximum_paths_below_the_planned_uplinks_fails(switches: dict[str, SwitchRouting]) -> None:
    """The lab installs as many next hops as the NOS allows: a leaf limited to 1 path would pass the width check
    while 63 of its 64 planned sessions stay idle (lab read-back review F7), so the narrowing itself fails."""
    assert list(narrowed(switches, expected_routes(switches))) == []  # SONiC's 514 paths
    leaf = switches["storage-leaf001"]
    one = dict(switches, **{"storage-leaf001": dataclasses.replace(leaf, maximum_paths=1)})
    [failure] = narrowed(one, expected_routes(one))
    assert failure.startswith("storage-leaf001: maximum-paths 1 is below the 64 equal-cost sessions eBGP offers")


def test_a_session_with_a_wrong_asn_is_not_expected_to_carry_routes(switches: dict[str, SwitchRouting]) -> None:
    spine = switches["storage-spine01"]
    broken = dict(switches, **{"storage-spine01": dataclasses.replace(spine, neighbors=tuple(
        dataclasses.replace(n, remote_asn=65101) if n.description == "storage-leaf001" else n
        for n in spine.neighbors))})
    expected = expected_routes(broken)
    far = switches["storage-leaf006"].loopback.network
    assert len(expected["storage-leaf001"][far].via) == 48
    assert expected["storage-spine01"][switches["storage-leaf001"].loopback.network].via == ()
    assert all(len(expected[leaf][far].via) == 64 for leaf in STORAGE_LEAVES[1:5])


def test_a_cable_without_a_session_is_named(compiled_fabrics: dict, switches: dict[str, SwitchRouting]) -> None:
    ft, _ = compiled_fabrics["storage"]
    leaf = switches["storage-leaf001"]
    lab = lab_fabric("t", ft, switches)
    dropped = leaf.neighbors[0]
    broken = dict(switches, **{"storage-leaf001": dataclasses.replace(leaf, neighbors=leaf.neighbors[1:])})
    [finding] = list(unsessioned_cables(lab, broken))
    port = next(p.name for p in leaf.ports for a in p.addresses if dropped.address in a.network)
    assert finding.startswith(f"fabric storage: storage-leaf001: no BGP session on {port} to {dropped.description} ")
    assert "(cable " in finding
    assert list(unsessioned_cables(lab, switches)) == []


def test_lab_refuses_without_root_or_frr(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    monkeypatch.setenv("PATH", str(tmp_path))
    result = CliRunner().invoke(app, ["lab", "up", str(INVENTORIES / "h100-4su.yaml"), "-o", str(GOLDEN),
                                      "--fabric", "storage"])
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    text = " ".join(result.output.split())
    assert "error: the lab needs root" in text and "vtysh (Debian package frr)" in text and "ping (Debian" in text


def test_lab_names_a_fabric_it_cannot_run() -> None:
    result = CliRunner().invoke(app, ["lab", "check", str(INVENTORIES / "h100-4su.yaml"), "--fabric", "compute"])
    assert result.exit_code == 1
    assert "fabric 'compute' is not a routed Ethernet fabric of the spec; routed fabrics: storage, inband, oob" in \
        " ".join(result.output.split())
