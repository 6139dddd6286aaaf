"""cabling/free-ports.csv: every switch connector no cable plugs into, with the id a cable there takes. A site team
grows into these (a node added, a replacement run): the list and the cable ids must agree with what the plan cables
once a node is there, and no free connector may be one a cable already takes."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest
import yaml

from fabricgen.features.cabling import sheets
from fabricgen.features.cabling.free import FreePort, free_ports
from fabricgen.features.ethernet.nos import systems
from fabricgen.features.topology.explain import server_blocks
from fabricgen.model.topology import NODE_LEAF, Topology
from fabricgen.pipeline import compile_spec
from tests.conftest import INVENTORIES
from tests.helpers.cabling import lab_with
from tests.helpers.ethernet import eos_blocks


@pytest.fixture(scope="module")
def h100() -> Topology:
    return compile_spec(INVENTORIES / "h100-4su.yaml").topology



def test_the_ufm_slots_unused_rails_are_the_compute_fabrics_only_free_ports(h100: Topology) -> None:
    """h100-4su: 127 DGX and the UFM pair (rails 0-3 of SU 4's last slot) fill every compute connector but that
    slot's rails 4-7, the second connector of cage 16 of SU 4's leaves 4-7, which a 128th DGX would take."""
    free = [(f.device, f.number, f.cage, f.cage_connector, f.port, f.optic, f.cable_id) for f in free_ports(h100)
            if f.fabric == "compute"]
    assert free == [(f"compute-su04-leaf{r}", 32, 16, 2, "16/2", "installed", f"compute-su04-leaf{r}-032")
                    for r in range(4, 8)], "the cage's optic is in: its first port is cabled"


def test_a_free_connector_is_one_no_cable_takes_and_every_one_is_listed(h100: Topology) -> None:
    """Free and cabled connectors partition each switch's: the free ids are no cable's, and with the cabled ones
    every switch's connectors 1..n are there once (a cable's id is its Z connector's; an A-end switch, a leaf's
    uplink, counts as cabled from its own free list)."""
    free = [f for f in free_ports(h100) if f.kind == "connector"]
    cable_ids = {c.physical for c in h100.cables}
    assert not {f.cable_id for f in free} & cable_ids
    switches = {sw.name: sw for ft in h100.fabrics for sw in ft.switches}
    by_switch: dict[str, list[int]] = {}
    for f in free:
        by_switch.setdefault(f.device, []).append(f.number)
    assert set(by_switch) <= set(switches)
    for name, numbers in by_switch.items():
        assert numbers == sorted(set(numbers)), name
    spines = [sw.name for sw in h100.fabric("compute").switches if sw.name.startswith("compute-spine")]
    assert len(spines) == 16 and not set(spines) & set(by_switch), "the spines' 64 cages x 2 connectors are cabled"


def test_a_node_removed_frees_its_connectors_under_the_ids_its_cables_had() -> None:
    """lab-1su without hgx07-08: their connectors on the switches that stay are listed free under the very ids
    their cables carried, so a node put back is cabled with the labels already on the cables (rack L04's OOB
    switch, which held only their BMCs, goes with them)."""
    full, fewer = lab_with(8), lab_with(6)
    remaining = {sw.name for ft in fewer.fabrics for sw in ft.switches}
    gone = {c.physical for c in full.cables if c.a.device in ("hgx07", "hgx08") and c.z.device in remaining}
    free = {f.cable_id for f in free_ports(fewer)}
    assert gone and gone <= free
    assert not {f.cable_id for f in free_ports(full)} & gone


def test_a_free_ports_role_is_where_compile_lays_it_out_and_only_host_ports_are_growth() -> None:
    """Field review (BREAKS): every free port read `spare`, and the README told the crew to plug a node into one,
    yet a rail-optimized leaf's cages past its SU's host ports and uplinks (lab-1su's SU of 8: cages 1-4 hosts,
    5-8 uplinks) are no compile's: a 9th node makes a second SU, its own leaves. Now: those read "outside the
    plan", a spine's free cages are downlinks (more leaves take them), an OOB leaf's free RJ45 ports host ports a
    node added to the rack takes (growth), its QSFP28 cages beside its uplinks' outside the plan."""
    lab = lab_with(8)
    free = {(f.device, f.port): (f.role, f.reserved) for f in free_ports(lab)}
    leaf0 = {port: kept for (device, port), kept in free.items() if device == "compute-su01-leaf0"}
    assert leaf0 and set(leaf0.values()) == {("outside the plan", "spare")}, "the SU's hosts and uplinks are cabled"
    assert min(int(port.split("/")[0]) for port in leaf0) == 9
    spines = {kept for (device, _), kept in free.items() if device.startswith("compute-spine")}
    assert spines == {("downlink", "spare")}
    oob = {kept for (device, _), kept in free.items() if device == "oob-l01"}
    assert oob == {("host port", "growth"), ("outside the plan", "spare")}
    fewer = {(f.device, f.port): (f.role, f.reserved) for f in free_ports(lab_with(6))}
    gone = [f for f in free_ports(lab_with(6)) if f.device == "compute-su01-leaf0"]
    assert {(f.role, f.reserved) for f in gone if f.cage <= 4} == {("host port", "growth")}, (
        "a partial SU's free host ports are its missing nodes' slots")
    assert fewer.keys() > free.keys() - {k for k in free if k[0] == "oob-l04"}


def test_free_ports_csv_lists_them_in_faceplate_order(h100: Topology) -> None:
    """The CSV the site team reads: one row per free connector, switch by switch, the connector numbers rising."""
    [artifact] = [a for a in sheets.render(h100) if a.path == "cabling/free-ports.csv"]
    rows = list(csv.DictReader(io.StringIO(artifact.content.decode())))
    assert tuple(rows[0]) == sheets.FREE_COLUMNS
    assert len(rows) == len(free_ports(h100))
    ufm_slot = [r for r in rows if r["device"] == "compute-su04-leaf4"]
    assert ufm_slot == [{"fabric": "compute", "device": "compute-su04-leaf4", "model": "QM9700", "rack": "N06",
                         "u": "5", "connector": "32", "cage": "16", "cage_connector": "2", "port": "16/2",
                         "interface": "", "alias": "", "form_factor": "OSFP", "free": "connector", "optic": "installed",
                         "cable_id": "compute-su04-leaf4-032", "speed": "", "breakout": "", "admin": "",
                         "role": "host port", "reserved": "management slot (ufm01+ufm02)"}], (
        "no NOS runs on an InfiniBand switch")
    [spine_port] = [r for r in rows if r["device"] == "storage-spine01" and r["port"] == "49/1"]
    assert {k: spine_port[k] for k in ("interface", "speed", "breakout", "admin", "role", "reserved")} == {
        "interface": "Ethernet384", "speed": "400G", "breakout": "2x400G[200G,100G,50G,40G,25G,10G]",
        "admin": "down (unprovisioned: add it to the spec and apply)", "role": "downlink", "reserved": "spare"}


def test_a_splitters_legs_no_device_takes_are_free_under_their_leg_ids(h100: Topology) -> None:
    """Field review (growth): oob-agg01's 1:4 breakouts to the OOB leaves of row A's last racks plug two legs of
    four; the other two are free ports a rack added takes next, listed under the splitter's leg ids and the
    ports the legs land on (3/3, 3/4 beside the cabled 3/1, 3/2), their optic already in the cage."""
    legs = [(f.port, f.cable_id, f.optic) for f in free_ports(h100) if f.device == "oob-agg01" and f.cage == 3]
    cabled = sorted(c.z.port for c in h100.cables if c.physical == "oob-agg01-003")
    assert cabled == ["3/1", "3/2"]
    assert legs == [("3/3", "oob-agg01-003/L3", "installed"), ("3/4", "oob-agg01-003/L4", "installed")]
    assert all(f.kind == "breakout leg" for f in free_ports(h100) if f.cable_id.count("/L"))


# -- the NOS's name of a free port and how the switch's configuration leaves it (field review, 2026-12-03) --------

def _configured(topology: Topology, nos: str) -> list[FreePort]:
    """The free ports of the switches ``nos`` writes a configuration for."""
    switches = {sw.name for ft in topology.fabrics if ft.fabric.nos for sw in ft.switches
                if ft.fabric.nos.get(sw.tier) == nos}
    found = [f for f in free_ports(topology) if f.device in switches and f.setting is not None]
    assert found, f"no free port on a {nos} switch"
    return found


def _configs(topology: Topology, nos: str, suffix: str) -> dict[str, bytes]:
    """switch -> its configuration file as the NOS renders it from this very topology."""
    return {a.path.split("/")[1]: a.content for a in systems()[nos].render(topology) if a.path.endswith(suffix)}


@pytest.mark.parametrize("case", ["lab-1su", "h100-4su"])
def test_a_free_ports_sonic_name_speed_breakout_and_admin_state_are_its_config_db_rows(case: str) -> None:
    """Every free port of a SONiC switch is a PORT row of the switch's config_db.json under its interface name, admin
    down, at the speed the row runs (Mb/s), its cage in the BREAKOUT_CFG mode listed (keyed by the cage's first
    port): the name an engineer types on the switch and what it does before anyone configures it. A connector
    carrying several ports (a QSFP-DD cage at 2 x 200G) lists each (field review: only its first was)."""
    topology = compile_spec(INVENTORIES / f"{case}.yaml").topology
    configs = {name: json.loads(text) for name, text in _configs(topology, "sonic", "config_db.json").items()}
    free = _configured(topology, "sonic")
    for f in free:
        db = configs[f.device]
        rows = [db["PORT"][name] for name in f.interface.split()]
        parent = min((n for n, r in db["PORT"].items() if r["index"] == str(f.cage)), key=lambda n: int(n[8:]))
        assert f.setting is not None
        for row in rows:
            assert (row["admin_status"], int(row["speed"]), db["BREAKOUT_CFG"][parent]["brkout_mode"]) == (
                f.setting.admin, int(f.setting.speed.removesuffix("G")) * 1000, f.setting.breakout), (f, row)
            assert row["index"] == str(f.cage) and "description" not in row, "a dark port: no peer"
        assert f.alias.split() == [row["alias"] for row in rows] and f.alias.startswith("etp"), "its LLDP port ids"
        connectors = 2 if f.cage_connector else 1  # of its cage
        ports = int(f.setting.breakout.partition("x")[0]) // connectors
        assert len(rows) == (1 if f.kind == "breakout leg" else ports), f
    assert {f.setting.admin for f in free if f.setting} == {"down"}
    if case == "h100-4su":
        assert ("inband-leaf001", "31/1", "Ethernet240 Ethernet244", "etp31a etp31b") in {
            (f.device, f.port, f.interface, f.alias) for f in free}, "a 2 x 200G QSFP-DD cage's two ports"


def _variant(tmp_path: Path, old: str, new: str) -> Topology:
    """h100-4su with one edit (the golden dialect cases')."""
    text = (INVENTORIES / "h100-4su.yaml").read_text()
    assert text.count(old) == 1, old
    spec = tmp_path / "h100-4su.yaml"
    spec.write_text(text.replace(old, new))
    return compile_spec(spec).topology


def test_a_free_ports_nvue_name_is_not_in_startup_yaml_so_it_is_disabled_in_its_cages_breakout(tmp_path: Path
                                                                                                ) -> None:
    """h100-4su on Cumulus Linux: NVUE configures only cabled ports, so a free port's swp name is absent from
    startup.yaml (Cumulus Linux disables a data port it is not told about: admin down), and the breakout listed is
    the one startup.yaml sets on its cage's swp<cage> (none: the cage runs whole, so its one port is swp<cage>,
    the name the switch shows, not the swp<cage>s0 its tier's 400G would split it into, at the cage's 800G, breakout
    1x: field reviews)."""
    topology = _variant(tmp_path, "    switch: SN5600\n    nos: sonic\n", "    switch: SN5600\n    nos: nvue\n")
    configs = {name: yaml.safe_load(text)[0]["set"]["interface"]
               for name, text in _configs(topology, "nvue", "startup.yaml").items()}
    free = _configured(topology, "nvue")
    for f in free:
        interfaces = configs[f.device]
        assert f.setting is not None and f.interface not in interfaces, f
        breakout = interfaces.get(f"swp{f.cage}", {}).get("link", {}).get("breakout", {})  # {"2x": {}}: a key
        # a cage startup.yaml leaves whole runs as one 800G port, which `nv show interface` reports as breakout 1x
        assert (f.setting.admin, f.setting.breakout) == ("down", "".join(breakout) or "1x"), f
        assert f.setting.speed == ("" if breakout else "800G"), f
        assert re.fullmatch(rf"swp{f.cage}s\d" if breakout else f"swp{f.cage}", f.interface), f
    cabled = {(switch, name) for switch, interfaces in configs.items() for name, body in interfaces.items()
              if "up" in body.get("link", {}).get("state", {})}
    assert cabled and not {(f.device, f.interface) for f in free} & cabled
    assert any(f.setting and f.setting.breakout == "2x" for f in free), "a free port beside a cabled one"
    assert any(f.interface == f"swp{f.cage}" and f.cage_connector for f in free), "a twin cage left whole"


def test_a_free_ports_eos_interface_is_shut_in_the_cfg_and_a_cabled_one_is_not(tmp_path: Path) -> None:
    """h100-4su's storage fabric on Arista: EOS runs an interface its configuration does not name enabled (an access
    port of VLAN 1), so the .cfg shuts every interface no cable uses; a free port's Ethernet name is such a block
    (`description unused`, `shutdown`) and the sheet reads admin down from it, a cabled interface is `no shutdown`
    (the spines' unused cages, the third review's H8)."""
    topology = _variant(tmp_path, "    switch: SN5600\n    nos: sonic\n",
                        "    switch: {leaf: 7060DX5-64S, spine: 7060X6-64PE}\n    nos: eos\n")
    configs = {name: {head.split()[1]: body for head, body in eos_blocks(text.decode())
                      if head.startswith("interface Ethernet")}
               for name, text in _configs(topology, "eos", ".cfg").items()}
    free = _configured(topology, "eos")
    for f in free:
        assert re.fullmatch(rf"Ethernet{f.cage}(/\d+)?", f.interface), f
        assert configs[f.device][f.interface] == ["description unused", "shutdown"], f
        assert f.setting is not None and (f.setting.admin, f.setting.speed, f.setting.breakout) == ("down", "", ""), f
    assert any(f.device.startswith("storage-spine") for f in free), "the spines' unused cages"
    freed = {(f.device, f.interface) for f in free}
    cabled = [(switch, name, body) for switch, interfaces in configs.items() for name, body in interfaces.items()
              if "shutdown" not in body]
    assert cabled and all("no shutdown" in body and (switch, name) not in freed for switch, name, body in cabled)


def test_the_declared_server_block_is_reserved_and_explain_counts_its_ports(tmp_path: Path) -> None:
    """storage with ``server_ports: 10``, dual-homed: each leaf of the first pair keeps its last 10 host ports for
    servers; the 2 MDS and 4 OSS take 6 of each (their 12 ports), the other 4 are free ports reserved for the
    block, never listed as spares a compute node may take, and explain lists the same ports free."""
    topology = _variant(tmp_path, "topology: {kind: leaf-spine, oversubscription: 1}",
                        "topology: {kind: leaf-spine, oversubscription: 1, server_ports: 10}")
    storage = topology.fabric("storage")
    [block] = [f for f in storage.switches if f.name == "storage-leaf001"]
    blocks = server_blocks(storage)
    assert [(b["leaf"], b["ports"], len(b["used"]), b["free"]) for b in blocks] == [
        (leaf, 10, 6, ["28/1", "28/2", "29/1", "29/2"]) for leaf in ("storage-leaf001", "storage-leaf002")]
    reserved = [(f.device, f.port) for f in free_ports(topology) if f.reserved.startswith("server block")]
    assert reserved == [(b["leaf"], port) for b in blocks for port in b["free"]]
    assert {f.reserved for f in free_ports(topology) if f.device == "storage-leaf001"} == {
        "server block (server_ports 10)"}, "the pair's leaves have no other free port"
    in_block = {p.name for p in block.server_block}
    compute = [link for link in storage.links_in(NODE_LEAF)
               if link.z.device == "storage-leaf001" and link.a.device.startswith("gpu")]
    assert compute and not {link.z.name for link in compute} & in_block
    assert not [f for f in free_ports(compile_spec(INVENTORIES / "h100-4su.yaml").topology)
                if f.reserved.startswith("server block")], "no block declared, none reserved"


def test_a_sonic_free_port_says_it_is_unprovisioned_where_config_db_gives_it_no_qos_or_address() -> None:
    """lab-1su: config_db.json gives a SONiC free port no QoS map, address or VLAN, so `config interface startup`
    alone would link it without PFC; its free-ports.csv admin says so and how to provision it (the spec, then
    apply), where a switch whose free ports do not carry the flag keeps the plain state."""
    topology = compile_spec(INVENTORIES / "lab-1su.yaml").topology
    configs = {name: json.loads(text) for name, text in _configs(topology, "sonic", "config_db.json").items()}
    free = _configured(topology, "sonic")
    assert free
    for f in free:
        db = configs[f.device]
        keyed = {key.split("|")[0] for table in ("INTERFACE", "VLAN_MEMBER", "PORT_QOS_MAP")
                 for key in db.get(table, {})}
        assert f.interface and not set(f.interface.split()) & keyed, f
        assert f.setting is not None and f.setting.unprovisioned, f
    rows = list(csv.DictReader(io.StringIO(next(a.content.decode() for a in sheets.render(topology)
                                                 if a.path == "cabling/free-ports.csv"))))
    sonic = {(f.device, f.interface) for f in free}
    admins = {r["admin"] for r in rows if (r["device"], r["interface"]) in sonic}
    assert admins == {"down (unprovisioned: add it to the spec and apply)"}
    assert "" in {r["admin"] for r in rows if (r["device"], r["interface"]) not in sonic}, "InfiniBand: no config"
