"""NVUE and EOS routing read-backs (what ``fabricgen lab`` configures FRR from), over rendered configurations:

- NVUE: h100-4su's storage fabric on SN5600s as NVUE startup.yaml (the h100-4su-nvue goldens) reads back into the
  same routing as the SONiC config_db.json goldens of the same fabric: every ASN, router-id, loopback, port address
  and MTU by front-panel port, VLAN, session (address, AS, local address, timers) and announced prefix, and the
  same ECMP width for every prefix on every switch (eBGP's rules over the read-back sessions, check.expected_routes);
- EOS: the storage fabric on Arista switches (the h100-4su-eos goldens) against its compiled plan (one session per
  planned leaf-spine link on both ends, mirrored, every planned prefix announced, every planned cable on a port),
  and a fabric of EOS leaves under SONiC spines, where each EOS session has its mirror in a SONiC config_db.json;
- each reader follows edits of the file (it reads the artifact, not the model) and reports every problem at once."""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from ipaddress import IPv4Address, IPv4Interface, IPv4Network
from pathlib import Path
from typing import Any

import pytest
import yaml

from fabricgen.core.errors import ConfigReadError
from fabricgen.features.ethernet.nos import systems
from fabricgen.features.ethernet.nos.eos_routing import kernel_name
from fabricgen.features.ethernet.nos.eos_routing import routing as eos_routing
from fabricgen.features.ethernet.nos.nvue_routing import routing as nvue_routing
from fabricgen.features.ethernet.nos.sonic.routing import routing as sonic_routing
from fabricgen.features.lab.check import expected_routes
from fabricgen.features.lab.plan import lab_fabric
from fabricgen.features.lab.run import planned_networks
from fabricgen.model.routing import SwitchRouting
from fabricgen.model.topology import LEAF_SPINE, FabricTopology, Topology
from fabricgen.pipeline import compile_spec, render_spec
from tests.conftest import REPO
from tests.helpers.ethernet import EOS_SWITCHES, SONIC_STORAGE, STORAGE_SWITCHES, eos_spec, storage_spec

GOLDEN = REPO / "tests/golden"


def _nvue_file(switch: str) -> bytes:
    return (GOLDEN / "h100-4su-nvue/switches" / switch / "startup.yaml").read_bytes()


def _eos_file(switch: str) -> bytes:
    return (GOLDEN / "h100-4su-eos/switches" / switch / f"{switch}.cfg").read_bytes()


@pytest.fixture(scope="module")
def nvue() -> dict[str, SwitchRouting]:
    return {s: nvue_routing(s, _nvue_file(s)) for s in STORAGE_SWITCHES}


@pytest.fixture(scope="module")
def sonic() -> dict[str, SwitchRouting]:
    return {s: sonic_routing(s, (GOLDEN / "h100-4su/switches" / s / "config_db.json").read_bytes())
            for s in STORAGE_SWITCHES}


@pytest.fixture(scope="module")
def eos() -> dict[str, SwitchRouting]:
    return {s: eos_routing(s, _eos_file(s)) for s in EOS_SWITCHES}


def test_nvue_and_eos_offer_the_routing_read_back() -> None:
    assert systems()["nvue"].routing is nvue_routing
    assert systems()["eos"].routing is eos_routing


# -- NVUE against SONiC, one fabric -------------------------------------------------------------------------------
def _session(n: Any) -> tuple[object, ...]:
    """A session as both dialects configure it (NVUE writes no neighbor description)."""
    return (n.address, n.remote_asn, n.local_address, n.keepalive_s, n.hold_s, n.connect_s, n.shutdown)


def _by_panel(s: SwitchRouting) -> dict[str, tuple[object, ...]]:
    """The ports that carry traffic, by front-panel position: SONiC keeps every uncabled port in PORT, shut, for
    its breakout commands (README "SONiC breakout and dark ports"); NVUE and EOS write the cabled ones only."""
    return {p.panel: (p.addresses, p.mtu, p.up) for p in s.ports if p.up}


def test_nvue_reads_back_as_the_sonic_files_of_the_same_fabric(nvue: dict[str, SwitchRouting],
                                                                 sonic: dict[str, SwitchRouting]) -> None:
    for name in STORAGE_SWITCHES:
        n, s = nvue[name], sonic[name]
        assert (n.asn, n.router_id, n.loopback) == (s.asn, s.router_id, s.loopback), name
        assert sorted(n.networks) == sorted(s.networks), name
        assert [_session(x) for x in n.neighbors] == [_session(x) for x in s.neighbors], name
        assert _by_panel(n) == _by_panel(s), name
        n_panel = {p.name: p.panel for p in n.ports}
        s_panel = {p.name: p.panel for p in s.ports}
        # an SVI's addresses are a set in both (NVUE's `ip address` map, SONiC's VLAN_INTERFACE keys)
        assert [(v.vid, v.mtu, sorted(map(str, v.addresses)), sorted(n_panel[m] for m in v.members))
                for v in n.vlans] == \
               [(v.vid, v.mtu, sorted(map(str, v.addresses)), sorted(s_panel[m] for m in v.members))
                for v in s.vlans], name
    leaf = nvue["storage-leaf001"]
    assert (leaf.maximum_paths, leaf.multipath_relax, leaf.allowas_in) == (64, False, 0)  # NVUE's defaults
    assert leaf.vlans[0].name == "vlan100" and leaf.ports[0].name == "swp1s0"


def _widths(switches: Mapping[str, SwitchRouting]) -> dict[tuple[str, IPv4Network], tuple[int, int]]:
    """(switch, prefix) -> (sessions offering a shortest path, next hops installed)."""
    return {(name, prefix): (len(e.via), e.width(switches[name]))
            for name, routes in expected_routes(switches).items() for prefix, e in routes.items()}


def test_nvue_gives_every_prefix_the_same_ecmp_as_sonic(nvue: dict[str, SwitchRouting],
                                                        sonic: dict[str, SwitchRouting]) -> None:
    widths = _widths(nvue)
    assert widths == _widths(sonic)
    # a leaf learns another leaf's host subnet over all 64 uplinks (16 to each of 4 spines), within NVUE's 64 paths
    assert widths[("storage-leaf001", IPv4Network("10.20.0.128/25"))] == (64, 64)
    assert widths[("storage-spine01", IPv4Network("10.22.0.5/32"))] == (16, 16)
    assert widths[("storage-spine02", IPv4Network("10.22.0.1/32"))] == (0, 0)  # spine01's loopback: same AS


def _nvue_tree(switch: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    document = yaml.safe_load(_nvue_file(switch))
    return document, document[0]["set"]


def test_nvue_every_value_comes_from_the_file(nvue: dict[str, SwitchRouting]) -> None:
    document, tree = _nvue_tree("storage-leaf001")
    bgp = tree["vrf"]["default"]["router"]["bgp"]
    tree["router"]["bgp"]["autonomous-system"] = 4200000001
    bgp["peer-group"] = {"SPINES": {"remote-as": 65009, "timers": {"keepalive": 10, "hold": 30}}}
    first = min(bgp["neighbor"], key=IPv4Address)
    bgp["neighbor"][first] = {"peer-group": "SPINES", "shutdown": "on", "timers": {"hold": 45}}
    bgp["address-family"]["ipv4-unicast"]["multipaths"] = {"ebgp": 8}
    bgp["address-family"]["ipv4-unicast"]["redistribute"] = {"connected": {"enable": "on"}}
    bgp["path-selection"] = {"multipath": {"aspath-ignore": "on"}}
    tree["interface"]["swp33s0"]["link"]["state"] = {"down": {}}
    tree["interface"]["vlan100"]["link"] = {"mtu": 1500}
    edited = nvue_routing("storage-leaf001", yaml.safe_dump(document).encode())
    assert (edited.asn, edited.maximum_paths, edited.multipath_relax) == (4200000001, 8, True)
    [changed] = [n for n in edited.neighbors if n.address == IPv4Address(first)]
    assert (changed.remote_asn, changed.keepalive_s, changed.hold_s, changed.shutdown) == (65009, 10, 45, True)
    assert not next(p for p in edited.ports if p.name == "swp33s0").up and edited.vlans[0].mtu == 1500
    # redistribute connected: every connected prefix of the ports that are up, the /31s included
    assert IPv4Network("10.21.0.2/31") in edited.networks and IPv4Network("10.21.0.0/31") not in edited.networks
    assert set(nvue["storage-leaf001"].networks) < set(edited.networks)


def test_nvue_bad_file_reports_every_problem_at_once() -> None:
    document, tree = _nvue_tree("storage-leaf001")
    bgp = tree["vrf"]["default"]["router"]["bgp"]
    bgp["neighbor"]["swp1s0"] = {"type": "unnumbered", "remote-as": "external"}
    bgp["neighbor"][min(bgp["neighbor"], key=str)]["remote-as"] = "external"
    bgp["address-family"]["ipv4-unicast"]["enable"] = "off"
    bgp["neighbor"][sorted(k for k in bgp["neighbor"] if k[0].isdigit())[1]]["password"] = "secret"
    tree["interface"]["lo"]["ip"]["address"]["10.22.0.99/32"] = {}
    tree["interface"]["bond1"] = {"type": "bond"}
    tree["interface"]["swp2s0"]["bridge"]["domain"]["br_default"] = {"vlan": {"100": {}}}
    tree["interface"]["vlan200"] = {"type": "svi", "vlan": 200}
    tree["interface"]["swp33s1"]["description"] = "spine\n neighbor 192.0.2.1 remote-as 1"
    tree["interface"]["swp1s1\nlink del swp1s0"] = tree["interface"].pop("swp1s1")
    tree["interface"]["swp2"]["link"]["breakout"] = {"1x": {}}  # swp2s0 and swp2s1 are then no ports
    with pytest.raises(ConfigReadError) as caught:
        nvue_routing("storage-leaf001", yaml.safe_dump(document).encode())
    lines = str(caught.value).splitlines()
    assert all(line.startswith("switches/storage-leaf001/startup.yaml: ") for line in lines)
    text = str(caught.value)
    for expected in ("neighbor swp1s0: only numbered IPv4 neighbors", "remote-as external: the lab needs",
                     "ipv4-unicast is not enabled", "interface lo has 2 IPv4 /32 addresses",
                     "interface bond1 of type 'bond'", "interface swp2s0 bridge domain br_default: only access",
                     "VLAN 200, which bridge domain br_default does not carry",
                     "swp33s1 description is 'spine\\n neighbor", "is not an NVUE port name",
                     "interface swp2s1 is no port of swp2, whose link breakout is 1x", " password is not read back"):
        assert expected in text, expected
    assert len(lines) == 12  # these, and swp2s0 no port of swp2 either


@pytest.mark.parametrize("content", [b"- set: [", b"{}", b"- unset: {}\n", b"\xff"])
def test_not_an_nvue_startup_file(content: bytes) -> None:
    with pytest.raises(ConfigReadError, match=r"^switches/x/startup.yaml: not "):
        nvue_routing("x", content)


# -- EOS against the plan, and against SONiC spines ---------------------------------------------------------------
@pytest.fixture(scope="module")
def eos_compiled(tmp_path_factory: pytest.TempPathFactory) -> Topology:
    return compile_spec(eos_spec(tmp_path_factory.mktemp("eos"))).topology


@pytest.fixture(scope="module")
def eos_fabric(eos_compiled: Topology) -> FabricTopology:
    [storage] = [ft for ft in eos_compiled.fabrics if ft.fabric.name == "storage"]
    return storage


def test_eos_reads_back_what_the_plan_gives(eos: dict[str, SwitchRouting], eos_fabric: FabricTopology) -> None:
    leaf = eos["storage-leaf001"]
    assert (leaf.asn, leaf.router_id, leaf.loopback) == (65100, IPv4Address("10.22.0.5"),
                                                         IPv4Interface("10.22.0.5/32"))
    assert (leaf.maximum_paths, leaf.multipath_relax, leaf.allowas_in) == (32, True, 0)  # EOS relaxes by default
    [vlan] = leaf.vlans
    assert (vlan.name, vlan.vid, vlan.mtu) == ("vlan100", 100, 9100) and len(vlan.members) == 32
    assert vlan.addresses == (IPv4Interface("10.20.0.1/26"), IPv4Interface("10.20.128.1/24"))  # pods: a secondary
    assert all((n.keepalive_s, n.hold_s) == (3, 9) for s in eos.values() for n in s.neighbors)
    planned = Counter(frozenset((k.a.device, k.z.device)) for k in eos_fabric.links if k.tier == LEAF_SPINE)
    read = Counter(frozenset((s.name, n.description.partition(":")[0])) for s in eos.values() for n in s.neighbors)
    assert read == Counter({pair: 2 * count for pair, count in planned.items()})


def test_eos_every_planned_cable_lands_on_a_read_back_port(eos: dict[str, SwitchRouting],
                                                           eos_fabric: FabricTopology) -> None:
    """The lab puts every planned leaf-spine cable on the port the description names (no problem raised), and
    both ends' /31 hold the session's two addresses."""
    lab = lab_fabric("h100-4su", eos_fabric, eos)
    assert len(lab.veths) == sum(1 for k in eos_fabric.links if k.tier == LEAF_SPINE)
    by_ns = {ns: eos[name] for name, ns in lab.namespaces.items()}
    for v in lab.veths:
        [a] = [p for p in by_ns[v.a_namespace].ports if p.name == v.a_interface]
        [z] = [p for p in by_ns[v.z_namespace].ports if p.name == v.z_interface]
        assert a.addresses[0].network == z.addresses[0].network and a.mtu == z.mtu == 9100


def test_eos_unused_interfaces_are_no_ports_of_the_read_back(eos: dict[str, SwitchRouting],
                                                              eos_fabric: FabricTopology) -> None:
    """The spines' .cfg shuts every interface no cable uses (`description unused`, `shutdown`): the read-back
    leaves those out (they carry nothing, no planned cable is on them), so its ports are exactly the cabled ones;
    a shut interface whose description names its port is still a port, down (test_eos_every_value_comes_from_the
    _file)."""
    cli = _eos_file("storage-spine01").decode()
    unused = re.findall(r"^interface (Ethernet\S+)\n   description unused\n   shutdown\n", cli, re.M)
    spine = eos["storage-spine01"]
    [switch] = [sw for sw in eos_fabric.switches if sw.name == "storage-spine01"]
    assert len(unused) == 128 - len(spine.ports) > 0
    assert len(spine.ports) == sum(1 for k in eos_fabric.links if "storage-spine01" in (k.a.device, k.z.device))
    assert all(p.up and p.panel for p in spine.ports) and switch.model.name == "7060X6-64PE"
    assert not {kernel_name(n) for n in unused} & {p.name for p in spine.ports}


def test_eos_announces_the_planned_prefixes_with_full_ecmp(eos: dict[str, SwitchRouting],
                                                           eos_fabric: FabricTopology, eos_compiled: Topology) -> None:
    planned = planned_networks(eos_compiled, eos_fabric)
    assert all(set(prefixes) == set(eos[name].networks) for name, prefixes in planned.items())
    widths = _widths(eos)
    uplinks = {name: len(s.neighbors) for name, s in eos.items()}
    for leaf in (s for s in EOS_SWITCHES if "leaf" in s):
        others = [p for other in EOS_SWITCHES if "leaf" in other and other != leaf for p in planned[other]]
        assert {widths[(leaf, p)] for p in others} == {(uplinks[leaf], min(uplinks[leaf], 32))}


def test_eos_leaves_mirror_sonic_spines(tmp_path: Path) -> None:
    """One fabric, two dialects: EOS leaves (Arista 7060DX5) under SONiC spines (SN5600). Every session an EOS leaf
    configures has its mirror in a spine's config_db.json, at one MTU over one /31, and the same ECMP a
    SONiC-only fabric gets (each leaf's prefixes over every uplink)."""
    spec = storage_spec(tmp_path, SONIC_STORAGE, "    switch: {leaf: 7060DX5-64S, spine: SN5600}\n"
                                                 "    nos: {leaf: eos, spine: sonic}\n")
    compiled = compile_spec(spec)
    artifacts = {a.path: a.content for a in render_spec(compiled) if a.path.startswith("switches/storage-")}
    [storage] = [ft for ft in compiled.topology.fabrics if ft.fabric.name == "storage"]
    switches: dict[str, SwitchRouting] = {}
    for sw in storage.switches:
        nos = systems()[storage.fabric.nos[sw.tier]]
        assert nos.routing is not None
        switches[sw.name] = nos.routing(sw.name, artifacts[f"switches/{sw.name}/{nos.data.config_file(sw.name)}"])
    owner = {a.ip: (s.name, p) for s in switches.values() for p in s.ports for a in p.addresses}
    leaves = [s for s in switches.values() if s.name.startswith("storage-leaf")]
    assert leaves and all(p.name.startswith("et") for s in leaves for p in s.ports)
    for leaf in leaves:
        for n in leaf.neighbors:
            spine_name, spine_port = owner[n.address]
            spine = switches[spine_name]
            assert spine_port.name.startswith("Ethernet") and spine.asn == n.remote_asn
            [back] = [m for m in spine.neighbors if m.address == n.local_address]
            assert (back.remote_asn, back.description) == (leaf.asn, leaf.name)
            assert n.local_address is not None
            _, leaf_port = owner[n.local_address]
            assert leaf_port.addresses[0].network == spine_port.addresses[0].network
            assert leaf_port.mtu == spine_port.mtu == 9100
    lab = lab_fabric(compiled.topology.cluster.metadata.name, storage, switches)
    assert len(lab.veths) == sum(1 for k in storage.links if k.tier == LEAF_SPINE)
    widths = _widths(switches)
    for leaf in leaves:
        far = next(s for s in leaves if s is not leaf)
        assert widths[(leaf.name, far.loopback.network)] == (len(leaf.neighbors), len(leaf.neighbors))


def test_eos_every_value_comes_from_the_file(eos: dict[str, SwitchRouting]) -> None:
    cli = _eos_file("storage-leaf001").decode()
    cli = re.sub(r"(   neighbor (\S+) remote-as 65000\n)", r"\1   neighbor \2 allowas-in 2\n", cli)
    cli = cli.replace("router bgp 65100\n", "router bgp 65100\n   neighbor SPINES peer group\n"
                      "   neighbor SPINES remote-as 65009\n   neighbor SPINES allowas-in 2\n"
                      "   no bgp bestpath as-path multipath-relax\n")
    cli = cli.replace("   neighbor 10.21.0.0 remote-as 65000\n", "   neighbor 10.21.0.0 peer group SPINES\n"
                      "   neighbor 10.21.0.0 timers 10 30\n   neighbor 10.21.0.0 shutdown\n")
    cli = cli.replace("   maximum-paths 32 ecmp 32\n", "").replace("   timers bgp 3 9\n", "")
    cli = cli.replace("interface Ethernet33/1\n   description storage-spine01:1/1 (port 33, cable 10 m)\n"
                      "   no shutdown\n", "interface Ethernet33/1\n   description storage-spine01:1/1 (port 33, "
                      "cable 10 m)\n   shutdown\n")
    cli = cli.replace("      network 10.22.0.5/32\n", "      redistribute connected\n")
    edited = eos_routing("storage-leaf001", cli.encode())
    assert (edited.maximum_paths, edited.multipath_relax, edited.allowas_in) == (1, False, 2)  # EOS: one path
    [changed] = [n for n in edited.neighbors if n.address == IPv4Address("10.21.0.0")]
    assert (changed.remote_asn, changed.keepalive_s, changed.hold_s, changed.shutdown) == (65009, 10, 30, True)
    assert {(n.keepalive_s, n.hold_s) for n in edited.neighbors if n is not changed} == {(60, 180)}
    assert not next(p for p in edited.ports if p.name == "et33_1").up
    assert IPv4Network("10.22.0.5/32") in edited.networks and IPv4Network("10.21.0.2/31") in edited.networks
    assert IPv4Network("10.21.0.0/31") not in edited.networks  # the shut port's subnet is not connected
    assert edited.networks != eos["storage-leaf001"].networks


def test_eos_bad_file_reports_every_problem_at_once() -> None:
    cli = _eos_file("storage-leaf001").decode()
    cli = cli.replace("\nip routing\n", "\n").replace("router bgp 65100\n", "router bgp 65100\n"
                      "   neighbor 10.21.9.9 remote-as sixty-five\n   neighbor 10.21.9.8 peer group NONE\n"
                      "   neighbor 10.21.9.8 remote-as 65000\n   neighbor 10.21.9.7 remote-as 65000\n"
                      "   neighbor 10.21.9.7 route-map IN in\n")
    cli = cli.replace("description storage-spine01:1/2 (port 34, cable 10 m)", "description storage-spine01:1/2")
    cli = cli.replace("description gpu001:Slot1P1 (port 1, cable 15 m)", "description gpu001:Slot1P1 (port 2/1, x)")
    cli = cli.replace("interface Vlan100\n", "interface Vlan200\n")
    cli = cli.replace("interface Loopback0\n   description router-id\n",
                      "interface Loopback0\n   description router-id\n   ip address 10.22.0.99/32\n")
    cli += "interface Port-Channel1\n   no switchport\n!\ninterface Ethernet65/1\n   description x (port 65, y)\n"
    cli += "   switchport mode trunk\n   channel-group 1 mode active\n"
    with pytest.raises(ConfigReadError) as caught:
        eos_routing("storage-leaf001", cli.encode())
    lines = str(caught.value).splitlines()
    assert all(line.startswith("switches/storage-leaf001/storage-leaf001.cfg: ") for line in lines)
    text = str(caught.value)
    for expected in ("no `ip routing`", "neighbor 10.21.9.9 remote-as: 'sixty-five'",
                     "peer group 'NONE' is not configured", "neighbor 10.21.9.7 route-map is not read back",
                     "interface Ethernet34/1: its description 'storage-spine01:1/2' does not say",
                     "interface Ethernet1/1 (speed 400g-8) cannot be port 2/1",
                     "interface Vlan200 is the SVI of VLAN 200", "Loopback0 has 2 IPv4 addresses",
                     "interface Port-Channel1 is not read back",
                     "Ethernet65/1: switchport mode trunk is not read back",
                     "Ethernet65/1: channel-group 1 mode active is not read back"):
        assert expected in text, expected
    assert len(lines) == 11


def test_kernel_names() -> None:
    assert [kernel_name(n) for n in ("Ethernet33/1", "Ethernet1", "Vlan100")] == ["et33_1", "et1", "vlan100"]
