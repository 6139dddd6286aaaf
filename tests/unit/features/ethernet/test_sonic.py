"""SONiC target: config_db.json per SONiC switch of h100-4su's RoCE storage fabric (SN5600, 2 x 400G per cage).

Every file is validated against SONiC's own YANG models in tests/external/ethernet/test_sonic_yang.py. The tests
here check what the YANG does not: table names (a misspelled table passes the validator silently),
lane strings, values as strings, TC range, pool sizes present, the lossless chain end to end, headroom and
cable length per port from the cabling plan, determinism; and the dynamic buffer model against the traditional
one (only the buffer tables differ, lossless PGs NULL, the CSV predicts the traditional profiles' headroom).
"""
from __future__ import annotations

import dataclasses
import json
import math
import re
from pathlib import Path
from typing import Any

import pytest

from fabricgen.core.errors import SpecError
from fabricgen.features.ethernet.nos.sonic import config_db as sonic
from fabricgen.features.ethernet.nos.sonic.headroom import asic_headroom
from fabricgen.features.ethernet.switch_view import HOST_VLAN, switch_views
from fabricgen.pipeline import Compiled, compile_spec
from tests.conftest import INVENTORIES
from tests.helpers.ethernet import SHP, STORAGE_SWITCHES, WATCHDOG
from tests.helpers.ethernet import storage_spec as _storage_spec

# Every table the SONiC target may write (each has a YANG model; a typo would be skipped by the validator).
ALLOWED_TABLES = {
    "DEVICE_METADATA", "PORT", "INTERFACE", "LOOPBACK_INTERFACE", "VLAN", "VLAN_MEMBER", "VLAN_INTERFACE",
    "BGP_NEIGHBOR", "MGMT_PORT", "MGMT_INTERFACE", "DSCP_TO_TC_MAP", "TC_TO_PRIORITY_GROUP_MAP", "TC_TO_QUEUE_MAP",
    "MAP_PFC_PRIORITY_TO_QUEUE", "PORT_QOS_MAP", "SCHEDULER", "QUEUE", "WRED_PROFILE", "BUFFER_POOL",
    "BUFFER_PROFILE", "BUFFER_PG", "BUFFER_QUEUE", "BUFFER_PORT_INGRESS_PROFILE_LIST",
    "BUFFER_PORT_EGRESS_PROFILE_LIST", "CABLE_LENGTH", "PFC_WD",
}
LOSSLESS_DSCP, LOSSLESS_PRIO, CNP_DSCP, CNP_PRIO = 26, 3, 48, 6


@pytest.fixture(scope="module")
def compiled() -> Compiled:
    return compile_spec(INVENTORIES / "h100-4su.yaml")


@pytest.fixture(scope="module")
def artifacts(compiled: Compiled) -> dict[str, bytes]:
    return {a.path: a.content for a in sonic.render(compiled.topology)}


@pytest.fixture(scope="module")
def dbs(artifacts: dict[str, bytes]) -> dict[str, dict[str, Any]]:
    return {path.split("/")[1]: json.loads(content) for path, content in artifacts.items()
            if path.endswith("/config_db.json")}


def _cable_lengths(compiled: Compiled, switch: str) -> dict[int, float]:
    """Logical port number -> cable length of that port, straight from the cabling plan."""
    out = {}
    for cable in compiled.topology.cables:
        for end in (cable.a, cable.z):
            if end.device == switch:
                out[end.port_number] = cable.length_m
    return out


def _port_numbers(compiled: Compiled, switch: str) -> dict[str, int]:
    """SONiC port name -> logical port number of the topology."""
    ft = compiled.topology.fabric("storage")
    view = next(v for v in switch_views(compiled.topology, ft) if v.name == switch)
    return {p.name: p.view.number for p in sonic.sonic_ports(view, sonic.sonic_switch(view.model))}


# -- what the YANG does not check -------------------------------------------------------------------------------
def test_artifact_paths(artifacts: dict[str, bytes]) -> None:
    assert sorted(artifacts) == sorted(f"switches/{s}/{f}" for s in STORAGE_SWITCHES
                                       for f in ("config_db.json", "pfc-headroom.csv"))


def _strings_only(value: Any, where: str) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            assert isinstance(key, str)
            _strings_only(item, f"{where}.{key}")
    else:
        assert isinstance(value, str), f"{where} is {value!r}: SONiC tooling expects strings"


def test_tables_values_and_device_metadata(dbs: dict[str, dict[str, Any]]) -> None:
    for switch, db in dbs.items():
        assert set(db) <= ALLOWED_TABLES, set(db) - ALLOWED_TABLES
        _strings_only(db, switch)
        meta = db["DEVICE_METADATA"]["localhost"]
        assert meta["hostname"] == switch
        assert meta["type"] == ("LeafRouter" if "leaf" in switch else "SpineRouter")
        assert (meta["platform"], meta["hwsku"]) == ("x86_64-nvidia_sn5600-r0", "Mellanox-SN5600-O128")
        assert meta["buffer_model"] == "traditional"
        assert meta["docker_routing_config_mode"] == "separated", "split: FRR would ignore BGP_NEIGHBOR"
        assert meta["bgp_asn"] == ("65000" if "spine" in switch else str(65100 + int(switch[-3:]) - 1))
        # h100-4su gives management 10.23.0.0/24 with gateway 10.23.0.1: each switch gets eth0 with it
        (key, value), = db["MGMT_INTERFACE"].items()
        assert key.startswith("eth0|10.23.0.") and key != "eth0|10.23.0.1/24" and value == {"gwaddr": "10.23.0.1"}


def test_ports_lanes_and_names(compiled: Compiled, dbs: dict[str, dict[str, Any]]) -> None:
    for switch, db in dbs.items():
        ports = db["PORT"]
        assert set(ports) == set(_port_numbers(compiled, switch)), "one PORT entry per used port"
        seen: set[int] = set()
        for name, port in ports.items():
            assert re.fullmatch(r"\d+(,\d+)*", port["lanes"]), f"{switch} {name}: lanes {port['lanes']!r}"
            lanes = [int(x) for x in port["lanes"].split(",")]
            assert lanes == list(range(lanes[0], lanes[0] + 4)), "2 x 400G per 8-lane OSFP cage: 4 lanes each"
            assert name == f"Ethernet{lanes[0]}", "SONiC names a port after its first lane"
            assert not seen & set(lanes)
            seen |= set(lanes)
            cage, half = divmod(lanes[0], 8)
            assert port["index"] == str(cage + 1) and port["alias"] == f"etp{cage + 1}{'ab'[half // 4]}"
            assert (port["speed"], port["mtu"], port["fec"], port["admin_status"]) == ("400000", "9100", "rs", "up")
            assert re.fullmatch(r"[\w-]+:[\w/-]+", port["description"]), port["description"]
    # upstream Mellanox-SN5600-O128/port_config.ini: "Ethernet4  4,5,6,7  etp1b  1  400000"
    first = dbs["storage-leaf001"]["PORT"]
    assert first["Ethernet0"]["lanes"] == "0,1,2,3" and first["Ethernet0"]["alias"] == "etp1a"
    assert first["Ethernet4"]["lanes"] == "4,5,6,7" and first["Ethernet4"]["alias"] == "etp1b"
    assert first["Ethernet8"]["alias"] == "etp2a" and first["Ethernet0"]["description"] == "gpu001:Slot1P1"


def test_routing_vlan_and_bgp(compiled: Compiled, dbs: dict[str, dict[str, Any]]) -> None:
    for view in switch_views(compiled.topology, compiled.topology.fabric("storage")):
        db = dbs[view.name]
        ports = {p.view.number: p.name for p in sonic.sonic_ports(view, sonic.sonic_switch(view.model))}
        assert db["LOOPBACK_INTERFACE"] == {"Loopback0": {}, f"Loopback0|{view.loopback}/32": {}}
        for pv in view.routed_ports:
            name = ports[pv.number]
            assert db["INTERFACE"][name] == {} and f"{name}|{pv.address}" in db["INTERFACE"]
            assert db["BGP_NEIGHBOR"][pv.peer_address] == db["BGP_NEIGHBOR"][pv.peer_address] | {
                "asn": str(pv.peer_asn), "name": pv.peer, "local_addr": pv.address.split("/")[0]}
        assert len(db["BGP_NEIGHBOR"]) == len(view.routed_ports)
        hosts = [ports[pv.number] for pv in view.host_ports]
        if not hosts:
            assert "VLAN" not in db and "VLAN_MEMBER" not in db
            continue
        vlan = f"Vlan{HOST_VLAN}"
        assert db["VLAN"][vlan]["vlanid"] == str(HOST_VLAN)
        assert set(db["VLAN_MEMBER"]) == {f"{vlan}|{h}" for h in hosts}
        assert not set(hosts) & set(db["INTERFACE"]), "a VLAN member is no router interface"
        prefix = view.host_subnet.split("/")[1]
        assert db["VLAN_INTERFACE"] == {vlan: {}, f"{vlan}|{view.gateway}/{prefix}": {}}


def test_qos_maps_cover_every_dscp_and_valid_tcs(dbs: dict[str, dict[str, Any]]) -> None:
    for db in dbs.values():
        dscp = db["DSCP_TO_TC_MAP"]["ROCE"]
        assert set(dscp) == {str(d) for d in range(64)}
        assert all(tc in {str(t) for t in range(8)} for tc in dscp.values()), "TCs 0-7 (the YANG allows 0-15)"
        assert {d for d, tc in dscp.items() if tc != "0"} == {str(LOSSLESS_DSCP), str(CNP_DSCP)}
        assert db["TC_TO_QUEUE_MAP"]["ROCE"] == {str(t): str(t) for t in range(8)}
        assert db["MAP_PFC_PRIORITY_TO_QUEUE"]["ROCE"] == {str(t): str(t) for t in range(8)}
        pools = db["BUFFER_POOL"]
        assert set(pools) == {"ingress_lossless_pool", "egress_lossless_pool", "egress_lossy_pool"}
        assert all(int(pool["size"]) > 0 for pool in pools.values()), "pool sizes present (the YANG allows none)"
        assert pools["ingress_lossless_pool"]["xoff"] == "0", "no shared headroom pool: size = xoff + xon"


def test_lossless_chain_end_to_end(dbs: dict[str, dict[str, Any]]) -> None:
    """DSCP 26 -> TC 3 -> PG 3 -> pfc_enable "3" -> queue 3 marks ECN; CNP DSCP 48 -> TC 6 -> strict queue."""
    for switch, db in dbs.items():
        for port, qmap in db["PORT_QOS_MAP"].items():
            where = f"{switch} {port}"
            tc = db["DSCP_TO_TC_MAP"][qmap["dscp_to_tc_map"]][str(LOSSLESS_DSCP)]
            assert tc == str(LOSSLESS_PRIO), where
            pg = db["TC_TO_PRIORITY_GROUP_MAP"][qmap["tc_to_pg_map"]][tc]
            assert pg == str(LOSSLESS_PRIO) and qmap["pfc_enable"] == pg and qmap["pfcwd_sw_enable"] == pg, where
            queue = db["TC_TO_QUEUE_MAP"][qmap["tc_to_queue_map"]][tc]
            entry = db["QUEUE"][f"{port}|{queue}"]
            wred = db["WRED_PROFILE"][entry["wred_profile"]]
            assert wred == {"ecn": "ecn_all", "wred_green_enable": "true", "green_min_threshold": str(150 * 1024),
                            "green_max_threshold": str(1500 * 1024), "green_drop_probability": "20"}, where
            assert db["SCHEDULER"][entry["scheduler"]] == {"type": "DWRR", "weight": "50"}
            assert db["BUFFER_PG"][f"{port}|{pg}"]["profile"].startswith("pg_lossless_"), where
            assert db["BUFFER_QUEUE"][f"{port}|{queue}"]["profile"] == "egress_lossless_profile"
            cnp_tc = db["DSCP_TO_TC_MAP"][qmap["dscp_to_tc_map"]][str(CNP_DSCP)]
            assert cnp_tc == str(CNP_PRIO)
            cnp_queue = db["QUEUE"][f"{port}|{db['TC_TO_QUEUE_MAP']['ROCE'][cnp_tc]}"]
            assert db["SCHEDULER"][cnp_queue["scheduler"]] == {"type": "STRICT"} and "wred_profile" not in cnp_queue
            others = [q for q in range(8) if q != LOSSLESS_PRIO]
            assert all("wred_profile" not in db["QUEUE"][f"{port}|{q}"] for q in others), "ECN on queue 3 only"
            assert db["PFC_WD"][port] == {"action": "drop", "detection_time": "200", "restoration_time": "400"}
        assert set(db["PORT_QOS_MAP"]) == set(db["PORT"])


def test_headroom_and_cable_length_per_port_from_the_cabling_plan(compiled: Compiled,
                                                                  dbs: dict[str, dict[str, Any]]) -> None:
    for switch, db in dbs.items():
        numbers = _port_numbers(compiled, switch)
        lengths = _cable_lengths(compiled, switch)
        assert set(db["CABLE_LENGTH"]["AZURE"]) == set(db["PORT"])
        for port, number in numbers.items():
            metres = math.ceil(lengths[number])
            assert db["CABLE_LENGTH"]["AZURE"][port] == f"{metres}m"
            name = db["BUFFER_PG"][f"{port}|{LOSSLESS_PRIO}"]["profile"]
            assert name == f"pg_lossless_400000_{metres}m_profile", "buffermgrd's own name, so it reuses ours"
            profile = db["BUFFER_PROFILE"][name]
            room = asic_headroom("spectrum-4", speed_gbps=400, lanes=4, cable_m=metres, port_mtu=9100)
            assert (profile["xoff"], profile["xon"], profile["size"]) == (str(room.xoff), str(room.xon),
                                                                          str(room.size)), f"{switch} {port}"
            assert profile["pool"] == "ingress_lossless_pool"
    # the storage fabric's cables: 3, 7, 10 and 15 m -> four lossless profiles across the fabric
    names = {n for db in dbs.values() for n in db["BUFFER_PROFILE"] if n.startswith("pg_lossless_")}
    assert names == {f"pg_lossless_400000_{m}m_profile" for m in (3, 7, 10, 15)}


def test_headroom_csv_matches_the_profiles(artifacts: dict[str, bytes], dbs: dict[str, dict[str, Any]]) -> None:
    for switch, db in dbs.items():
        lines = artifacts[f"switches/{switch}/pfc-headroom.csv"].decode().splitlines()
        header = lines[0].split(",")
        assert header == list(sonic.CSV_FIELDS)
        rows = [dict(zip(header, line.split(","), strict=True)) for line in lines[1:]]
        assert {r["port"] for r in rows} == set(db["PORT"])
        for row in rows:
            profile = db["BUFFER_PROFILE"][row["profile"]]
            assert (row["xoff"], row["xon"], row["size"]) == (profile["xoff"], profile["xon"], profile["size"])
            assert row["cable_length"] == db["CABLE_LENGTH"]["AZURE"][row["port"]]
            assert (row["asic"], row["cell_size"], row["small_packet_percentage"]) == ("spectrum-4", "192", "50")


def test_output_is_deterministic(compiled: Compiled, artifacts: dict[str, bytes]) -> None:
    again = {a.path: a.content for a in sonic.render(compile_spec(INVENTORIES / "h100-4su.yaml").topology)}
    assert again == artifacts
    for path, content in artifacts.items():
        if path.endswith(".json"):
                assert content.decode() == sonic.dump_config_db(json.loads(content)), "canonical layout"


# -- which switches, and refusals -------------------------------------------------------------------------------
def test_only_sonic_switches_are_rendered(tmp_path: Path) -> None:
    spec = _storage_spec(tmp_path, "    switch: SN5600\n    nos: sonic\n",
                         "    switch: {leaf: SN5600, spine: 7060X6-64PE}\n    nos: {leaf: sonic, spine: eos}\n")
    paths = {a.path for a in sonic.render(compile_spec(spec).topology)}
    assert {p.split("/")[1] for p in paths} == set(STORAGE_SWITCHES[:4])


def test_arista_is_not_a_sonic_target(tmp_path: Path) -> None:
    """Refused at build, at the nos line, with the NOS that does run there (nos/sonic.yaml switches.models)."""
    spec = _storage_spec(tmp_path, "    switch: SN5600\n", "    switch: 7060X6-64PE\n")
    with pytest.raises(SpecError, match=r"fabrics\.storage\.nos: SONiC does not run on the leaf switch 7060X6-64PE "
                                        r"\(Arista\).*nos: eos runs on 7060X6-64PE"):
        compile_spec(spec)


def test_lossless_priority_zero_is_refused(tmp_path: Path) -> None:
    spec = _storage_spec(tmp_path, "lossless: {dscp: 26, priority: 3}", "lossless: {dscp: 26, priority: 0}")
    with pytest.raises(ValueError, match="priority group 0"):
        sonic.render(compile_spec(spec).topology)


def test_sn4700_200g_breakout_names() -> None:
    """lab-1su: SN4700 (8-lane QSFP-DD) at 2 x 200G: 4 lanes per port, Spectrum-3 headroom."""
    db = json.loads(next(a.content for a in sonic.render(compile_spec(INVENTORIES / "lab-1su.yaml").topology)
                         if a.path.endswith("config_db.json")))
    assert db["DEVICE_METADATA"]["localhost"]["hwsku"] == "ACS-MSN4700"
    assert (db["PORT"]["Ethernet4"]["lanes"], db["PORT"]["Ethernet4"]["alias"]) == ("4,5,6,7", "etp1b")
    assert db["PORT"]["Ethernet4"]["speed"] == "200000"
    profile = db["BUFFER_PROFILE"][db["BUFFER_PG"]["Ethernet4|3"]["profile"]]
    metres = int(db["CABLE_LENGTH"]["AZURE"]["Ethernet4"].rstrip("m"))
    room = asic_headroom("spectrum-3", speed_gbps=200, lanes=4, cable_m=metres, port_mtu=9100)
    assert profile["size"] == str(room.size)


# -- the dynamic buffer model -----------------------------------------------------------------------------------
DYNAMIC_TABLES = {"DEFAULT_LOSSLESS_BUFFER_PARAMETER", "LOSSLESS_TRAFFIC_PATTERN"}


@pytest.fixture(scope="module")
def dynamic_artifacts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    spec = _storage_spec(tmp_path_factory.mktemp("dynamic"), WATCHDOG, WATCHDOG + "      buffer_model: dynamic\n")
    return {a.path: a.content for a in sonic.render(compile_spec(spec).topology)}


@pytest.fixture(scope="module")
def dynamic_dbs(dynamic_artifacts: dict[str, bytes]) -> dict[str, dict[str, Any]]:
    return {path.split("/")[1]: json.loads(content) for path, content in dynamic_artifacts.items()
            if path.endswith("/config_db.json")}


def test_dynamic_model_changes_only_the_buffer_tables(dbs: dict[str, dict[str, Any]],
                                                      dynamic_dbs: dict[str, dict[str, Any]]) -> None:
    """Same ports, maps, queues, cable lengths and lossy buffers; the lossless headroom is left to buffermgrd."""
    assert set(dynamic_dbs) == set(dbs)
    for switch, db in dynamic_dbs.items():
        static = dbs[switch]
        assert set(db) == set(static) | DYNAMIC_TABLES, switch
        for table in set(static) - {"DEVICE_METADATA", "BUFFER_POOL", "BUFFER_PROFILE", "BUFFER_PG"}:
            assert db[table] == static[table], f"{switch} {table}"
        assert db["DEVICE_METADATA"]["localhost"] == static["DEVICE_METADATA"]["localhost"] | {
            "buffer_model": "dynamic"}
        assert db["BUFFER_PROFILE"] == {name: profile for name, profile in static["BUFFER_PROFILE"].items()
                                        if not name.startswith("pg_lossless_")}, "no static lossless profile"
        for key, entry in db["BUFFER_PG"].items():
            lossless = key.endswith(f"|{LOSSLESS_PRIO}")
            assert entry == ({"profile": "NULL"} if lossless else static["BUFFER_PG"][key]), f"{switch} {key}"
        assert set(db["BUFFER_PG"]) == set(static["BUFFER_PG"])
        pools = db["BUFFER_POOL"]
        assert pools["ingress_lossless_pool"] == {"type": "ingress", "mode": "dynamic"}, "sized by buffermgrd, no SHP"
        assert pools["egress_lossy_pool"] == {"type": "egress", "mode": "dynamic"}
        assert pools["egress_lossless_pool"] == static["BUFFER_POOL"]["egress_lossless_pool"]
        assert db["DEFAULT_LOSSLESS_BUFFER_PARAMETER"] == {"AZURE": {"default_dynamic_th": "0"}}
        assert {p["dynamic_th"] for n, p in static["BUFFER_PROFILE"].items() if n.startswith("pg_lossless_")} == {"0"}
        # sonic-buildimage buffers_config.j2's dynamic-mode defaults, which the catalog carries
        assert db["LOSSLESS_TRAFFIC_PATTERN"] == {"AZURE": {"mtu": "1024", "small_packet_percentage": "50"}}


def test_dynamic_headroom_csv_predicts_what_buffermgrd_computes(artifacts: dict[str, bytes],
                                                               dynamic_artifacts: dict[str, bytes],
                                                               dbs: dict[str, dict[str, Any]]) -> None:
    """The prediction is the headroom the traditional model writes for the same port, under buffermgrd's name."""
    for switch, db in dbs.items():
        lines = dynamic_artifacts[f"switches/{switch}/pfc-headroom.csv"].decode().splitlines()
        header = lines[0].split(",")
        assert header == [f"predicted_{f}" if f in ("xoff", "xon", "size", "profile") else f
                          for f in sonic.CSV_FIELDS]
        static = artifacts[f"switches/{switch}/pfc-headroom.csv"].decode().splitlines()
        assert [line.split(",")[:-4] for line in lines[1:]] == [line.split(",")[:-4] for line in static[1:]]
        for line in lines[1:]:
            row = dict(zip(header, line.split(","), strict=True))
            profile = db["BUFFER_PROFILE"][db["BUFFER_PG"][f"{row['port']}|{LOSSLESS_PRIO}"]["profile"]]
            assert (row["predicted_xoff"], row["predicted_xon"], row["predicted_size"]) == (
                profile["xoff"], profile["xon"], profile["size"])
            assert row["predicted_profile"] == f"pg_lossless_400000_{row['cable_length']}_profile"


def test_dynamic_profile_names_follow_buffermgrdyn(compiled: Compiled) -> None:
    """getDynamicProfileName: "_mtu<mtu>" off 9100; "_8lane" on 8-lane ports below the family's full speed."""
    view = switch_views(compiled.topology, compiled.topology.fabric("storage"))[0]
    port = sonic.sonic_ports(view, sonic.sonic_switch(view.model))[0]
    sn5600, sn4700 = "x86_64-nvidia_sn5600-r0", "x86_64-mlnx_msn4700-r0"
    cable = f"{port.cable_length_m}m"
    assert port.dynamic_profile(9100, sn5600) == f"pg_lossless_400000_{cable}_profile"
    assert port.dynamic_profile(4200, sn5600) == f"pg_lossless_400000_{cable}_mtu4200_profile"
    eight = dataclasses.replace(port, lanes=tuple(range(8)))
    assert eight.dynamic_profile(9100, sn5600) == f"pg_lossless_400000_{cable}_8lane_profile"
    assert eight.dynamic_profile(9100, sn4700) == f"pg_lossless_400000_{cable}_profile", "SN4xxx: 400G is full"
    assert dataclasses.replace(eight, speed_mbps=800_000).dynamic_profile(9000, sn5600) == (
        f"pg_lossless_800000_{cable}_mtu9000_profile")
    assert dataclasses.replace(eight, speed_mbps=200_000).dynamic_profile(9100, sn4700) == (
        f"pg_lossless_200000_{cable}_8lane_profile")
    assert eight.dynamic_profile(9100, "x86_64-accton_as9716_32d-r0") == f"pg_lossless_400000_{cable}_profile"


def test_dynamic_port_mtu_names_the_predicted_profile(tmp_path: Path) -> None:
    spec = _storage_spec(tmp_path, WATCHDOG, WATCHDOG + "      buffer_model: dynamic\n")
    spec.write_text(spec.read_text().replace("    mtu: 9100\n", "    mtu: 9216\n"))
    content = next(a.content for a in sonic.render(compile_spec(spec).topology)
                   if a.path == "switches/storage-leaf001/pfc-headroom.csv")
    rows = [line.split(",") for line in content.decode().splitlines()[1:]]
    assert rows and all(row[-1].endswith("_mtu9216_profile") and row[7] == "9216" for row in rows)


# -- the shared headroom pool -----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def shp_artifacts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    spec = _storage_spec(tmp_path_factory.mktemp("shp"), WATCHDOG, WATCHDOG + SHP)
    return {a.path: a.content for a in sonic.render(compile_spec(spec).topology)}


@pytest.fixture(scope="module")
def dynamic_shp_artifacts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """The dynamic model with the pool at its default ratio (``{}``: 2)."""
    spec = _storage_spec(tmp_path_factory.mktemp("dynamic-shp"), WATCHDOG,
                         WATCHDOG + "      buffer_model: dynamic\n      shared_headroom_pool: {}\n")
    return {a.path: a.content for a in sonic.render(compile_spec(spec).topology)}


def _pool_by_hand(db: dict[str, Any], ratio: int) -> int:
    """buffer_pool_mellanox.lua read back from the file: ceil((sum of the lossless PGs' xoff - 10 KiB per lossless
    port) / ratio), each PG's xoff from the profile it references."""
    xoffs = [int(db["BUFFER_PROFILE"][db["BUFFER_PG"][f"{port}|{LOSSLESS_PRIO}"]["profile"]]["xoff"])
             for port in db["PORT"]]
    return math.ceil((sum(xoffs) - 10 * 1024 * len(db["PORT"])) / ratio)


def test_shared_headroom_pool_moves_the_xoff_into_the_ingress_pool(dbs: dict[str, dict[str, Any]],
                                                                   shp_artifacts: dict[str, bytes]) -> None:
    """Traditional model: only the ingress pool's xoff and the lossless profiles' sizes change (size = xon)."""
    for switch, static in dbs.items():
        db = json.loads(shp_artifacts[f"switches/{switch}/config_db.json"])
        assert set(db) == set(static)
        for table in set(static) - {"BUFFER_POOL", "BUFFER_PROFILE"}:
            assert db[table] == static[table], f"{switch} {table}"
        pool = db["BUFFER_POOL"]["ingress_lossless_pool"]
        assert pool == static["BUFFER_POOL"]["ingress_lossless_pool"] | {"xoff": str(_pool_by_hand(db, 2))}
        assert 8_000_000 < int(pool["xoff"]) < int(pool["size"]), "~128 ports x ~145 KiB xoff, halved"
        for name, profile in db["BUFFER_PROFILE"].items():
            before = static["BUFFER_PROFILE"][name]
            expected = before | {"size": before["xon"]} if name.startswith("pg_lossless_") else before
            assert profile == expected, f"{switch} {name}: xon and xoff kept, size = xon"


def test_shared_headroom_pool_csv(shp_artifacts: dict[str, bytes], dynamic_shp_artifacts: dict[str, bytes]) -> None:
    """Both models: the pool and its inputs on every row; the dynamic model predicts what buffermgrd will size."""
    for switch in STORAGE_SWITCHES:
        db = json.loads(shp_artifacts[f"switches/{switch}/config_db.json"])
        traditional = shp_artifacts[f"switches/{switch}/pfc-headroom.csv"].decode().splitlines()
        dynamic = dynamic_shp_artifacts[f"switches/{switch}/pfc-headroom.csv"].decode().splitlines()
        assert traditional[0].split(",") == [*sonic.CSV_FIELDS, *sonic.SHP_CSV_FIELDS]
        assert dynamic[0].split(",")[-1] == "predicted_shared_headroom_pool_size"
        for t_line, d_line in zip(traditional[1:], dynamic[1:], strict=True):
            row = dict(zip(traditional[0].split(","), t_line.split(","), strict=True))
            assert row["shared_headroom_pool"] == "true" and row["size"] == row["xon"]
            ports = len(traditional) - 1  # one lossless PG per port
            assert (row["over_subscribe_ratio"], row["private_headroom"]) == ("2", str(ports * 10_240))
            pooled = int(row["accumulative_xoff"]) - int(row["private_headroom"])
            assert row["shared_headroom_pool_size"] == str(-(-pooled // 2))  # the CSV shows its own arithmetic
            assert row["shared_headroom_pool_size"] == db["BUFFER_POOL"]["ingress_lossless_pool"]["xoff"]
            assert d_line.split(",")[:-5] + d_line.split(",")[-4:] == t_line.split(",")[:-5] + t_line.split(",")[-4:], (
                "the same lua, the same inputs: only the profile name may differ")


def test_dynamic_shared_headroom_pool_is_left_to_buffermgrd(dynamic_dbs: dict[str, dict[str, Any]],
                                                            dynamic_shp_artifacts: dict[str, bytes]) -> None:
    """Dynamic model: only DEFAULT_LOSSLESS_BUFFER_PARAMETER changes; no pool xoff (it would override the ratio)."""
    for switch, plain in dynamic_dbs.items():
        db = json.loads(dynamic_shp_artifacts[f"switches/{switch}/config_db.json"])
        assert {t: v for t, v in db.items() if t != "DEFAULT_LOSSLESS_BUFFER_PARAMETER"} == {
            t: v for t, v in plain.items() if t != "DEFAULT_LOSSLESS_BUFFER_PARAMETER"}
        assert db["DEFAULT_LOSSLESS_BUFFER_PARAMETER"] == {"AZURE": {"default_dynamic_th": "0",
                                                                     "over_subscribe_ratio": "2"}}
        assert "xoff" not in db["BUFFER_POOL"]["ingress_lossless_pool"]
