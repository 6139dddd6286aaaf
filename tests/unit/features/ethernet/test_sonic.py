"""SONiC target: config_db.json per SONiC switch of h100-4su's RoCE storage fabric (SN5600, 2 x 400G per cage, SONiC
202505 by default), held against NVIDIA's own SKU data (skus/Mellanox-SN5600-O128.yaml, read from sonic-buildimage)
and, where the test says so, against vendor rows copied here verbatim.

Every file is validated against SONiC's own YANG models in tests/external/ethernet/test_sonic_yang.py. The tests
here check what the YANG does not: table names (a misspelled table passes the validator silently), the SKU's port
rows, pools and profiles, the lookup rows of the traditional model, values as strings, the lossless chain end to
end, determinism; and the dynamic buffer model against the traditional one.
"""
from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import pytest

from fabricgen.core.errors import CheckError, SpecError
from fabricgen.features.ethernet.nos.sonic import config_db as sonic
from fabricgen.features.ethernet.nos.sonic import layout
from fabricgen.features.ethernet.nos.sonic.layout import SonicLayoutError, sonic_layout
from fabricgen.features.ethernet.nos.sonic.sheet import LUA_FIELDS, TRADITIONAL_FIELDS
from fabricgen.features.ethernet.nos.sonic.skus import Sku, skus
from fabricgen.features.ethernet.switch_view import HOST_VLAN, SwitchView, switch_views
from fabricgen.pipeline import Compiled, compile_spec
from tests.conftest import INVENTORIES
from tests.helpers.ethernet import SHP, STORAGE_LEAVES, STORAGE_SWITCHES, WATCHDOG
from tests.helpers.ethernet import storage_spec as _storage_spec

# Every table the SONiC target may write (each has a YANG model; a typo would be skipped by the validator).
ALLOWED_TABLES = {
    "DEVICE_METADATA", "PORT", "BREAKOUT_CFG", "INTERFACE", "LOOPBACK_INTERFACE", "VLAN", "VLAN_MEMBER",
    "VLAN_INTERFACE",
    "BGP_NEIGHBOR", "MGMT_PORT", "MGMT_INTERFACE", "MGMT_VRF_CONFIG", "DSCP_TO_TC_MAP", "TC_TO_PRIORITY_GROUP_MAP",
    "TC_TO_QUEUE_MAP", "MAP_PFC_PRIORITY_TO_QUEUE", "PORT_QOS_MAP", "SCHEDULER", "QUEUE", "WRED_PROFILE",
    "BUFFER_POOL", "BUFFER_PROFILE", "BUFFER_PG", "BUFFER_QUEUE", "BUFFER_PORT_INGRESS_PROFILE_LIST",
    "BUFFER_PORT_EGRESS_PROFILE_LIST", "CABLE_LENGTH", "PFC_WD", "DEFAULT_LOSSLESS_BUFFER_PARAMETER",
    "LOSSLESS_TRAFFIC_PATTERN", "NTP", "NTP_SERVER", "DNS_NAMESERVER", "SYSLOG_SERVER", "SNMP",
    "SNMP_AGENT_ADDRESS_CONFIG", "TACPLUS", "TACPLUS_SERVER", "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP", "VERSIONS",
}
LOSSLESS_DSCP, LOSSLESS_PRIO, CNP_DSCP, CNP_PRIO = 26, 3, 48, 6
# NVIDIA's rows, copied from sonic-buildimage device/mellanox/x86_64-nvidia_sn5600-r0/ACS-SN5600/
# pg_profile_lookup.ini (blob d67d2d7a16): speed cable size xon xoff threshold
SN5600_ROWS = {"5m": ("250880", "19456", "231424", "0"), "40m": ("303104", "19456", "283648", "0")}
# ... and from device/mellanox/x86_64-mlnx_msn4700-r0/Mellanox-SN4700-O8C48/pg_profile_lookup.ini (9fbb8eacf9),
# the table Mellanox-SN4700-V64 links to: 200G rows, size = xon (its shared headroom pool holds the xoff)
SN4700_200G_ROWS = {"5m": ("19456", "19456", "43008", "0"), "40m": ("19456", "19456", "51200", "0")}


@pytest.fixture(scope="module")
def compiled() -> Compiled:
    return compile_spec(INVENTORIES / "h100-4su.yaml")


@pytest.fixture(scope="module")
def views(compiled: Compiled) -> dict[str, SwitchView]:
    return {v.name: v for v in switch_views(compiled.topology, compiled.topology.fabric("storage"))}


@pytest.fixture(scope="module")
def artifacts(compiled: Compiled) -> dict[str, bytes]:
    return {a.path: a.content for a in sonic.render(compiled.topology)}


@pytest.fixture(scope="module")
def dbs(artifacts: dict[str, bytes]) -> dict[str, dict[str, Any]]:
    return {path.split("/")[1]: json.loads(content) for path, content in artifacts.items()
            if path.endswith("/config_db.json") and path.split("/")[1].startswith("storage-")}


def _sku(name: str) -> Sku:
    return next(s for found in skus().values() for s in found if s.hwsku == name)


def _cabled(db: dict[str, Any]) -> dict[str, dict[str, str]]:
    """The PORT rows the plan cables (the rest are the SKU's dark ports, shut)."""
    return {name: port for name, port in db["PORT"].items() if port["admin_status"] == "up"}


def _csv(content: bytes) -> list[dict[str, str]]:
    lines = content.decode().splitlines()
    header = lines[0].split(",")
    return [dict(zip(header, line.split(","), strict=True)) for line in lines[1:]]


# -- what the YANG does not check -------------------------------------------------------------------------------
def test_artifact_paths(artifacts: dict[str, bytes]) -> None:
    storage = {p for p in artifacts if p.split("/")[1].startswith("storage-")}
    assert sorted(storage) == sorted(f"switches/{s}/{f}" for s in STORAGE_SWITCHES
                                     for f in ("config_db.json", "pfc-headroom.csv", "management-secrets.sh"))


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
        assert meta["type"] == ("ToRRouter" if "leaf" in switch else "LeafRouter"), "SONiC's T0 / T1 roles"
        assert (meta["platform"], meta["hwsku"]) == ("x86_64-nvidia_sn5600-r0", "Mellanox-SN5600-O128")
        assert meta["buffer_model"] == "traditional"
        assert meta["docker_routing_config_mode"] == "separated", "split: FRR would ignore BGP_NEIGHBOR"
        assert meta["bgp_asn"] == ("65000" if "spine" in switch else str(65100 + int(switch[-3:]) - 1))
        # h100-4su gives management 10.23.0.0/24 with gateway 10.23.0.1: eth0 with it, in SONiC's management VRF
        (key, value), = db["MGMT_INTERFACE"].items()
        assert key.startswith("eth0|10.23.0.") and key != "eth0|10.23.0.1/24" and value == {"gwaddr": "10.23.0.1"}
        assert db["MGMT_VRF_CONFIG"] == {"vrf_global": {"mgmtVrfEnabled": "true"}}


def test_ports_are_the_skus_port_config_rows(views: dict[str, SwitchView], dbs: dict[str, dict[str, Any]]) -> None:
    """fabricgen port <cage>/<n> is the n-th port_config.ini row of index <cage>: name, lanes, alias as NVIDIA's."""
    sku = _sku("Mellanox-SN5600-O128")
    for switch, db in dbs.items():
        expected = {}
        for pv in views[switch].ports:
            cage, _, n = pv.name.partition("/")
            row = sku.ports[int(cage)][int(n) - 1]
            expected[row.name] = {"lanes": row.lanes, "alias": row.alias, "index": cage}
        assert {n: {k: p[k] for k in ("lanes", "alias", "index")} for n, p in _cabled(db).items()} == expected
        for port in _cabled(db).values():
            assert (port["speed"], port["mtu"], port["fec"]) == ("400000", "9100", "rs")
    # upstream Mellanox-SN5600-O128/port_config.ini, verbatim: "Ethernet4  4,5,6,7  etp1b  1  400000"
    first = dbs["storage-leaf001"]["PORT"]
    assert (first["Ethernet4"]["lanes"], first["Ethernet4"]["alias"], first["Ethernet4"]["index"]) == (
        "4,5,6,7", "etp1b", "1")
    assert first["Ethernet0"]["description"] == "gpu001:Slot1P1"


def test_versions_is_the_releases_db_schema(tmp_path: Path, dbs: dict[str, dict[str, Any]]) -> None:
    """VERSIONS|DATABASE as the release's db_migrator writes it (sonic-utilities scripts/db_migrator.py
    CURRENT_VERSION on the 202505 and 202311 branches)."""
    assert {db["VERSIONS"]["DATABASE"]["VERSION"] for db in dbs.values()} == {"version_202505_01"}
    spec = _storage_spec(tmp_path, "    switch: SN5600\n    nos: sonic\n",
                         '    switch: SN5600\n    nos: sonic\n    software: {sonic: "202311"}\n')
    old = {a.path: a.content for a in sonic.render(compile_spec(spec).topology)}
    db = json.loads(old["switches/storage-leaf001/config_db.json"])
    assert db["VERSIONS"] == {"DATABASE": {"VERSION": "version_202311_03"}}


def test_subport_follows_the_release(tmp_path: Path, dbs: dict[str, dict[str, Any]]) -> None:
    """202505's Mellanox-SN5600-O128 runs CMIS host management: each port of a broken-out cage carries its subport
    (hwsku.json b7049aa37a: Ethernet0 "1", Ethernet4 "2"); 202411's hwsku.json has none, nor does its PORT."""
    ports = dbs["storage-leaf001"]["PORT"]
    assert (ports["Ethernet0"]["subport"], ports["Ethernet4"]["subport"]) == ("1", "2")
    assert all("subport" in p for db in dbs.values() for p in db["PORT"].values())
    spec = _storage_spec(tmp_path, "    switch: SN5600\n    nos: sonic\n",
                         '    switch: SN5600\n    nos: sonic\n    software: {sonic: "202411"}\n')
    older = {a.path: json.loads(a.content) for a in sonic.render(compile_spec(spec).topology)
             if a.path.endswith("storage-leaf001/config_db.json")}
    assert not any("subport" in p for db in older.values() for p in db["PORT"].values())


def test_routing_vlan_and_bgp(views: dict[str, SwitchView], dbs: dict[str, dict[str, Any]]) -> None:
    for view in views.values():
        db = dbs[view.name]
        ports = {p.view.number: p.name for p in sonic_layout(view).ports}
        assert db["LOOPBACK_INTERFACE"] == {"Loopback0": {}, f"Loopback0|{view.loopback}/32": {}}
        for pv in view.routed_ports:
            name = ports[pv.number]
            assert db["INTERFACE"][name] == {} and f"{name}|{pv.address}" in db["INTERFACE"]
            assert db["BGP_NEIGHBOR"][pv.peer_address] == db["BGP_NEIGHBOR"][pv.peer_address] | {
                "asn": str(pv.peer_asn), "name": pv.peer, "local_addr": pv.address.split("/")[0],
                "keepalive": "3", "holdtime": "9"}  # bgpcfgd writes `timers 3 9` (not 60/180, its skipped default)
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
        pods = {f"{vlan}|{view.pod_gateway}/{view.pod_subnet.split('/')[1]}": {}} if view.pod_gateway else {}
        assert db["VLAN_INTERFACE"] == {vlan: {}, f"{vlan}|{view.gateway}/{prefix}": {}, **pods}


def test_qos_maps_cover_every_dscp_and_valid_tcs(dbs: dict[str, dict[str, Any]]) -> None:
    for db in dbs.values():
        dscp = db["DSCP_TO_TC_MAP"]["ROCE"]
        assert set(dscp) == {str(d) for d in range(64)}
        assert all(tc in {str(t) for t in range(8)} for tc in dscp.values()), "TCs 0-7 (the YANG allows 0-15)"
        assert {d for d, tc in dscp.items() if tc != "0"} == {str(LOSSLESS_DSCP), str(CNP_DSCP)}
        assert db["TC_TO_QUEUE_MAP"]["ROCE"] == {str(t): str(t) for t in range(8)}
        assert db["MAP_PFC_PRIORITY_TO_QUEUE"]["ROCE"] == {str(t): str(t) for t in range(8)}


def test_buffers_are_the_skus(dbs: dict[str, dict[str, Any]]) -> None:
    """Pools as NVIDIA's buffers_defaults_t0.j2 (leaves, ToRRouter) and _t1.j2 (spines, LeafRouter) size them,
    O128's separate ingress lossy pool and its lossy profile (dynamic_th 3), both profile lists as its template."""
    sku = _sku("Mellanox-SN5600-O128")
    # buffer_pool_mellanox.lua's budget after each leaf's PGs (run by Lua 5.4 in
    # tests/external/ethernet/test_sonic_pool_lua.py; the field review's hand figures): the t0 template's 67737959
    # assumes 5m on every port, and every leaf has longer PGs (dual-homed pairs; leaf005/006, the last pair's
    # half-used leaves, hold 5 DGX nodes' far racks); the spines fit their t1 pools. Since the network racks' slot
    # ranges (branch racku) the storage spines stand one a rack, so each leaf's uplinks run to several racks
    fitted = {"storage-leaf001": "55849472", "storage-leaf002": "56267264", "storage-leaf003": "56267264",
              "storage-leaf004": "56267264", "storage-leaf005": "66512896", "storage-leaf006": "66930688"}
    for switch, db in dbs.items():
        pools = {name: dict(fields) for name, fields in sku.pools["t0" if "leaf" in switch else "t1"].items()}
        if switch in fitted:
            for name in ("ingress_lossless_pool", "ingress_lossy_pool", "egress_lossy_pool"):
                pools[name]["size"] = fitted[switch]
        dark = set(db["PORT"]) - set(_cabled(db))
        if dark:  # NVIDIA's zero pool for ports without a neighbour
            pools.update({name: dict(fields) for name, fields in sku.inactive.pools.items()})
        assert db["BUFFER_POOL"] == pools, switch
        if "spine" in switch:
            assert db["BUFFER_POOL"]["ingress_lossy_pool"]["size"] == "52161690"
        assert {n: p for n, p in db["BUFFER_PROFILE"].items() if not n.startswith("pg_lossless_")} == {
            n: dict(p) for n, p in sku.profiles.items()} | ({n: dict(p) for n, p in sku.inactive.profiles.items()}
                                                             if dark else {})
        assert db["BUFFER_PROFILE"]["ingress_lossy_profile"] == {"pool": "ingress_lossy_pool", "size": "0",
                                                                  "dynamic_th": "3"}
        for port in _cabled(db):
            assert db["BUFFER_PORT_INGRESS_PROFILE_LIST"][port] == {
                "profile_list": "ingress_lossless_profile,ingress_lossy_profile"}
            assert db["BUFFER_PORT_EGRESS_PROFILE_LIST"][port] == {
                "profile_list": "egress_lossless_profile,egress_lossy_profile"}
            assert db["BUFFER_PG"][f"{port}|0"] == {"profile": "ingress_lossy_profile"}
            lossless = db["BUFFER_QUEUE"][f"{port}|{LOSSLESS_PRIO}"]
            assert lossless == {"profile": "egress_lossless_profile"}
            assert {k: v for k, v in db["BUFFER_QUEUE"].items() if k.startswith(f"{port}|") and v != lossless} == {
                f"{port}|0-2": {"profile": "q_lossy_profile"}, f"{port}|4-7": {"profile": "q_lossy_profile"}}


def test_lossless_chain_end_to_end(dbs: dict[str, dict[str, Any]]) -> None:
    """DSCP 26 -> TC 3 -> PG 3 -> pfc_enable "3" -> queue 3 marks ECN; CNP DSCP 48 -> TC 6 -> strict queue."""
    for switch, db in dbs.items():
        for port, qmap in db["PORT_QOS_MAP"].items():
            where = f"{switch} {port}"
            tc = db["DSCP_TO_TC_MAP"][qmap["dscp_to_tc_map"]][str(LOSSLESS_DSCP)]
            assert tc == str(LOSSLESS_PRIO), where
            pg = db["TC_TO_PRIORITY_GROUP_MAP"][qmap["tc_to_pg_map"]][tc]
            assert db["PFC_PRIORITY_TO_PRIORITY_GROUP_MAP"][qmap["pfc_to_pg_map"]] == {str(LOSSLESS_PRIO): pg}, where
            assert pg == str(LOSSLESS_PRIO) and qmap["pfc_enable"] == pg and qmap["pfcwd_sw_enable"] == pg, where
            queue = db["TC_TO_QUEUE_MAP"][qmap["tc_to_queue_map"]][tc]
            entry = db["QUEUE"][f"{port}|{queue}"]
            wred = db["WRED_PROFILE"][entry["wred_profile"]]
            assert wred == {"ecn": "ecn_all", "wred_green_enable": "true", "green_min_threshold": str(150 * 1024),
                            "green_max_threshold": str(1500 * 1024), "green_drop_probability": "100"}, where
            assert db["SCHEDULER"][entry["scheduler"]] == {"type": "DWRR", "weight": "50"}
            assert db["BUFFER_PG"][f"{port}|{pg}"]["profile"].startswith("pg_lossless_"), where
            cnp_tc = db["DSCP_TO_TC_MAP"][qmap["dscp_to_tc_map"]][str(CNP_DSCP)]
            assert cnp_tc == str(CNP_PRIO)
            cnp_queue = db["QUEUE"][f"{port}|{db['TC_TO_QUEUE_MAP']['ROCE'][cnp_tc]}"]
            assert db["SCHEDULER"][cnp_queue["scheduler"]] == {"type": "STRICT"} and "wred_profile" not in cnp_queue
            others = [q for q in range(8) if q != LOSSLESS_PRIO]
            assert all("wred_profile" not in db["QUEUE"][f"{port}|{q}"] for q in others), "ECN on queue 3 only"
            assert db["PFC_WD"][port] == {"action": "drop", "detection_time": "200", "restoration_time": "400"}
        assert set(db["PORT_QOS_MAP"]) == set(db["PFC_WD"]) - {"GLOBAL"} == set(_cabled(db)), "dark ports: no QoS"


def test_traditional_headroom_is_the_lookup_row_at_or_above_the_cable(views: dict[str, SwitchView],
                                                                     dbs: dict[str, dict[str, Any]]) -> None:
    """CABLE_LENGTH is a length the SKU's table lists (3/7/10/15 m cables -> 5m or 40m), and the profile carries
    that row's values exactly, under buffermgrd's own name."""
    seen = set()
    for switch, db in dbs.items():
        lengths = {p.name: p.view.cable_m for p in sonic_layout(views[switch]).ports}
        assert set(db["CABLE_LENGTH"]["AZURE"]) == set(db["PORT"])
        for port, metres in lengths.items():
            cable = db["CABLE_LENGTH"]["AZURE"][port]
            assert cable == ("5m" if metres <= 5 else "40m"), f"{switch} {port}: {metres} m"
            name = db["BUFFER_PG"][f"{port}|{LOSSLESS_PRIO}"]["profile"]
            assert name == f"pg_lossless_400000_{cable}_profile", "buffermgrd's own name, so it reuses ours"
            profile = db["BUFFER_PROFILE"][name]
            assert (profile["size"], profile["xon"], profile["xoff"], profile["dynamic_th"]) == SN5600_ROWS[cable]
            assert profile["pool"] == "ingress_lossless_pool"
            seen.add(cable)
    assert seen == {"5m", "40m"}


def test_headroom_csv_keeps_the_real_length(views: dict[str, SwitchView], artifacts: dict[str, bytes],
                                            dbs: dict[str, dict[str, Any]]) -> None:
    for switch, db in dbs.items():
        content = artifacts[f"switches/{switch}/pfc-headroom.csv"]
        assert content.decode().splitlines()[0].split(",") == list(TRADITIONAL_FIELDS)
        rows = _csv(content)
        planned = {p.name: p.view.cable_m for p in sonic_layout(views[switch]).ports}
        assert {r["port"] for r in rows} == set(_cabled(db))
        for row in rows:
            profile = db["BUFFER_PROFILE"][row["profile"]]
            assert (row["xoff"], row["xon"], row["size"]) == (profile["xoff"], profile["xon"], profile["size"])
            assert row["cable_length"] == db["CABLE_LENGTH"]["AZURE"][row["port"]]
            assert float(row["plan_cable_m"]) == planned[row["port"]]
            assert row["lookup_row"] == f"400000 {row['cable_length']} {row['size']} {row['xon']} {row['xoff']} 0"
            assert (row["hwsku"], row["lua"], row["shared_headroom_pool_xoff"]) == (
                "Mellanox-SN5600-O128", "3943093d", "")
            assert int(row["lua_xoff_at_plan_cable"]) <= int(row["xoff"]), "NVIDIA's row covers the real cable"


def test_output_is_deterministic(compiled: Compiled, artifacts: dict[str, bytes]) -> None:
    again = {a.path: a.content for a in sonic.render(compile_spec(INVENTORIES / "h100-4su.yaml").topology)}
    assert again == artifacts
    for path, content in artifacts.items():
        if path.endswith(".json"):
            assert content.decode() == sonic.dump_config_db(json.loads(content)), "canonical layout"


# -- which switches, which SKU, and refusals --------------------------------------------------------------------
def test_only_sonic_switches_are_rendered(tmp_path: Path) -> None:
    spec = _storage_spec(tmp_path, "    switch: SN5600\n    nos: sonic\n",
                         "    switch: {leaf: SN5600, spine: 7060X6-64PE}\n    nos: {leaf: sonic, spine: eos}\n")
    paths = {a.path for a in sonic.render(compile_spec(spec).topology) if "/storage-" in a.path}
    assert {p.split("/")[1] for p in paths} == set(STORAGE_LEAVES)


def test_arista_is_not_a_sonic_target(tmp_path: Path) -> None:
    """Refused at build, at the nos line, with the NOS that does run there (nos/sonic.yaml switches.models)."""
    spec = _storage_spec(tmp_path, "    switch: SN5600\n", "    switch: 7060X6-64PE\n")
    with pytest.raises(SpecError, match=r"fabrics\.storage\.nos: SONiC does not run on the leaf switch 7060X6-64PE "
                                        r"\(Arista\).*nos: eos runs on 7060X6-64PE"):
        compile_spec(spec)


def test_lossless_priority_zero_is_refused(tmp_path: Path) -> None:
    """A spec error at its line (build), not a renderer traceback; the renderer's own check stays behind it."""
    spec = _storage_spec(tmp_path, "lossless: {dscp: 26, priority: 3}", "lossless: {dscp: 26, priority: 0}")
    with pytest.raises(SpecError, match=r"qos\.lossless\.priority: the lossless class cannot be priority 0"):
        compile_spec(spec)


def test_a_port_layout_no_sku_runs_is_a_check_error(tmp_path: Path) -> None:
    """400G hosts (2 a cage) under 800G uplinks (1 a cage) on one SN5600: O128 and ACS-SN5600 each run one of them."""
    spec = _storage_spec(tmp_path, "    speed: 400G\n    switch: SN5600\n",
                         "    speed: 400G\n    uplink_speed: 800G\n    switch: SN5600\n")
    with pytest.raises(CheckError, match=r"storage-leaf001: no SONiC SKU of the SN5600 runs its ports as planned "
                                         r"\(1 x 800G a cage and 2 x 400G a cage\).*Mellanox-SN5600-O128 "
                                         r"\(2 x 400G a cage\).*ACS-SN5600 \(1 x 800G a cage\)"):
        compile_spec(spec)


def test_a_cable_beyond_the_table_is_refused(views: dict[str, SwitchView]) -> None:
    view = views["storage-leaf001"]
    far = dataclasses.replace(view, ports=(dataclasses.replace(view.ports[0], cable_m=301), *view.ports[1:]))
    with pytest.raises(SonicLayoutError, match=r"301 m cable at 400G is longer than the 300 m Mellanox-SN5600-O128's "
                                               r"pg_profile_lookup\.ini covers") as refused:
        sonic_layout(far)
    assert "buffer_model: dynamic" in refused.value.hint


def test_sn4700_200g_runs_v64_with_its_shared_headroom_pool() -> None:
    """lab-1su: SN4700 at 2 x 200G is NVIDIA's Mellanox-SN4700-V64: its port rows, its pools with the ingress pool's
    shared headroom xoff (3,637,248 on a T0), its one-profile ingress list and its table's size = xon rows."""
    out = {a.path: a.content for a in sonic.render(compile_spec(INVENTORIES / "lab-1su.yaml").topology)}
    db = json.loads(out["switches/storage-leaf001/config_db.json"])
    assert db["DEVICE_METADATA"]["localhost"]["hwsku"] == "Mellanox-SN4700-V64"
    # hosts take one per cage (etp1a; Ethernet4 dark, shut); the uplink cage pairs run both ports (etp21b: lanes 4-7)
    assert db["PORT"]["Ethernet4"]["admin_status"] == "down" and db["PORT"]["Ethernet0"]["alias"] == "etp1a"
    assert (db["PORT"]["Ethernet164"]["lanes"], db["PORT"]["Ethernet164"]["alias"]) == ("164,165,166,167", "etp21b")
    assert (db["PORT"]["Ethernet164"]["speed"], db["PORT"]["Ethernet164"]["subport"]) == ("200000", "2")
    assert db["BUFFER_POOL"]["ingress_lossless_pool"] == {"mode": "dynamic", "size": "49971200", "type": "ingress",
                                                          "xoff": "3637248"}
    assert "ingress_lossy_pool" not in db["BUFFER_POOL"]
    assert db["BUFFER_PORT_INGRESS_PROFILE_LIST"]["Ethernet164"] == {"profile_list": "ingress_lossless_profile"}
    cable = db["CABLE_LENGTH"]["AZURE"]["Ethernet164"]
    profile = db["BUFFER_PROFILE"][db["BUFFER_PG"]["Ethernet164|3"]["profile"]]
    assert (profile["size"], profile["xon"], profile["xoff"], profile["dynamic_th"]) == SN4700_200G_ROWS[cable]
    sheet = _csv(out["switches/storage-leaf001/pfc-headroom.csv"])
    assert {r["shared_headroom_pool_xoff"] for r in sheet} == {"3637248"}


# ... and from device/mellanox/x86_64-mlnx_msn4700-r0/ACS-MSN4700/pg_profile_lookup.ini (b1b13a5c30), which
# ACS-MSN4600's pg_profile_lookup.ini links to: "200000 5m 55296 19456 35840 0", "200000 40m 74752 19456 55296 0"
SN4600_200G_ROWS = {"5m": ("55296", "19456", "35840", "0"), "40m": ("74752", "19456", "55296", "0")}


def test_sn4600_200g_runs_acs_msn4600() -> None:
    """ref-256: SN4600 at 200G is NVIDIA's ACS-MSN4600, one 4-lane port per QSFP56 cage: its port_config.ini rows
    (Ethernet<4 x (cage - 1)>, lanes from 8 x (cage - 1), etp<cage>; not Ethernet<first lane>), platform.json's
    1x200G mode in BREAKOUT_CFG, no subport (one port a cage), fec rs (4 x 50G-PAM4), and ACS-MSN4700's buffers,
    which its templates link to: t0 pools on leaves, t1 on spines, two-profile ingress lists, the table's rows."""
    out = {a.path: a.content for a in sonic.render(compile_spec(INVENTORIES / "ref-256.yaml").topology)}
    sku, v4700 = _sku("ACS-MSN4600"), _sku("ACS-MSN4700")
    assert (sku.pools, sku.profiles, sku.lookup_rows) == (v4700.pools, v4700.profiles, v4700.lookup_rows)
    dark_ports = {}
    for switch, pools in (("compute-su01-leaf0", "t0"), ("compute-spine001", "t1"), ("storage-leaf001", "t0"),
                          ("storage-leaf024", "t0"), ("storage-spine01", "t1")):
        db = json.loads(out[f"switches/{switch}/config_db.json"])
        meta = db["DEVICE_METADATA"]["localhost"]
        assert (meta["hwsku"], meta["platform"]) == ("ACS-MSN4600", "x86_64-mlnx_msn4600-r0"), switch
        assert db["BREAKOUT_CFG"] == {f"Ethernet{4 * c}": {"brkout_mode": "1x200G[100G,50G,40G,25G,10G,1G]"}
                                      for c in range(64)}
        for c in range(64):
            port = db["PORT"][f"Ethernet{4 * c}"]
            assert {k: port[k] for k in ("lanes", "alias", "index", "speed", "fec")} == {
                "lanes": ",".join(str(8 * c + n) for n in range(4)), "alias": f"etp{c + 1}", "index": str(c + 1),
                "speed": "200000", "fec": "rs"}, (switch, c)
            assert "subport" not in port
        dark = set(db["PORT"]) - set(_cabled(db))
        for name, fields in sku.pools[pools].items():
            written = db["BUFFER_POOL"][name]
            assert (written["type"], written["mode"]) == (fields["type"], fields["mode"])
            assert int(written["size"]) <= int(fields["size"]), (switch, name)  # capped by the lua's budget
        assert ("ingress_zero_pool" in db["BUFFER_POOL"]) == bool(dark), switch
        for port in _cabled(db):
            assert db["BUFFER_PORT_INGRESS_PROFILE_LIST"][port] == {
                "profile_list": "ingress_lossless_profile,ingress_lossy_profile"}
            profile = db["BUFFER_PROFILE"][db["BUFFER_PG"][f"{port}|{LOSSLESS_PRIO}"]["profile"]]
            cable = db["CABLE_LENGTH"]["AZURE"][port]
            assert (profile["size"], profile["xon"], profile["xoff"], profile["dynamic_th"]) == SN4600_200G_ROWS[cable]
        for port in dark:
            assert db["BUFFER_PG"][f"{port}|0"] == {"profile": "ingress_lossy_pg_zero_profile"}
            assert db["PORT"][port]["admin_status"] == "down" and db["CABLE_LENGTH"]["AZURE"][port] == "0m"
        dark_ports[switch] = len(dark)
    # the last storage leaf pair takes the remainder of the 718 host ports (7 of them) and 32 uplinks
    assert dark_ports == {"compute-su01-leaf0": 0, "compute-spine001": 0, "storage-leaf001": 0,
                          "storage-leaf024": 25, "storage-spine01": 16}


def test_sn4600_100g_runs_one_port_a_cage(tmp_path: Path) -> None:
    """100G on SN4600 is the 1x200G mode's 100G on each cage's one port (platform.json lists 100G in its brackets;
    the 2x100G mode is not modelled), so ACS-MSN4600 still fits: speed 100000, the table's 100G row."""
    spec = tmp_path / "ref-256.yaml"
    spec.write_text((INVENTORIES / "ref-256.yaml").read_text().replace("speed: 200G", "speed: 100G"))
    out = {a.path: a.content for a in sonic.render(compile_spec(spec).topology)}
    db = json.loads(out["switches/compute-su01-leaf0/config_db.json"])
    assert db["DEVICE_METADATA"]["localhost"]["hwsku"] == "ACS-MSN4600"
    assert (db["PORT"]["Ethernet0"]["lanes"], db["PORT"]["Ethernet0"]["speed"]) == ("0,1,2,3", "100000")
    assert db["BREAKOUT_CFG"]["Ethernet0"] == {"brkout_mode": "1x200G[100G,50G,40G,25G,10G,1G]"}
    cable = db["CABLE_LENGTH"]["AZURE"]["Ethernet0"]
    assert db["BUFFER_PG"]["Ethernet0|3"] == {"profile": f"pg_lossless_100000_{cable}_profile"}


def test_sku_choice_follows_the_port_layout(views: dict[str, SwitchView]) -> None:
    """The SN5600's SKUs by breakout: 2 x 400G a cage O128, 1 x 800G ACS-SN5600, 4 x 200G or 100G V256."""
    view = views["storage-spine01"]
    cages = sorted({int(p.name.split("/")[0]) for p in view.ports})
    for speed, per_cage, hwsku in (("400G", 2, "Mellanox-SN5600-O128"), ("800G", 1, "ACS-SN5600"),
                                   ("200G", 4, "Mellanox-SN5600-V256"), ("100G", 4, "Mellanox-SN5600-V256")):
        names = [str(c) if per_cage == 1 else f"{c}/{n}" for c in cages for n in range(1, per_cage + 1)]
        ports = tuple(dataclasses.replace(view.ports[0], number=i, name=name, speed=speed, gbps=float(speed[:-1]))
                      for i, name in enumerate(names, start=1))
        layout = sonic_layout(dataclasses.replace(view, ports=ports))
        assert layout.sku.hwsku == hwsku, speed
        rows = {r.name: r for rows in layout.sku.ports.values() for r in rows}
        assert all(p.sku_port == rows[p.name] for p in layout.ports)
        assert {p.speed_mbps for p in layout.ports} == {int(speed[:-1]) * 1000}


# -- the dynamic buffer model -----------------------------------------------------------------------------------
DYNAMIC_TABLES = {"DEFAULT_LOSSLESS_BUFFER_PARAMETER", "LOSSLESS_TRAFFIC_PATTERN"}


def _dynamic(tmp: Path, release: str = "", extra: str = "") -> dict[str, bytes]:
    software = f'    software: {{sonic: "{release}"}}\n' if release else ""
    spec = _storage_spec(tmp, WATCHDOG, WATCHDOG + "      buffer_model: dynamic\n" + extra)
    spec.write_text(spec.read_text().replace("    switch: SN5600\n    nos: sonic\n",
                                                "    switch: SN5600\n    nos: sonic\n" + software))
    return {a.path: a.content for a in sonic.render(compile_spec(spec).topology)}


@pytest.fixture(scope="module")
def dynamic_artifacts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    return _dynamic(tmp_path_factory.mktemp("dynamic"))


@pytest.fixture(scope="module")
def dynamic_dbs(dynamic_artifacts: dict[str, bytes]) -> dict[str, dict[str, Any]]:
    return {path.split("/")[1]: json.loads(content) for path, content in dynamic_artifacts.items()
            if path.endswith("/config_db.json") and "/storage-" in path}


def test_dynamic_model_is_the_skus_dynamic_template(views: dict[str, SwitchView], dbs: dict[str, dict[str, Any]],
                                                    dynamic_dbs: dict[str, dict[str, Any]]) -> None:
    """Same ports, maps and queues; the pools as buffers_dynamic.json.j2 writes them (no sizes but the egress
    lossless pool's), lossless PGs NULL, CABLE_LENGTH the cable in whole metres, and the release's tables. Dark
    ports keep the lossy objects of a cabled port (buffermgrdyn zeroes an admin-down port itself), not the
    traditional model's zero profiles."""
    sku = _sku("Mellanox-SN5600-O128")
    assert set(dynamic_dbs) == set(dbs)
    for switch, db in dynamic_dbs.items():
        static = dbs[switch]
        assert set(db) == set(static) | DYNAMIC_TABLES, switch
        cabled = set(_cabled(static))
        dark = set(static["PORT"]) - cabled
        buffers = {"BUFFER_QUEUE", "BUFFER_PORT_INGRESS_PROFILE_LIST", "BUFFER_PORT_EGRESS_PROFILE_LIST"}
        for table in set(static) - {"DEVICE_METADATA", "BUFFER_POOL", "BUFFER_PROFILE", "BUFFER_PG", "CABLE_LENGTH"}:
            if table in buffers:
                assert {k: v for k, v in db[table].items() if k.split("|")[0] in cabled} == {
                    k: v for k, v in static[table].items() if k.split("|")[0] in cabled}, f"{switch} {table}"
                continue
            assert db[table] == static[table], f"{switch} {table}"
        for n in dark:
            assert db["BUFFER_PG"][f"{n}|0"] == {"profile": "ingress_lossy_profile"}
            assert f"{n}|{LOSSLESS_PRIO}" not in db["BUFFER_PG"], "no lossless PG on a dark port"
            assert db["BUFFER_QUEUE"][f"{n}|{LOSSLESS_PRIO}"] == {"profile": "egress_lossless_profile"}
        assert db["DEVICE_METADATA"]["localhost"] == static["DEVICE_METADATA"]["localhost"] | {
            "buffer_model": "dynamic"}
        assert db["BUFFER_POOL"] == {n: dict(p) for n, p in sku.dynamic_pools.items()}
        assert db["BUFFER_PROFILE"] == {n: dict(p) for n, p in sku.profiles.items()}, "no static lossless profile"
        for key, entry in db["BUFFER_PG"].items():
            if key.split("|")[0] in dark:
                continue
            lossless = key.endswith(f"|{LOSSLESS_PRIO}")
            assert entry == ({"profile": "NULL"} if lossless else static["BUFFER_PG"][key]), f"{switch} {key}"
        assert db["CABLE_LENGTH"]["AZURE"] == {p.name: f"{math.ceil(p.view.cable_m)}m"
                                               for p in sonic_layout(views[switch]).ports} | dict.fromkeys(dark, "0m")
        assert db["DEFAULT_LOSSLESS_BUFFER_PARAMETER"] == {"AZURE": {"default_dynamic_th": "0"}}
        # files/build_templates/buffers_config.j2 of 202505 (small_packet_percentage 50 since 3bf26956f1)
        assert db["LOSSLESS_TRAFFIC_PATTERN"] == {"AZURE": {"mtu": "1024", "small_packet_percentage": "50"}}


def test_dynamic_headroom_csv_predicts_with_the_releases_lua(tmp_path: Path, dynamic_artifacts: dict[str, bytes],
                                                            dynamic_dbs: dict[str, dict[str, Any]]) -> None:
    """202505 runs the 3943093d lua at small-packet percentage 50; 202405 the same lua at 100; 202311 the older
    lua: the prediction follows the release, under buffermgrd's profile name."""
    for switch, db in dynamic_dbs.items():
        content = dynamic_artifacts[f"switches/{switch}/pfc-headroom.csv"]
        header = content.decode().splitlines()[0].split(",")
        assert header == [f"predicted_{f}" if f in ("xoff", "xon", "size", "profile") else f for f in LUA_FIELDS]
        for row in _csv(content):
            assert (row["formula"], row["small_packet_percentage"], row["kb_on_tile"]) == ("3943093d", "50", "6000")
            assert row["cable_length"] == db["CABLE_LENGTH"]["AZURE"][row["port"]]
            assert row["predicted_profile"] == f"pg_lossless_400000_{row['cable_length']}_profile"
    rows = {r["port"]: r for r in _csv(dynamic_artifacts["switches/storage-leaf001/pfc-headroom.csv"])}
    assert (rows["Ethernet0"]["cable_length"], rows["Ethernet0"]["predicted_xoff"]) == ("15m", "102400")
    older = {r["port"]: r for r in _csv(_dynamic(tmp_path, "202405")["switches/storage-leaf001/pfc-headroom.csv"])}
    assert (older["Ethernet0"]["small_packet_percentage"], older["Ethernet0"]["predicted_xoff"]) == ("100", "245760")
    oldest = {r["port"]: r for r in _csv(_dynamic(tmp_path, "202311")["switches/storage-leaf001/pfc-headroom.csv"])}
    assert (oldest["Ethernet0"]["formula"], oldest["Ethernet0"]["predicted_xoff"]) == ("4957df86", "227328")


def test_dynamic_profile_names_follow_buffermgrdyn(views: dict[str, SwitchView]) -> None:
    """getDynamicProfileName: "_mtu<mtu>" off 9100; "_8lane" on 8-lane ports below the family's full speed."""
    port = sonic_layout(views["storage-leaf001"]).ports[0]
    sn5600, sn4700 = "x86_64-nvidia_sn5600-r0", "x86_64-mlnx_msn4700-r0"
    cable = f"{port.cable_length_m}m"
    assert port.dynamic_profile(9100, sn5600) == f"pg_lossless_400000_{cable}_profile"
    assert port.dynamic_profile(4200, sn5600) == f"pg_lossless_400000_{cable}_mtu4200_profile"
    eight = dataclasses.replace(port, sku_port=dataclasses.replace(port.sku_port, lanes="0,1,2,3,4,5,6,7"))
    assert eight.dynamic_profile(9100, sn5600) == f"pg_lossless_400000_{cable}_8lane_profile"
    assert eight.dynamic_profile(9100, sn4700) == f"pg_lossless_400000_{cable}_profile", "SN4xxx: 400G is full"
    assert dataclasses.replace(eight, speed_mbps=800_000).dynamic_profile(9000, sn5600) == (
        f"pg_lossless_800000_{cable}_mtu9000_profile")
    assert dataclasses.replace(eight, speed_mbps=200_000).dynamic_profile(9100, sn4700) == (
        f"pg_lossless_200000_{cable}_8lane_profile")
    assert eight.dynamic_profile(9100, "x86_64-accton_as9716_32d-r0") == f"pg_lossless_400000_{cable}_profile"
    four = dataclasses.replace(port, speed_mbps=200_000)  # SN4600: 200G on 4 lanes, not below an 8-lane full speed
    assert four.dynamic_profile(9100, "x86_64-mlnx_msn4600-r0") == f"pg_lossless_200000_{cable}_profile"


def test_dynamic_port_mtu_names_the_predicted_profile(tmp_path: Path) -> None:
    spec = _storage_spec(tmp_path, WATCHDOG, WATCHDOG + "      buffer_model: dynamic\n")
    spec.write_text(spec.read_text().replace("    mtu: 9100\n", "    mtu: 9216\n"))
    content = next(a.content for a in sonic.render(compile_spec(spec).topology)
                   if a.path == "switches/storage-leaf001/pfc-headroom.csv")
    rows = _csv(content)
    assert rows and all(r["predicted_profile"].endswith("_mtu9216_profile") and r["port_mtu"] == "9216" for r in rows)


# -- the shared headroom pool -----------------------------------------------------------------------------------
def test_traditional_model_takes_no_shared_headroom_pool_from_the_spec(tmp_path: Path) -> None:
    """The traditional model runs each SKU's own buffers (pooled xoff or not): a pool of the spec's size is the
    dynamic model's (sonic-utilities `config buffer shared_headroom_pool` is dynamic-only)."""
    spec = _storage_spec(tmp_path, WATCHDOG, WATCHDOG + SHP)
    with pytest.raises(SpecError, match=r"qos\.shared_headroom_pool: SONiC takes a shared headroom pool of the spec's "
                                        r"size only in the dynamic buffer model, not traditional"):
        compile_spec(spec)


def test_dynamic_shared_headroom_pool_is_left_to_buffermgrd(tmp_path: Path,
                                                            dynamic_dbs: dict[str, dict[str, Any]]) -> None:
    """Only DEFAULT_LOSSLESS_BUFFER_PARAMETER changes (no pool xoff: it would override the ratio); the CSV predicts
    the pool the lua sizes: ceil((sum of the PGs' xoff - 10 KiB a port) / ratio)."""
    out = _dynamic(tmp_path, extra="      shared_headroom_pool: {}\n")
    for switch, plain in dynamic_dbs.items():
        db = json.loads(out[f"switches/{switch}/config_db.json"])
        assert {t: v for t, v in db.items() if t != "DEFAULT_LOSSLESS_BUFFER_PARAMETER"} == {
            t: v for t, v in plain.items() if t != "DEFAULT_LOSSLESS_BUFFER_PARAMETER"}
        assert db["DEFAULT_LOSSLESS_BUFFER_PARAMETER"] == {"AZURE": {"default_dynamic_th": "0",
                                                                     "over_subscribe_ratio": "2"}}
        assert "xoff" not in db["BUFFER_POOL"]["ingress_lossless_pool"]
        rows = _csv(out[f"switches/{switch}/pfc-headroom.csv"])
        assert all(r["shared_headroom_pool"] == "true" and r["predicted_size"] == r["predicted_xon"] for r in rows)
        pooled = sum(int(r["predicted_xoff"]) for r in rows) - 10_240 * len(rows)
        assert {r["predicted_shared_headroom_pool_size"] for r in rows} == {str(math.ceil(pooled / 2))}
        assert {(r["over_subscribe_ratio"], r["private_headroom"]) for r in rows} == {("2", str(10_240 * len(rows)))}


def test_breakout_cfg_and_dark_ports_complete_every_cage() -> None:
    """Every cage of the SKU gets BREAKOUT_CFG at its parent port in platform.json's spelling, and PORT holds every
    port of that mode: sonic-utilities' `config interface breakout` reads the parent's current mode there and deletes
    each of its ports, refusing one PORT lacks. A dark port is shut, at its mode's speed, without address, VLAN, QoS
    or cable, with NVIDIA's zero buffer profiles (traditional model) and CABLE_LENGTH 0m."""
    out = {a.path: a.content for a in sonic.render(compile_spec(INVENTORIES / "lab-1su.yaml").topology)}
    db = json.loads(out["switches/storage-leaf001/config_db.json"])
    v64 = _sku("Mellanox-SN4700-V64")
    # x86_64-mlnx_msn4700-r0/platform.json (blob 49211914ec): "Ethernet0" ... "2x200G[100G,50G,40G,25G,10G,1G]":
    # ["etp1a", "etp1b"], one parent port per cage, Ethernet0, 8, ... 248
    assert db["BREAKOUT_CFG"] == {f"Ethernet{8 * c}": {"brkout_mode": "2x200G[100G,50G,40G,25G,10G,1G]"}
                                  for c in range(32)}
    assert set(db["PORT"]) == {p.name for rows in v64.ports.values() for p in rows}
    # cage 1: etp1a to a host, etp1b dark (as SONiC's platform.json generation writes it, fec rs from 50G a lane)
    assert db["PORT"]["Ethernet4"] == {"admin_status": "down", "alias": "etp1b", "index": "1", "lanes": "4,5,6,7",
                                       "speed": "200000", "mtu": "9100", "fec": "rs", "subport": "2"}
    dark = set(db["PORT"]) - set(_cabled(db))
    assert len(dark) == 64 - 4 - 20, "4 hosts and 20 uplinks cabled"
    for n in dark:
        assert db["BUFFER_PG"][f"{n}|0"] == {"profile": "ingress_lossy_pg_zero_profile"}
        assert {k: v for k, v in db["BUFFER_QUEUE"].items() if k.startswith(f"{n}|")} == {
            f"{n}|0-2": {"profile": "egress_lossy_zero_profile"},
            f"{n}|3-4": {"profile": "egress_lossless_zero_profile"},
            f"{n}|5-6": {"profile": "egress_lossy_zero_profile"}}
        assert db["BUFFER_PORT_INGRESS_PROFILE_LIST"][n] == {"profile_list": "ingress_lossless_zero_profile"}
        assert db["CABLE_LENGTH"]["AZURE"][n] == "0m"
        assert "description" not in db["PORT"][n] and n not in db["PORT_QOS_MAP"] and n not in db["PFC_WD"]
        assert not any(k.split("|")[0] == n for t in ("INTERFACE", "QUEUE") for k in db.get(t, {}))
    assert db["BUFFER_POOL"]["ingress_zero_pool"] == {"mode": "static", "size": "0", "type": "ingress"}
    compiled = compile_spec(INVENTORIES / "h100-4su.yaml")
    out = {a.path: a.content for a in sonic.render(compiled.topology)}
    agg = json.loads(out["switches/oob-agg01/config_db.json"])
    # cage 9 of the aggregation switch carries two of its four 100G breakout legs: etp9c/etp9d stay, shut
    assert {n: agg["PORT"][n]["admin_status"] for n in ("Ethernet64", "Ethernet66", "Ethernet68", "Ethernet70")} == {
        "Ethernet64": "up", "Ethernet66": "up", "Ethernet68": "down", "Ethernet70": "down"}
    assert agg["BREAKOUT_CFG"]["Ethernet64"] == {"brkout_mode": "4x100G[50G,25G,10G,1G]"}
    oob = json.loads(out["switches/oob-a01/config_db.json"])
    # x86_64-nvidia_sn2201-r0/platform.json (b0ab147939): 48 RJ45 ports "1x1000[100,10]", 4 QSFP28
    # "1x100G[50G,40G,25G,10G]" from Ethernet48 (lanes 192-195)
    assert oob["BREAKOUT_CFG"] == {f"Ethernet{n}": {"brkout_mode": "1x1000[100,10]"} for n in range(48)} | {
        f"Ethernet{48 + 4 * n}": {"brkout_mode": "1x100G[50G,40G,25G,10G]"} for n in range(4)}
    for switch, content in out.items():
        if not switch.endswith("/config_db.json"):
            continue
        db = json.loads(content)
        for parent in db["BREAKOUT_CFG"]:
            assert db["PORT"][parent]["alias"].startswith("etp"), switch


# -- in-band and out-of-band fabrics ----------------------------------------------------------------------------
def test_every_ethernet_fabric_with_a_nos_gets_switch_configs(compiled: Compiled, artifacts: dict[str, bytes]) -> None:
    """h100-4su's in-band (SN4700, 200G, routed leaves under two spines) and out-of-band (an SN2201 per rack, 1G
    BMC ports, SN4700 aggregation) fabrics: L2 access VLAN for the hosts, routed /31 uplinks with eBGP, the SKU's
    lossy buffers, no lossless class."""
    fabrics = {ft.fabric.name: ft for ft in compiled.topology.fabrics}
    for name in ("inband", "oob"):
        switches = {sw.name for sw in fabrics[name].switches}
        assert {p.split("/")[1] for p in artifacts if p.endswith("config_db.json")} >= switches
        assert not any(f"switches/{s}/pfc-headroom.csv" in artifacts for s in switches), "no lossless class"
    oob = json.loads(artifacts["switches/oob-a01/config_db.json"])
    assert (oob["DEVICE_METADATA"]["localhost"]["hwsku"], oob["DEVICE_METADATA"]["localhost"]["type"]) == (
        "ACS-SN2201", "ToRRouter")
    # ACS-SN2201/port_config.ini: "Ethernet1  4  etp2  2  1000", "Ethernet52  196,197,198,199  etp50  50  100000"
    assert (oob["PORT"]["Ethernet1"]["lanes"], oob["PORT"]["Ethernet1"]["alias"], oob["PORT"]["Ethernet1"]["speed"],
            oob["PORT"]["Ethernet1"]["fec"]) == ("4", "etp2", "1000", "none")
    assert oob["PORT"]["Ethernet52"]["lanes"] == "196,197,198,199"
    assert {k.split("|")[0] for k in oob["VLAN_MEMBER"]} == {"Vlan100"} and len(oob["BGP_NEIGHBOR"]) == 2
    assert not {"PORT_QOS_MAP", "DSCP_TO_TC_MAP", "PFC_WD"} & set(oob)
    # every port, dark ones too, has a CABLE_LENGTH, "0m" (no lossless PG): buffermgrd retries a port without one
    # forever
    assert oob["CABLE_LENGTH"] == {"AZURE": dict.fromkeys(oob["PORT"], "0m")}
    sn2201 = _sku("ACS-SN2201")
    assert oob["BUFFER_POOL"] == {n: dict(p) for n, p in [*sn2201.pools["t0"].items(), *sn2201.inactive.pools.items()]}
    agg = json.loads(artifacts["switches/oob-agg01/config_db.json"])
    assert (agg["DEVICE_METADATA"]["localhost"]["hwsku"], agg["DEVICE_METADATA"]["localhost"]["type"]) == (
        "Mellanox-SN4700-C128", "LeafRouter")
    inband = json.loads(artifacts["switches/inband-leaf001/config_db.json"])
    assert inband["DEVICE_METADATA"]["localhost"]["hwsku"] == "Mellanox-SN4700-V64"
    assert inband["MGMT_VRF_CONFIG"] == {"vrf_global": {"mgmtVrfEnabled": "true"}}


def test_a_fabric_without_nos_is_named_in_the_plan(tmp_path: Path) -> None:
    spec = _storage_spec(tmp_path, "    switch: SN4700\n    nos: sonic\n    topology: {kind: leaf-spine, oversub",
                         "    switch: SN4700\n    topology: {kind: leaf-spine, oversub")
    compiled = compile_spec(spec)
    (found,) = [f for f in compiled.findings if f.check == "no-switch-configs"]
    # 11 leaves (24 hosts, one per split cage; the DGX in-band bond: two ports a node) and 3 spines
    assert found.subject == "inband" and "no switch configs" in found.message and "14 switches" in found.message
    assert not any(a.path.startswith("switches/inband-") for a in sonic.render(compiled.topology))


def test_layouts_are_computed_once_by_the_check_and_read_by_the_renderer(monkeypatch: pytest.MonkeyPatch) -> None:
    """The SONiC check lays out every SONiC switch before the render forks its workers; config_db.json is written
    from those layouts rather than laying each switch out again in a worker."""
    made: list[str] = []
    real = layout.sonic_layout

    def counted(view: SwitchView) -> layout.SonicLayout:
        made.append(view.name)
        return real(view)

    monkeypatch.setattr(layout, "sonic_layout", counted)
    monkeypatch.setattr(sonic, "sonic_layout", counted, raising=False)  # were the renderer to import it itself
    topology = compile_spec(INVENTORIES / "h100-4su.yaml").topology
    after_checks = list(made)
    rendered = sonic.render(topology)
    assert after_checks and sorted(after_checks) == sorted(set(after_checks))
    assert made == after_checks
    assert {f"switches/{name}/config_db.json" for name in after_checks} <= {a.path for a in rendered}
