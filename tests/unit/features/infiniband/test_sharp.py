"""SHARP and NVIDIA's adaptive routing: what each setting renders to (UFM's opensm.conf lines, sharp_am's settings,
nccl.env), the engines chosen, and the checks that need the compiled fabric. Refusals a spec can show are negative
cases (tests/negative/sm-sharp-*.yaml, sm-adaptive-routing-upstream.yaml, sm-ar-sls-miss-compute.yaml); what upstream
OpenSM does with NVIDIA's keywords is shown on ibsim (tests/external/infiniband/test_nvidia_only_upstream.py); UFM's
ufm-install.sh editing gv.cfg and sharp_am.cfg runs in test_ufm.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from fabricgen.core.errors import SpecError
from fabricgen.features.infiniband.view import routing_engines
from fabricgen.model.infiniband import AdaptiveRouting, SubnetManager
from fabricgen.pipeline import Compiled, compile_spec, render_spec

UFM = {"flavor": "ufm", "hosts": [{"name": "sm01", "priority": 15}, {"name": "sm02", "priority": 14}],
       "guids": "simulated"}
# The SM (and sharp_am) hosts: management nodes with one port each, on rails 0 and 1 of the spare slot
SM_PROFILES = {f"sm-server-{x}": {"role": "management", "height_u": 1, "nics": {"compute": [
    {"dev": "mlx5_0", "netdev": "ib0", "port": "P1", "model": "ConnectX-7-OSFP", "rail": rail}]}}
    for x, rail in (("a", 0), ("b", 1))}
SM_NODES = [{"name": f"sm0{i}", "count": 1, "profile": f"sm-server-{x}",
             "placement": {"rows": ["L"], "per_rack": 1, "start_u": 30}} for i, x in ((1, "a"), (2, "b"))]


def _spec(tmp_path: Path, sm: dict[str, Any], *, switch: str = "QM9700", speed: str = "NDR",
          topology: dict[str, Any] | None = None, nodes: int = 7) -> Path:
    doc = {"apiVersion": "fabricgen/v1", "kind": "Cluster", "metadata": {"name": "sharp"},
           "facility": {"rows": [{"name": "L", "racks": 4}, {"name": "M", "racks": 1, "kind": "network"}]},
           "node_profiles": SM_PROFILES,
           "nodes": [{"name": "hgx{n:02d}", "count": nodes, "profile": "hgx-8gpu-generic",
                      "placement": {"rows": ["L"], "per_rack": 2, "start_u": 2}}, *SM_NODES],
           "fabrics": {"compute": {"type": "infiniband", "speed": speed, "switch": switch,
                                   "topology": topology or {"kind": "rail-optimized", "scalable_unit": 8},
                                   "subnet_manager": sm}}}
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _files(compiled: Compiled) -> dict[str, str]:
    return {a.path: a.content.decode() for a in render_spec(compiled, ["infiniband", "nccl"])}


def _settings(text: str) -> dict[str, str]:
    return dict(line.split(" ", 1) for line in text.splitlines() if line and not line.startswith("#"))


def test_ufm_defaults_route_adaptively_with_shield_as_nvidia_ships_it(tmp_path: Path) -> None:
    files = _files(compile_spec(_spec(tmp_path, UFM)))
    settings = _settings(files["infiniband/compute/opensm-settings.conf"])
    assert settings["routing_engine"] == "ar_ftree,ar_updn,no_fallback"
    assert "shield_mode" not in settings and "ar_sl_mask" not in settings, "NVIDIA's defaults: AR and SHIELD on"
    assert not [p for p in files if "sharp" in p], "no SHARP unless the spec asks"
    assert "NCCL_COLLNET_ENABLE" not in files["hosts/hgx-8gpu-generic/nccl.env"]


@pytest.mark.parametrize(("shield", "mode"), [("off", "0"), ("no-pfrn", "2")])
def test_shield_modes(tmp_path: Path, shield: str, mode: str) -> None:
    files = _files(compile_spec(_spec(tmp_path, {**UFM, "adaptive_routing": {"shield": shield}})))
    assert _settings(files["infiniband/compute/opensm-settings.conf"])["shield_mode"] == mode


def test_static_routing_and_the_sl_mask(tmp_path: Path) -> None:
    sm = {**UFM, "adaptive_routing": {"enabled": False, "service_levels": [0, 3]}}
    settings = _settings(_files(compile_spec(_spec(tmp_path, sm)))["infiniband/compute/opensm-settings.conf"])
    assert settings["routing_engine"] == "ftree,updn,no_fallback"
    assert settings["ar_sl_mask"] == "0x0009"


def test_xdr_under_ufm_routes_with_ar_updn_alone() -> None:
    sm = SubnetManager("ufm", (), False, (), 0, 10, "/etc/opensm", (), None, (), "simulated",
                       adaptive_routing=AdaptiveRouting())
    assert routing_engines(sm, 2, "XDR") == ("ar_updn",)
    assert routing_engines(sm, 2, "NDR") == ("ar_ftree", "ar_updn")


def test_sharp_under_ufm(tmp_path: Path) -> None:
    sm = {**UFM, "partitions": [{"name": "training", "pkey": "0x8001", "members": {"groups": ["hgx{n:02d}"]}}],
          "traffic": {"compute": "training"}, "sharp": {"smx_protocol": "ucx"}}
    files = _files(compile_spec(_spec(tmp_path, sm)))
    am = files["infiniband/compute/sharp_am-settings.conf"]
    assert _settings(am) == {"ib_qpc_pkey": "0x8001", "ib_qpc_sl": "0", "ib_sat_qpc_sl": "0", "smx_protocol": "1",
                             "smx_enabled_protocols": "7"}
    assert _settings(files["infiniband/compute/opensm-settings.conf"])["max_op_vls"] == "2"
    assert "Quantum-2 (SHARPv3) holds 511 streaming-aggregation" in am and "at most 63 jobs on all 8 rails" in am
    assert "NCCL_COLLNET_ENABLE=1" in files["hosts/hgx-8gpu-generic/nccl.env"].splitlines()
    script = files["infiniband/compute/ufm-install.sh"]
    assert "set_ini \"$GV_CFG\" Sharp sharp_enabled true" in script and "sharp_am-settings.conf" in script


def test_sharp_beside_nvidia_opensm_gets_a_standalone_sharp_am_cfg(tmp_path: Path) -> None:
    sm = {"opensm_version": "5.21.0", "guids": "simulated", "sharp": {}}
    files = _files(compile_spec(_spec(tmp_path, sm)))
    am = files["infiniband/compute/sharp_am.cfg"]
    sls = {"ib_qpc_sl": "0", "ib_sat_qpc_sl": "0"}
    assert "/etc/sharp/sharp_am.cfg" in am and _settings(am) == {"ib_qpc_pkey": "0xffff", **sls, "smx_protocol": "1",
                                                                 "smx_enabled_protocols": "7"}  # UCX by default
    assert _settings(files["infiniband/compute/opensm.conf"])["max_op_vls"] == "2"
    sockets = _files(compile_spec(_spec(tmp_path, {**sm, "sharp": {"smx_protocol": "sockets"}})))
    assert _settings(sockets["infiniband/compute/sharp_am.cfg"]) == {"ib_qpc_pkey": "0xffff", **sls,
                                                                     "smx_protocol": "2"}


def test_sharp_runs_on_its_partitions_sl_within_two_vls(tmp_path: Path) -> None:
    """sharp_am's QPs take the SHARP partition's SL (its QoS level); with SHARP the subnet runs on 2 operational VLs,
    so an SL of compute or IPoIB traffic mapped to VL 2 or above is refused."""
    qos = {"levels": [{"ulp": "default", "sl": 0}, {"partition": "training", "sl": 1}]}
    sm = {**UFM, "partitions": [{"name": "training", "pkey": "0x8001", "members": {"groups": ["hgx{n:02d}"]}}],
          "traffic": {"compute": "training"}, "qos": qos, "sharp": {}}
    am = _settings(_files(compile_spec(_spec(tmp_path, sm)))["infiniband/compute/sharp_am-settings.conf"])
    assert (am["ib_qpc_sl"], am["ib_sat_qpc_sl"]) == ("1", "1")
    high = {**qos, "sl2vl": "0,2,2,3,4,5,6,7,0,1,2,3,4,5,6,7"}
    with pytest.raises(SpecError) as err:
        compile_spec(_spec(tmp_path, {**sm, "qos": high}))
    assert [str(i.path) for i in err.value.issues if "2 operational VLs" in i.message] == [
        "fabrics.compute.subnet_manager.qos.sl2vl"]


def test_sharp_writes_two_vl_arbitration_tables(tmp_path: Path) -> None:
    """With max_op_vls 2 OpenSM masks each VL in the VLArb and SL2VL tables to VL & 1 (osm_qos.c): the tables written
    keep only VL0/VL1's entries (VL0 high priority, VL1 low), so VL2-14's weights do not fold onto VL0; SL2VL is
    written as the ports get it. Without SHARP the spec's tables stay as given."""
    qos = {"levels": [{"ulp": "default", "sl": 0}, {"partition": "training", "sl": 1}]}
    sm = {**UFM, "partitions": [{"name": "training", "pkey": "0x8001", "members": {"groups": ["hgx{n:02d}"]}}],
          "traffic": {"compute": "training"}, "qos": qos, "sharp": {}}
    settings = _settings(_files(compile_spec(_spec(tmp_path, sm)))["infiniband/compute/opensm-settings.conf"])
    assert (settings["qos_max_vls"], settings["qos_vlarb_high"], settings["qos_vlarb_low"]) == ("2", "0:4,1:0",
                                                                                                "0:0,1:4")
    assert settings["qos_sl2vl"] == "0,1,0,1,0,1,0,1,0,1,0,1,0,1,0,1"
    dropped = {**qos, "sl2vl": "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15"}
    masked = _settings(_files(compile_spec(_spec(tmp_path, {**sm, "qos": dropped})))[
        "infiniband/compute/opensm-settings.conf"])["qos_sl2vl"]
    assert masked.endswith(",0,15"), "VL 15 (drop) is never masked"
    without = {k: v for k, v in sm.items() if k != "sharp"}
    plain = _settings(_files(compile_spec(_spec(tmp_path, without)))["infiniband/compute/opensm-settings.conf"])
    assert plain["qos_vlarb_low"].startswith("0:0,1:4,2:4,") and plain["qos_sl2vl"].startswith("0,1,2,3,")


def test_adaptive_routing_under_nvidia_opensm(tmp_path: Path) -> None:
    """flavor opensm with NVIDIA's OpenSM 5.x has the ar_ engines and SHIELD: opensm.conf keeps upstream 3.3.23's
    option table and appends the NVIDIA-only settings; without adaptive_routing it routes as before (static)."""
    sm = {"opensm_version": "5.21.0", "guids": "simulated",
          "adaptive_routing": {"service_levels": [0], "shield": "no-pfrn"}}
    conf = _files(compile_spec(_spec(tmp_path, sm)))["infiniband/compute/opensm.conf"]
    settings = _settings(conf)
    assert settings["routing_engine"] == "ar_ftree,ar_updn,no_fallback"
    assert (settings["ar_sl_mask"], settings["shield_mode"]) == ("0x0001", "2")
    tail = conf[conf.index("# NVIDIA OpenSM 5.21.0 settings"):]
    assert "ar_sl_mask 0x0001" in tail and "shield_mode 2" in tail
    plain = {k: v for k, v in sm.items() if k != "adaptive_routing"}
    static = _settings(_files(compile_spec(_spec(tmp_path, plain)))["infiniband/compute/opensm.conf"])
    assert static["routing_engine"] == "ftree,updn,no_fallback" and "ar_sl_mask" not in static
    with pytest.raises(SpecError) as err:  # upstream OpenSM: refused as before
        compile_spec(_spec(tmp_path, {**sm, "opensm_version": "3.3.24"}))
    assert [str(i.path) for i in err.value.issues] == ["fabrics.compute.subnet_manager.adaptive_routing"]


def test_ar_ftree_on_xdr_is_refused(tmp_path: Path) -> None:
    """NVIDIA's SM routes XDR adaptively with ar_updn only (UFM's manual): an explicit ar_ftree there is refused.
    The catalog has no XDR switch yet, so the spec brings one (and an XDR HCA) as overrides."""
    path = _spec(tmp_path, {**UFM, "routing_engine": ["ar_ftree", "ar_updn"]}, switch="XDR-SW", speed="XDR")
    doc = yaml.safe_load(path.read_text())
    doc["catalog"] = {
        "switches": {"XDR-SW": {"vendor": "NVIDIA", "fabric_type": "infiniband", "height_u": 1, "asic": "Quantum-3",
                                "port_groups": [{"name": "main", "cages": 36, "form_factor": "OSFP",
                                                 "ports_per_cage": {"XDR": 2}}]}},
        "nics": {"XDR-HCA": {"vendor": "NVIDIA", "ports": 1, "form_factor": "OSFP", "speeds": ["XDR"],
                             "link_types": ["ib"]}}}
    for profile in doc["node_profiles"].values():
        for nic in profile["nics"]["compute"]:
            nic["model"] = "XDR-HCA"
    doc["node_profiles"]["xdr-server"] = {"role": "compute", "height_u": 4, "gpus": 8, "nics": {"compute": [
        {"gpu": i, "dev": f"mlx5_{i}", "netdev": f"ib{i}", "port": f"NIC{i}", "model": "XDR-HCA"} for i in range(8)]}}
    doc["nodes"][0]["profile"] = "xdr-server"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    with pytest.raises(SpecError) as err:
        compile_spec(path)
    assert [str(i.path) for i in err.value.issues if "ar_updn only" in i.message] == [
        "fabrics.compute.subnet_manager.routing_engine[0]"], [i.message for i in err.value.issues]


@pytest.mark.parametrize(("protocol", "ports"), [("ucx", 2), ("ucx", 1), ("sockets", 2)])
def test_sharp_am_talks_ucx_on_a_port_of_its_own(tmp_path: Path, protocol: str, ports: int) -> None:
    """UCX connects two ports only on one P_Key, and the jobs' HCAs hold SHARP's partition at index 0: with UCX and a
    second port on each SM host, sharp_am talks UCX there (smx_ucx_interface), that port a full member in SHARP's
    indx0 definition, while the SM's port (SELF) keeps Default at index 0 as UFM wants. With one port a plan warning
    says so; with sockets nothing changes."""
    profiles = {name: {**p, "nics": {"compute": [*p["nics"]["compute"], {
        "dev": "mlx5_1", "netdev": "ib1", "port": "P2", "model": "ConnectX-7-OSFP", "rail": 2 + i}][:ports]}}
        for i, (name, p) in enumerate(SM_PROFILES.items())}
    sm = {**UFM, "partitions": [{"name": "training", "pkey": "0x8001", "members": {"groups": ["hgx{n:02d}"]}}],
          "traffic": {"compute": "training"}, "sharp": {"smx_protocol": protocol}}
    path = _spec(tmp_path, sm)
    doc = yaml.safe_load(path.read_text())
    doc["node_profiles"] = profiles
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    compiled = compile_spec(path)
    files = _files(compiled)
    text = files["infiniband/compute/partitions.conf.user_ext"]
    first, second = (d for d in text.split("\ntraining=")[1:])
    assert first.startswith("0x0001, indx0") and "SELF=full" not in first
    assert "indx0" not in second.split(":")[0] and "SELF=full" in second
    dedicated = protocol == "ucx" and ports == 2
    am = _settings(files["infiniband/compute/sharp_am-settings.conf"])
    assert (am.get("smx_ucx_interface") == "mlx5_1:1") == dedicated, am
    assert first.count("\n    0x") == 7 * 8 + (2 if dedicated else 0), "the jobs' HCAs and sharp_am's UCX ports"
    warned = [w for w in compiled.warnings if w.check == "sharp" and "smx_ucx_interface" in w.message]
    assert bool(warned) == (protocol == "ucx" and ports == 1)
