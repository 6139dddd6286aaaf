"""NVUE target: per Cumulus switch a strict-schema startup.yaml and the equivalent `nv set` list, the lossless
RoCE chain against NVUE's defaults, one cable length (the longest), one BGP session per routed /31, port names."""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator

from fabricgen.core.artifacts import is_safe_relative_path
from fabricgen.core.errors import SpecError
from fabricgen.features.ethernet.nos import nvue
from fabricgen.features.ethernet.switch_view import HOST_VLAN, PortView, SwitchView, switch_views
from fabricgen.model.ethernet import RoceQos, TrafficClass
from fabricgen.pipeline import Compiled, compile_spec
from tests.conftest import INVENTORIES
from tests.helpers.ethernet import NVUE_SCHEMA as SCHEMA

DEFAULT_QOS = ("      lossless: {dscp: 26, priority: 3}\n      cnp: {dscp: 48, priority: 6}\n"
               "      ecn: {min_kb: 150, max_kb: 1500, max_probability: 100}\n"
               "      pfc_watchdog: {detect_ms: 200, restore_ms: 400, action: drop}\n")


def _spec(tmp_path: Path, nos: str = "nvue", qos: str = DEFAULT_QOS) -> Path:
    """h100-4su with the storage fabric's `nos: sonic` changed (and optionally its QoS block replaced)."""
    text = (INVENTORIES / "h100-4su.yaml").read_text()
    storage = "    switch: SN5600\n    nos: sonic\n"
    assert text.count(storage) == 1 and text.count(DEFAULT_QOS) == 1
    spec = tmp_path / "nvue.yaml"
    spec.write_text(text.replace(storage, f"    switch: SN5600\n    nos: {nos}\n").replace(DEFAULT_QOS, qos))
    return spec


@dataclass(frozen=True)
class Rendered:
    compiled: Compiled
    files: dict[str, bytes]

    @property
    def views(self) -> tuple[SwitchView, ...]:
        return switch_views(self.compiled.topology, self.compiled.topology.fabric("storage"))

    def yaml(self, switch: str) -> dict[str, Any]:
        doc = yaml.safe_load(self.files[f"switches/{switch}/startup.yaml"])
        assert isinstance(doc, list) and len(doc) == 1
        tree: dict[str, Any] = doc[0]["set"]
        return tree

    def commands(self, switch: str) -> list[str]:
        return self.files[f"switches/{switch}/nv-commands.txt"].decode().splitlines()


def _render(spec: Path) -> Rendered:
    compiled = compile_spec(spec)
    return Rendered(compiled, {a.path: a.content for a in nvue.render(compiled.topology)})


@pytest.fixture(scope="module")
def h100(tmp_path_factory: pytest.TempPathFactory) -> Rendered:
    return _render(_spec(tmp_path_factory.mktemp("nvue")))


def _leaves(tree: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """(key path, scalar) per leaf; an empty mapping is a collection key, its path alone (value None)."""
    if isinstance(tree, dict) and tree:
        for key, sub in tree.items():
            yield from _leaves(sub, (*path, str(key)))
    elif isinstance(tree, dict):
        yield path, None
    else:
        yield path, tree


# -- files and names -------------------------------------------------------------------------------------------
def test_every_nvue_switch_gets_startup_yaml_and_commands(h100: Rendered) -> None:
    names = [v.name for v in h100.views]
    assert len(names) == 6 + 4 and all(v.nos == "nvue" for v in h100.views)
    files = ("startup.yaml", "nv-commands.txt", "management-secrets.sh")
    expected = {f"switches/{n}/{f}" for n in names for f in files}
    assert set(h100.files) == expected, "nothing for the InfiniBand compute fabric or the SONiC fabrics"
    assert all(is_safe_relative_path(p) for p in h100.files)
    for name in names:
        assert h100.yaml(name)["system"]["hostname"] == name
        assert f"nv set system hostname {name}" in h100.commands(name)


def test_only_the_tiers_that_run_nvue(tmp_path: Path) -> None:
    rendered = _render(_spec(tmp_path, nos="{leaf: nvue, spine: sonic}"))
    assert {p.split("/")[1] for p in rendered.files} == {v.name for v in rendered.views if v.tier.value == "leaf"}


def test_port_naming_rule(h100: Rendered) -> None:
    view = h100.views[0]
    model = view.model  # SN5600: 64 x 800G OSFP cages, 2 x 400G per cage
    port = view.ports[0]
    named = {p.name: nvue.nv_port(model, p).name for p in view.ports}
    assert named["1/1"] == "swp1s0" and named["1/2"] == "swp1s1" and named["64/2"] == "swp64s1"
    assert nvue.nv_port(model, PortView(1, "7", "800G", 800.0, "x", "y", "host", 1.0)).name == "swp7"
    with pytest.raises(ValueError, match="breakout"):
        nvue.nv_port(model, PortView(1, "1/3", port.speed, 400.0, "x", "y", "host", 1.0))
    interfaces = h100.yaml(view.name)["interface"]
    assert interfaces["swp1"] == {"type": "swp", "link": {"breakout": {"2x": {}}}}
    assert "nv set interface swp1 link breakout 2x" in h100.commands(view.name)
    cages = {int(p.name.split("/")[0]) for p in view.ports}
    assert {f"swp{c}" for c in cages} <= set(interfaces)


# -- schema and the on/off pitfall --------------------------------------------------------------------------------
def test_startup_yaml_validates_against_the_strict_schema(h100: Rendered) -> None:
    schema = json.loads(SCHEMA.read_text())
    Draft202012Validator.check_schema(schema)
    validator = Draft202012Validator(schema)
    for path, content in sorted(h100.files.items()):
        if path.endswith("startup.yaml"):
            document = yaml.safe_load(content)
            assert not [e.message for e in validator.iter_errors(document)], path
            assert b'enable: "on"' in content and b"enable: true" not in content, "NVUE's on must stay a string"
    leaf = h100.views[0].name
    document = [{"set": h100.yaml(leaf)}]
    typo = copy.deepcopy(document)
    typo[0]["set"]["interface"]["swp1s0"]["link"]["mtuu"] = 9100
    assert not validator.is_valid(typo), "unknown keys are rejected"
    boolean = copy.deepcopy(document)
    boolean[0]["set"]["router"]["bgp"]["enable"] = True
    assert not validator.is_valid(boolean), "a YAML boolean instead of the string 'on' is rejected"


# -- commands and YAML are the same settings -------------------------------------------------------------------------
def test_commands_and_startup_yaml_describe_the_same_settings(h100: Rendered) -> None:
    for view in h100.views:
        lines = [line for line in h100.commands(view.name) if line.strip()]
        assert lines[-1] == "nv config apply -y"
        assert lines[0].startswith("#") and "Cumulus Linux 5.9" in lines[1]
        commands = [line for line in lines[:-1] if not line.startswith("#")]
        assert all(c.startswith("nv set ") for c in commands)
        assert len(set(commands)) == len(commands), "no command twice"
        from_commands = {tuple(c.split()[2:]) for c in commands}
        leaves = list(_leaves(h100.yaml(view.name)))
        from_yaml = {path if value is None else (*path, str(value)) for path, value in leaves}
        assert from_commands == from_yaml, view.name
        for path, value in leaves:  # typed leaves: numbers stay numbers, NVUE words stay strings
            assert isinstance(value, (int, str, type(None))) and not isinstance(value, bool), path
            if path[-1] in ("mtu", "autonomous-system", "remote-as", "access", "vlan", "cable-length"):
                assert isinstance(value, int), path


# -- lossless chain ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Chain:
    dscp_to_sp: dict[int, int]
    sp_to_tc: dict[int, int]
    pfc: set[int]
    strict: set[int]
    ecn: dict[int, dict[str, Any]]


def _effective(qos: dict[str, Any]) -> Chain:
    """NVUE's RoCE lossless defaults (cumulus-linux-59 RoCE page) with the emitted overrides applied."""
    mapping = qos.get("mapping", {}).get("default-global", {})
    dscp_to_sp = {d: d // 8 for d in range(64)}
    dscp_to_sp |= {int(d): v["switch-priority"] for d, v in mapping.get("dscp", {}).items()}
    sp_to_tc = {sp: 3 if sp == 3 else 6 if sp == 6 else 0 for sp in range(8)}
    queues = qos.get("egress-queue-mapping", {}).get("default-global", {}).get("switch-priority", {})
    sp_to_tc |= {int(sp): v["traffic-class"] for sp, v in queues.items()}
    pfc = {int(sp) for sp in qos.get("pfc", {}).get("default-global", {}).get("switch-priority", {})} or {3}
    strict = {6}
    for tc, v in qos.get("egress-scheduler", {}).get("default-global", {}).get("traffic-class", {}).items():
        (strict.add if v["mode"] == "strict" else strict.discard)(int(tc))
    cc = qos.get("congestion-control", {}).get("default-global", {}).get("traffic-class", {})
    ecn = {int(tc): v for tc, v in cc.items() if v.get("ecn") == "enable"}
    return Chain(dscp_to_sp, sp_to_tc, pfc, strict, ecn)


CUSTOM = ("      lossless: {dscp: 24, priority: 2}\n      cnp: {dscp: 40, priority: 7}\n"
          "      ecn: {min_kb: 100, max_kb: 2000, max_probability: 50}\n"
          "      pfc_watchdog: {detect_ms: 600, restore_ms: 200, action: drop}\n      lossless_weight: 60\n")


@pytest.mark.parametrize("qos_text", [DEFAULT_QOS, CUSTOM], ids=["nvidia-defaults", "customised"])
def test_lossless_chain(tmp_path: Path, qos_text: str) -> None:
    rendered = _render(_spec(tmp_path, qos=qos_text))
    for view in rendered.views:
        q = view.qos
        assert q is not None
        tree = rendered.yaml(view.name)
        qos = tree["qos"]
        assert qos["roce"] == {"enable": "on", "mode": "lossless"}
        chain = _effective(qos)
        sp = chain.dscp_to_sp[q.lossless.dscp]
        assert sp == q.lossless.priority and chain.pfc == {sp}
        tc = chain.sp_to_tc[sp]
        assert tc not in chain.strict and tc != chain.sp_to_tc[0], "lossless traffic has its own DWRR queue"
        assert chain.ecn[tc] == {"ecn": "enable", "min-threshold": q.ecn_min_kb * 1024,
                                 "max-threshold": q.ecn_max_kb * 1024, "probability": q.ecn_max_probability}
        cnp_sp = chain.dscp_to_sp[q.cnp.dscp]
        assert cnp_sp == q.cnp.priority and chain.sp_to_tc[cnp_sp] in chain.strict
        assert [p for p in chain.sp_to_tc if chain.sp_to_tc[p] == tc] == [sp], "only the lossless priority on it"
        customised = qos_text == CUSTOM
        assert customised == ("mapping" in qos) == ("egress-queue-mapping" in qos) == ("egress-scheduler" in qos)
        text = "\n".join(rendered.commands(view.name))
        if customised:
            assert qos["mapping"]["default-global"] == {"trust": "both", "dscp": {"24": {"switch-priority": 2},
                                                                                  "40": {"switch-priority": 7}}}
            assert qos["egress-queue-mapping"]["default-global"]["switch-priority"] == {
                "2": {"traffic-class": 3}, "3": {"traffic-class": 0}, "6": {"traffic-class": 0},
                "7": {"traffic-class": 6}}
            assert qos["egress-scheduler"]["default-global"]["traffic-class"]["3"] == {"mode": "dwrr",
                                                                                      "bw-percent": 60}
        else:
            assert "pfc" in qos and "switch-priority" not in qos["pfc"]["default-global"]
            assert "All of it is NVUE's RoCE default" in text
        ports = [i for i in tree["interface"].values() if "speed" in i.get("link", {})]
        assert len(ports) == len(view.ports)
        assert all(i["qos"] == {"pfc-watchdog": {"state": "enable"}} for i in ports)
        interval, robustness = nvue.watchdog_timers(q)
        assert qos["pfc-watchdog"] == {"polling-interval": interval, "robustness": robustness}


def test_unexpressible_watchdog_action_is_refused(tmp_path: Path) -> None:
    spec = _spec(tmp_path, qos=DEFAULT_QOS.replace("action: drop", "action: alert"))
    with pytest.raises(SpecError, match="nvue has no PFC watchdog action 'alert'"):  # refused at build, with a line
        compile_spec(spec)


def test_watchdog_timers_keep_detection() -> None:
    def qos(detect: int, restore: int) -> RoceQos:
        return RoceQos(TrafficClass(26, 3), TrafficClass(48, 6), 150, 1500, 20, detect, restore, "drop", 50)

    assert nvue.watchdog_timers(qos(200, 400)) == (200, 1)
    assert nvue.watchdog_timers(qos(600, 200)) == (200, 3)
    assert nvue.watchdog_timers(qos(100, 60000)) == (100, 1)
    assert nvue.watchdog_timers(qos(5000, 100)) == (100, 50)


# -- cable length ------------------------------------------------------------------------------------------------
def test_cable_length_is_the_longest_port_cable(h100: Rendered) -> None:
    topology = h100.compiled.topology
    seen = set()
    for view in h100.views:
        cables = [c.length_m for c in topology.cables
                  if c.fabric == "storage" and view.name in (c.a.device, c.z.device)]
        expected = math.ceil(max(cables))
        assert h100.yaml(view.name)["qos"]["pfc"]["default-global"]["cable-length"] == expected
        assert f"nv set qos pfc default-global cable-length {expected}" in h100.commands(view.name)
        assert any("LONGEST" in line for line in h100.commands(view.name))
        seen.add(expected)
    assert len(seen) > 1, "the fixture has switches with different longest cables"


def test_cable_length_rounds_up() -> None:
    def port(length: float) -> PortView:
        return PortView(1, "1/1", "400G", 400.0, "x", "y", "host", length)

    assert nvue.cable_length_m([port(2.2), port(1.0)]) == 3
    assert nvue.cable_length_m([port(5.0)]) == 5
    assert nvue.cable_length_m([port(0.5)]) == 1


# -- routing -----------------------------------------------------------------------------------------------------
def test_one_bgp_neighbor_per_routed_port(h100: Rendered) -> None:
    for view in h100.views:
        tree = h100.yaml(view.name)
        bgp = tree["vrf"]["default"]["router"]["bgp"]
        assert tree["router"]["bgp"] == {"enable": "on", "autonomous-system": view.asn, "router-id": view.loopback}
        assert len(bgp["neighbor"]) == len(view.routed_ports) > 0
        for p in view.routed_ports:
            assert bgp["neighbor"][p.peer_address] == {"remote-as": p.peer_asn, "type": "numbered"}
            interface = tree["interface"][nvue.nv_port(view.model, p).name]
            assert interface["ip"]["address"] == {p.address: {}} and "bridge" not in interface
        networks = set(bgp["address-family"]["ipv4-unicast"]["network"])
        assert networks == {f"{view.loopback}/32"} | ({view.host_subnet} if view.host_subnet else set()) | (
            {view.pod_subnet} if view.pod_subnet else set())
        for p in view.host_ports:
            interface = tree["interface"][nvue.nv_port(view.model, p).name]
            assert interface["bridge"] == {"domain": {"br_default": {"access": HOST_VLAN}}} and "ip" not in interface
        if view.host_ports:
            prefix = view.host_subnet.split("/")[1]
            pods = {f"{view.pod_gateway}/{view.pod_subnet.split('/')[1]}": {}} if view.pod_gateway else {}
            assert tree["interface"][f"vlan{HOST_VLAN}"] == {"type": "svi", "vlan": HOST_VLAN, "ip": {
                "address": {f"{view.gateway}/{prefix}": {}, **pods}}}
            assert tree["bridge"]["domain"]["br_default"]["vlan"] == {str(HOST_VLAN): {}}
        else:
            assert "bridge" not in tree


def test_plain_ethernet_fabric_has_no_qos(tmp_path: Path) -> None:
    text = (INVENTORIES / "h100-4su.yaml").read_text()
    inband = "    switch: SN4700\n    nos: sonic\n    topology: {kind: leaf-spine, oversubscription: 2}\n"
    assert text.count(inband) == 1
    spec = tmp_path / "eth.yaml"
    spec.write_text(text.replace(inband, inband.replace("nos: sonic", "nos: nvue")))
    compiled = compile_spec(spec)
    files = {a.path: a.content for a in nvue.render(compiled.topology)}
    inband_switches = {s.name for s in compiled.topology.fabric("inband").switches}
    assert {p.split("/")[1] for p in files} == inband_switches
    validator = Draft202012Validator(json.loads(SCHEMA.read_text()))
    for path, content in files.items():
        if path.endswith(".yaml"):
            document = yaml.safe_load(content)
            assert validator.is_valid(document) and "qos" not in document[0]["set"], path
            assert all("pfc-watchdog" not in str(i) for i in document[0]["set"]["interface"].values())


# -- determinism -------------------------------------------------------------------------------------------------
def test_render_is_deterministic(h100: Rendered, tmp_path: Path) -> None:
    again = {a.path: a.content for a in nvue.render(h100.compiled.topology)}
    assert again == h100.files
    assert _render(_spec(tmp_path)).files == h100.files, "a fresh compile of the same spec renders the same bytes"


def test_management_port_in_the_mgmt_vrf_with_the_gateway(h100: Rendered) -> None:
    addresses = set()
    for view in h100.views:
        eth0 = h100.yaml(view.name)["interface"]["eth0"]
        assert eth0["type"] == "eth" and eth0["ip"]["vrf"] == "mgmt"
        assert eth0["ip"]["gateway"] == {"10.23.0.1": {}}
        (address,) = eth0["ip"]["address"]
        assert address == f"{view.management}/24"
        addresses.add(address)
        assert "nv set interface eth0 ip gateway 10.23.0.1" in h100.commands(view.name)
    assert len(addresses) == len(h100.views)
