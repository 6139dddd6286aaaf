"""Arista EOS target: the AVD structured config and fabricgen's own EOS CLI (interfaces, BGP, the lossless chain).

The spec is h100-4su with the RoCE storage fabric switched to ``nos: eos``. The pyavd checks are in
tests/external/ethernet/test_pyavd.py.
"""

from __future__ import annotations

import dataclasses
import hashlib
import ipaddress
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from fabricgen.core.errors import SpecError
from fabricgen.features.ethernet.nos import eos
from fabricgen.features.ethernet.switch_view import HOST_VLAN, PortView, switch_views
from fabricgen.model.hardware import PortGroup, SwitchModel
from fabricgen.model.topology import Topology
from fabricgen.pipeline import compile_spec, render_spec
from fabricgen.stages.render import TARGETS
from tests.conftest import INVENTORIES, REPO
from tests.helpers.ethernet import ARISTA_RJ45_CATALOG, EOS_SWITCHES, OOB_EOS
from tests.helpers.ethernet import eos_blocks as _blocks
from tests.helpers.ethernet import eos_cli as _cli
from tests.helpers.ethernet import eos_spec as _spec


@pytest.fixture(scope="module")
def spec(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _spec(tmp_path_factory.mktemp("eos"))


@pytest.fixture(scope="module")
def topology(spec: Path) -> Topology:
    return compile_spec(spec).topology


@pytest.fixture(scope="module")
def artifacts(topology: Topology) -> dict[str, bytes]:
    return {a.path: a.content for a in eos.render(topology)}


@pytest.fixture(scope="module")
def configs(artifacts: dict[str, bytes]) -> dict[str, dict[str, Any]]:
    """Structured config per switch, as a consumer reads the YAML artifact."""
    return {name: yaml.safe_load(artifacts[f"switches/{name}/avd-structured-config.yaml"])
            for name in EOS_SWITCHES}


# -- artifacts -----------------------------------------------------------------------------------------------------
def test_three_artifacts_per_eos_switch_and_none_for_other_nos(artifacts: dict[str, bytes]) -> None:
    expected = {f"switches/{n}/{f}" for n in EOS_SWITCHES
                for f in ("avd-structured-config.yaml", f"{n}.cfg", "management-secrets.sh")}
    assert set(artifacts) == expected, "only the storage fabric runs EOS; inband/oob run SONiC"
    untouched = compile_spec(INVENTORIES / "h100-4su.yaml").topology
    assert eos.render(untouched) == [], "nos: sonic renders nothing here"


def test_renders_through_the_pipeline(spec: Path, artifacts: dict[str, bytes]) -> None:
    """As a registered target (from its NOS data): no path clashes with other renderers, the artifact checks pass."""
    assert TARGETS["eos"].render is eos.render
    rendered = {a.path: a.content for a in render_spec(compile_spec(spec))}
    assert {p: rendered[p] for p in artifacts} == artifacts


def test_structured_config_is_sorted_yaml_with_a_header(artifacts: dict[str, bytes],
                                                        configs: dict[str, dict[str, Any]]) -> None:
    text = artifacts["switches/storage-leaf001/avd-structured-config.yaml"].decode()
    assert text.startswith("# storage-leaf001: AVD eos_cli_config_gen structured config")
    body = "".join(line + "\n" for line in text.splitlines() if not line.startswith("#"))
    assert yaml.safe_load(body) == configs["storage-leaf001"]
    top_keys = [line.split(":")[0] for line in body.splitlines() if line[0].isalpha()]
    assert top_keys == sorted(top_keys)


def test_deterministic_across_runs_and_hash_seeds(spec: Path, artifacts: dict[str, bytes],
                                                  topology: Topology) -> None:
    assert {a.path: a.content for a in eos.render(topology)} == artifacts
    code = ("import hashlib, sys; from pathlib import Path; from fabricgen.pipeline import compile_spec; "
            "from fabricgen.features.ethernet.nos import eos; "
            "arts = eos.render(compile_spec(Path(sys.argv[1])).topology); "
            "print(hashlib.sha256(b''.join(a.path.encode() + a.content for a in arts)).hexdigest())")
    local = hashlib.sha256(b"".join(p.encode() + c for p, c in artifacts.items())).hexdigest()
    for seed in ("0", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run([sys.executable, "-c", code, str(spec)], env=env, cwd=REPO, check=True,
                             capture_output=True, text=True).stdout.strip()
        assert out == local, f"output changed under PYTHONHASHSEED={seed}"


# -- interfaces ----------------------------------------------------------------------------------------------------
def _cabled(config: dict[str, Any]) -> list[dict[str, Any]]:
    """The structured config's Ethernet interfaces a cable uses (the unused ones are shut)."""
    return [i for i in config["ethernet_interfaces"] if not i["shutdown"]]


def _port(name: str, speed: str, gbps: float) -> PortView:
    return PortView(1, name, speed, gbps, "peer", "p1", "uplink", 3.0)


@pytest.mark.parametrize(("form_factor", "per_cage", "port", "speed", "gbps", "name", "eos_speed"), [
    ("OSFP", {"800G": 1, "400G": 2, "200G": 4, "100G": 8}, "3/2", "400G", 400.0, "Ethernet3/5", "400g-4"),
    ("OSFP", {"800G": 1, "400G": 2, "200G": 4, "100G": 8}, "3", "800G", 800.0, "Ethernet3/1", "800g-8"),
    ("OSFP", {"800G": 1, "400G": 2, "200G": 4, "100G": 8}, "3/4", "200G", 200.0, "Ethernet3/7", "200g-2"),
    ("OSFP", {"800G": 1, "400G": 2, "200G": 4, "100G": 8}, "3/8", "100G", 100.0, "Ethernet3/8", "100g-1"),
    ("QSFP-DD", {"400G": 1, "200G": 2, "100G": 4}, "5", "400G", 400.0, "Ethernet5/1", "400g-8"),
    ("QSFP-DD", {"400G": 1, "200G": 2, "100G": 4}, "5/2", "200G", 200.0, "Ethernet5/5", "200g-4"),
    ("QSFP28", {"100G": 1}, "5", "100G", 100.0, "Ethernet5/1", "100g-4"),
    ("RJ45", {"1G": 1}, "5", "1G", 1.0, "Ethernet5", "1g"),
])
def test_eos_interface_names_and_speeds(form_factor: str, per_cage: dict[str, int], port: str, speed: str,
                                        gbps: float, name: str, eos_speed: str) -> None:
    """EOS names a breakout sub-port after its first lane and states the lanes in the speed."""
    model = SwitchModel("X", "Arista", "ethernet", 1,
                        (PortGroup("main", 8, form_factor, tuple(per_cage.items())),))
    assert eos.interface_name(model, _port(port, speed, gbps)) == name
    assert eos.interface_speed(model, _port(port, speed, gbps)) == eos_speed


def test_routed_and_host_ports(topology: Topology, configs: dict[str, dict[str, Any]]) -> None:
    views = {v.name: v for ft in topology.fabrics for v in switch_views(topology, ft)}
    for name, config in configs.items():
        view = views[name]
        interfaces = {i["name"]: i for i in _cabled(config)}
        assert len(interfaces) == len(view.ports)
        for port in view.ports:
            iface = interfaces[eos.interface_name(view.model, port)]
            assert f"port {port.name}," in iface["description"] and iface["description"].startswith(port.peer)
            if port.kind == "host":
                assert iface["switchport"] == {"enabled": True, "mode": "access", "access_vlan": HOST_VLAN}
                assert "ip_address" not in iface
            else:
                assert iface["switchport"] == {"enabled": False}
                assert iface["ip_address"] == port.address and port.address.endswith("/31")
    leaf = configs["storage-leaf001"]
    assert leaf["vlans"] == [{"id": HOST_VLAN, "name": "HOSTS"}]
    assert leaf["vlan_interfaces"][0]["ip_address"] == "10.20.0.1/26", "SVI = the hosts' gateway (32 host ports)"
    assert leaf["loopback_interfaces"] == [{"name": "Loopback0", "description": "router-id",
                                            "ip_address": "10.22.0.5/32"}]
    assert "vlans" not in configs["storage-spine01"] and "vlan_interfaces" not in configs["storage-spine01"]


def test_every_interface_no_cable_uses_is_shut_in_its_cages_speed_mode(
        topology: Topology, configs: dict[str, dict[str, Any]], artifacts: dict[str, bytes]) -> None:
    """EOS runs an interface its configuration does not name enabled, an access port of VLAN 1 (eos.yaml
    ``unconfigured_port``): every front-panel interface no cable uses is written `description unused` + `shutdown`,
    as EOS's running-config shows it, in the interfaces' order: a spine's 7060X6-64PE has 64 OSFP cages of two
    400G interfaces (Ethernet<n>/1 and /5), a leaf's 7060DX5-64S 64 QSFP-DD cages of one (Ethernet<n>/1)."""
    views = {v.name: v for v in eos.eos_views(topology)}
    for name, config in configs.items():
        view, interfaces = views[name], config["ethernet_interfaces"]
        cabled = {eos.interface_name(view.model, p) for p in view.ports}
        lanes = (1, 5) if "spine" in name else (1,)
        assert [i["name"] for i in interfaces] == [f"Ethernet{c}/{n}" for c in range(1, 65) for n in lanes], name
        unused = [i for i in interfaces if i["name"] not in cabled]
        assert unused == [{"name": i["name"], "description": "unused", "shutdown": True} for i in unused]
        assert unused == [i for i in interfaces if i["shutdown"]], "a cabled interface is not shut"
        blocks = dict(_blocks(_cli(artifacts, name)))
        assert all(blocks[f"interface {i['name']}"] == ["description unused", "shutdown"] for i in unused)
        assert all("no shutdown" in blocks[f"interface {n}"] and "shutdown" not in blocks[f"interface {n}"]
                   for n in cabled)
    assert len(eos.unused_interfaces(views["storage-spine01"])) == 128 - len(views["storage-spine01"].ports) > 0
    assert not eos.unused_interfaces(views["storage-leaf001"]), "a leaf of 32 hosts and 32 uplinks: every cage cabled"


def test_a_split_cages_unused_lanes_are_those_of_its_cabled_ports_speed(topology: Topology) -> None:
    """A cage with a cabled port keeps that port's speed mode: of a spine cage at 400g-4 with 1/2 uncabled,
    Ethernet1/5 is shut and Ethernet1/1 is not; a leaf's QSFP-DD cage with one 200G port (200g-4) has Ethernet1/5
    unused beside it, where the leaf's 400G cages have no second interface."""
    views = {v.name: v for v in eos.eos_views(topology)}
    spine = views["storage-spine01"]
    half = dataclasses.replace(spine, ports=tuple(p for p in spine.ports if p.name != "1/2"))
    assert eos.unused_interfaces(half)[:1] == ["Ethernet1/5"]
    assert "Ethernet1/1" not in eos.unused_interfaces(half)
    leaf = views["storage-leaf001"]
    first = next(p for p in leaf.ports if p.name == "1")
    slower = dataclasses.replace(first, name="1/1", speed="200G", gbps=200.0)
    split = dataclasses.replace(leaf, ports=tuple(slower if p is first else p for p in leaf.ports))
    assert eos.unused_interfaces(split) == ["Ethernet1/5"]


def test_mtu_on_every_interface(configs: dict[str, dict[str, Any]], artifacts: dict[str, bytes]) -> None:
    for name, config in configs.items():
        l3 = _cabled(config) + config.get("vlan_interfaces", [])
        assert {i["mtu"] for i in l3} == {9100}
        assert _cli(artifacts, name).count("\n   mtu 9100\n") == len(l3)


# -- BGP -----------------------------------------------------------------------------------------------------------
def test_bgp_neighbors_are_the_routed_ports(topology: Topology, configs: dict[str, dict[str, Any]]) -> None:
    views = {v.name: v for ft in topology.fabrics for v in switch_views(topology, ft)}
    own_ips = {name: {i["ip_address"].split("/")[0]: name for i in c["ethernet_interfaces"] if "ip_address" in i}
               for name, c in configs.items()}
    owner = {ip: name for ips in own_ips.values() for ip, name in ips.items()}
    for name, config in configs.items():
        bgp = config["router_bgp"]
        view = views[name]
        assert bgp["as"] == str(view.asn) and bgp["router_id"] == view.loopback
        # 3/9 in every dialect (SONiC BGP_NEIGHBOR, NVUE's own default), not EOS's 60/180
        assert bgp["timers"] == {"keepalive_time": 3, "hold_time": 9}
        neighbors = {n["ip_address"]: n for n in bgp["neighbors"]}
        assert len(neighbors) == len(bgp["neighbors"]) == len(view.routed_ports)
        for iface in config["ethernet_interfaces"]:
            if "ip_address" not in iface:
                continue
            link = ipaddress.ip_interface(iface["ip_address"]).network
            (peer_ip,) = [ip for ip in neighbors if ipaddress.ip_address(ip) in link]
            peer = owner[peer_ip]
            assert neighbors[peer_ip]["remote_as"] == configs[peer]["router_bgp"]["as"]
            assert neighbors[peer_ip]["description"].startswith(peer + ":")
            back = {n["ip_address"] for n in configs[peer]["router_bgp"]["neighbors"]}
            assert iface["ip_address"].split("/")[0] in back, f"{peer} does not peer back with {name}"
        networks = [n["prefix"] for n in bgp["address_family_ipv4"]["networks"]]
        assert networks == sorted([f"{view.loopback}/32", *([view.host_subnet] if view.host_subnet else []),
                                   *([view.pod_subnet] if view.pod_subnet else [])], key=ipaddress.ip_network)
    assert configs["storage-leaf001"]["router_bgp"]["maximum_paths"] == {"paths": 32, "ecmp": 32}  # 32 uplinks
    assert configs["storage-spine01"]["router_bgp"]["maximum_paths"] == {"paths": 64, "ecmp": 64}, "capped at 64"


# -- the lossless chain --------------------------------------------------------------------------------------------
def test_lossless_chain(configs: dict[str, dict[str, Any]], artifacts: dict[str, bytes]) -> None:
    """DSCP 26 -> TC 3 -> PFC priority 3 no-drop on every port -> ECN on uc-tx-queue 3; CNP DSCP 48 -> TC 6 strict."""
    for name, config in configs.items():
        others = " ".join(str(d) for d in range(64) if d not in (26, 48))
        assert config["qos"]["map"]["dscp"] == [f"{others} to traffic-class 0", "26 to traffic-class 3",
                                               "48 to traffic-class 6"], "every other DSCP to TC 0, as SONiC/NVUE"
        (profile,) = config["qos_profiles"]
        assert profile["name"] == eos.QOS_PROFILE and profile["trust"] == "dscp"
        queues = {q["id"]: q for q in profile["uc_tx_queues"]}
        assert queues[3]["random_detect"] == {"ecn": {"threshold": {"units": "kbytes", "min": 150, "max": 1500,
                                                                    "max_probability": 100}}}
        assert (queues[3]["priority"], queues[3]["bandwidth_percent"]) == ("no priority", 50), \
            "EOS queues are strict until `no priority`: a strict lossless queue starves queue 0"
        assert queues[6] == {"id": 6, "priority": "priority strict"}
        assert profile["priority_flow_control"] == {"watchdog": {
            "enabled": True, "action": "drop",
            "timer": {"timeout": "0.2", "polling_interval": "0.1", "recovery_time": "0.4"}}}, "on every port"
        for iface in _cabled(config):
            assert iface["service_profile"] == eos.QOS_PROFILE, iface["name"]
            assert iface["priority_flow_control"] == {"enabled": True,
                                                      "priorities": [{"priority": 3, "no_drop": True}]}, iface["name"]
        assert config["priority_flow_control"]["watchdog"] == {"action": "drop", "timeout": "0.2",
                                                               "recovery_time": "0.4", "polling_interval": "0.1"}
        cli = _cli(artifacts, name)
        blocks = dict(_blocks(cli))
        ethernet = [body for head, body in blocks.items() if head.startswith("interface Ethernet")
                    and "shutdown" not in body]
        assert len(ethernet) == len(_cabled(config))
        assert all({"service-profile ROCE-LOSSLESS", "priority-flow-control on",
                    "priority-flow-control priority 3 no-drop"} <= set(body) for body in ethernet)
        assert blocks["qos profile ROCE-LOSSLESS"] == [
            "qos trust dscp", "priority-flow-control pause watchdog",
            "priority-flow-control pause watchdog port timer timeout 0.2 polling-interval 0.1 recovery-time 0.4",
            "priority-flow-control pause watchdog port action drop",
            "uc-tx-queue 3", "no priority", "bandwidth percent 50",
            "random-detect ecn minimum-threshold 150 kbytes maximum-threshold 1500 kbytes max-mark-probability 100",
            "uc-tx-queue 6", "priority strict"]
        for line in ("qos map dscp 26 to traffic-class 3", "qos map dscp 48 to traffic-class 6",
                     "priority-flow-control pause watchdog default timeout 0.2",
                     "priority-flow-control pause watchdog default recovery-time 0.4",
                     "priority-flow-control pause watchdog default polling-interval 0.1",
                     "priority-flow-control pause watchdog action drop"):
            assert line in blocks, line


def test_watchdog_actions_map_to_eos(tmp_path: Path) -> None:
    old = "pfc_watchdog: {detect_ms: 200, restore_ms: 400, action: drop}"
    alert = compile_spec(_spec(tmp_path, (old, "pfc_watchdog: {detect_ms: 300, restore_ms: 150, action: alert}")))
    config = eos.structured_config(eos.eos_views(alert.topology)[0])
    assert config["priority_flow_control"]["watchdog"] == {
        "action": "notify-only", "timeout": "0.3", "recovery_time": "0.15", "polling_interval": "0.075"}, \
        "EOS needs polling <= min(timeout, recovery) / 2"
    with pytest.raises(SpecError, match="eos has no PFC watchdog action 'forward'"):  # refused at build, with a line
        compile_spec(_spec(tmp_path, (old, old.replace("drop", "forward"))))


@pytest.fixture(scope="module")
def oob(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """The out-of-band fabric (plain Ethernet, RJ45 host ports) with EOS leaves and SONiC aggregation switches."""
    topology = compile_spec(_spec(tmp_path_factory.mktemp("oob"), OOB_EOS, extra=ARISTA_RJ45_CATALOG)).topology
    return {v.name: eos.structured_config(v) for v in eos.eos_views(topology) if v.fabric.name == "oob"}


def test_plain_ethernet_fabric_has_no_lossless_class(oob: dict[str, dict[str, Any]]) -> None:
    assert oob and all(name.startswith("oob-") and not name.startswith("oob-agg") for name in oob), \
        "per-tier nos: only the leaves run EOS"
    for config in oob.values():
        assert not {"qos", "qos_profiles", "priority_flow_control"} & set(config)
        assert all("priority_flow_control" not in i and "service_profile" not in i
                   for i in config["ethernet_interfaces"])
    interfaces = {i["name"]: i for i in oob["oob-a01"]["ethernet_interfaces"]}
    assert interfaces["Ethernet1"]["speed"] == "1g" and interfaces["Ethernet49/1"]["speed"] == "100g-4"


def test_management_port_in_its_own_vrf_with_the_gateway(configs: dict[str, dict[str, Any]]) -> None:
    """Management1 takes the switch's address from the management pool, in VRF MGMT, default route to the gateway."""
    leaf = configs["storage-leaf001"]
    assert leaf["management_interfaces"] == [{"name": "Management1", "description": "out-of-band management",
                                              "shutdown": False, "vrf": "MGMT", "ip_address": "10.23.0.6/24",
                                              "type": "oob", "gateway": "10.23.0.1"}]
    assert leaf["static_routes"] == [{"vrf": "MGMT", "prefix": "0.0.0.0/0", "next_hop": "10.23.0.1"}]
    assert leaf["vrfs"] == [{"name": "MGMT", "ip_routing": False}]
    addresses = [c["management_interfaces"][0]["ip_address"] for c in configs.values()]
    assert len(set(addresses)) == len(addresses)
