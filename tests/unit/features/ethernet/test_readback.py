"""The cross-layer check catches every break in the lossless chain in the files as rendered, naming both sides:
the RoCE hosts and the switches of every NOS (the nccl.env and lnet.conf sides are in tests/unit/features/nccl and
lustre)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from fabricgen.core.artifacts import Artifact
from fabricgen.pipeline import Compiled, compile_spec
from fabricgen.stages.render import render
from tests.conftest import INVENTORIES
from tests.helpers.ethernet import eos_spec
from tests.helpers.readback import messages as _messages
from tests.helpers.readback import mutate as _mutate


@pytest.fixture(scope="module")
def h100() -> tuple[Compiled, tuple[Artifact, ...]]:
    compiled = compile_spec(INVENTORIES / "h100-4su.yaml")
    return compiled, render(compiled.topology)


def _sonic(change: Callable[[dict[str, dict[str, dict[str, str]]]], None]) -> Callable[[bytes], bytes]:
    def apply(content: bytes) -> bytes:
        db = json.loads(content)
        change(db)
        return json.dumps(db).encode()
    return apply


def test_rendered_examples_are_consistent(h100: tuple[Compiled, tuple[Artifact, ...]]) -> None:
    compiled, artifacts = h100
    assert _messages(compiled, artifacts) == []
    assert any(a.path.endswith("config_db.json") for a in artifacts)
    assert any(a.path.endswith("roce-qos.sh") for a in artifacts)


def test_switch_sends_lossless_dscp_to_a_lossy_class(h100: tuple[Compiled, tuple[Artifact, ...]]) -> None:
    compiled, artifacts = h100

    def lossy(db: dict[str, dict[str, dict[str, str]]]) -> None:
        for table in db["DSCP_TO_TC_MAP"].values():
            table["26"] = "1"  # SONiC's default template's trap: DSCP 26 on a lossy TC

    found = _messages(compiled, _mutate(artifacts, "storage-leaf001/config_db.json", _sonic(lossy)))
    assert found and all("DSCP 26 maps to TC 1 on the switch, but hosts send it on priority 3" in m for m in found)


def test_pfc_and_ecn_and_cnp(h100: tuple[Compiled, tuple[Artifact, ...]]) -> None:
    compiled, artifacts = h100

    def broken(db: dict[str, dict[str, dict[str, str]]]) -> None:
        port = sorted(db["PORT_QOS_MAP"])[0]
        db["PORT_QOS_MAP"][port]["pfc_enable"] = "3,4"
        db["QUEUE"][f"{port}|3"].pop("wred_profile", None)
        db["QUEUE"][f"{port}|6"]["scheduler"] = next(k for k, v in db["SCHEDULER"].items() if v["type"] == "DWRR")

    found = " ".join(_messages(compiled, _mutate(artifacts, "storage-leaf001/config_db.json", _sonic(broken))))
    assert "pfc_enable is '3,4', hosts enable PFC on priority 3 only" in found
    assert "lossless queue 3 has no ECN-marking WRED profile" in found
    assert "CNP DSCP 48 lands in queue 6 scheduled DWRR, not strict priority" in found


def test_host_disagrees_with_switches(h100: tuple[Compiled, tuple[Artifact, ...]]) -> None:
    compiled, artifacts = h100
    old, new = b"'26' '3' '0,0,0,1,0,0,0,0'", b"'24' '3' '0,0,0,1,0,0,0,0'"
    found = _messages(compiled, _mutate(artifacts, "dgx-h100/roce-qos.sh", lambda c: c.replace(old, new)))
    assert any("host DSCP is 24, the switches' lossless DSCP is 26" in m for m in found)
    tos = _messages(compiled, _mutate(artifacts, "dgx-h100/roce-qos.sh", lambda c: c.replace(b"'1' '106'", b"'1' '0'")))
    assert any("host rdma_cm ToS is 0, the lossless DSCP << 2 | ECT(0) is 106" in m for m in tos)


def test_switch_mtu_below_host_mtu(h100: tuple[Compiled, tuple[Artifact, ...]]) -> None:
    compiled, artifacts = h100

    def small(db: dict[str, dict[str, dict[str, str]]]) -> None:
        for port in db["PORT"].values():
            port["mtu"] = "4200"

    found = _messages(compiled, _mutate(artifacts, "storage-leaf001/config_db.json", _sonic(small)))
    assert any("switch MTU 4200 is below the host MTU 9000" in m for m in found)


@pytest.mark.parametrize("nos", ["eos", "nvue"])
def test_other_dialects_are_read_back(tmp_path: Path, nos: str) -> None:
    spec = tmp_path / f"{nos}.yaml"
    if nos == "eos":
        spec = eos_spec(tmp_path)
    else:
        spec.write_text((INVENTORIES / "h100-4su.yaml").read_text().replace("    switch: SN5600\n    nos: sonic\n",
                                                                             f"    switch: SN5600\n    nos: {nos}\n"))
    compiled = compile_spec(spec)
    artifacts = render(compiled.topology)
    assert _messages(compiled, artifacts) == []
    if nos == "eos":
        old, new = b"qos map dscp 26 to traffic-class 3", b"qos map dscp 26 to traffic-class 1"
        broken = _mutate(artifacts, "storage-leaf001.cfg", lambda c: c.replace(old, new))
        expected = "DSCP 26 maps to traffic class 1 on the switch, but hosts send it on priority 3"
    else:
        broken = _mutate(artifacts, "storage-leaf001/startup.yaml",
                         lambda c: c.replace(b"mode: lossless", b"mode: lossy"))
        expected = "qos roce is not in lossless mode"
    assert any(expected in m for m in _messages(compiled, broken))


# -- lossless PG headroom, in both SONiC buffer models ----------------------------------------------------------
@pytest.fixture(scope="module")
def dynamic(tmp_path_factory: pytest.TempPathFactory) -> tuple[Compiled, tuple[Artifact, ...]]:
    watchdog = "pfc_watchdog: {detect_ms: 200, restore_ms: 400, action: drop}\n"
    spec = tmp_path_factory.mktemp("dynamic") / "h100-4su.yaml"
    spec.write_text((INVENTORIES / "h100-4su.yaml").read_text().replace(watchdog, watchdog +
                                                                         "      buffer_model: dynamic\n"))
    compiled = compile_spec(spec)
    return compiled, render(compiled.topology)


def test_dynamic_model_is_consistent_as_rendered(dynamic: tuple[Compiled, tuple[Artifact, ...]]) -> None:
    compiled, artifacts = dynamic
    db = json.loads(next(a.content for a in artifacts if a.path.endswith("storage-leaf001/config_db.json")))
    assert db["BUFFER_PG"]["Ethernet0|3"] == {"profile": "NULL"}, "a lossless PG without a static profile"
    assert _messages(compiled, artifacts) == []


def test_lossless_pg_without_headroom(h100: tuple[Compiled, tuple[Artifact, ...]]) -> None:
    """Traditional model: a lossless PG dropped, pointed at a lossy profile, or left NULL has no headroom."""
    compiled, artifacts = h100

    def broken(db: dict[str, dict[str, dict[str, str]]]) -> None:
        db["BUFFER_PG"].pop("Ethernet0|3")
        db["BUFFER_PG"]["Ethernet4|3"]["profile"] = "ingress_lossy_profile"
        db["BUFFER_PG"]["Ethernet8|3"]["profile"] = "NULL"

    found = _messages(compiled, _mutate(artifacts, "storage-leaf001/config_db.json", _sonic(broken)))
    assert len(found) == 3, found
    assert "storage-leaf001 Ethernet0: lossless priority group 3 has no BUFFER_PG entry: PFC pauses" in found[0]
    assert "Ethernet4: lossless priority group 3 uses profile ingress_lossy_profile, which has no xoff" in found[1]
    assert "Ethernet8: priority group 3 has profile NULL, which only the dynamic buffer model computes" in found[2]


def test_dynamic_model_needs_its_inputs(dynamic: tuple[Compiled, tuple[Artifact, ...]]) -> None:
    """Dynamic model: buffermgrd computes headroom only from a cable length and the traffic-pattern tables."""
    compiled, artifacts = dynamic

    def broken(db: dict[str, dict[str, dict[str, str]]]) -> None:
        del db["LOSSLESS_TRAFFIC_PATTERN"]
        db["DEFAULT_LOSSLESS_BUFFER_PARAMETER"] = {}
        del db["CABLE_LENGTH"]["AZURE"]["Ethernet0"]

    found = _messages(compiled, _mutate(artifacts, "storage-leaf001/config_db.json", _sonic(broken)))
    assert len(found) == 3, found
    assert "buffer_model is dynamic but LOSSLESS_TRAFFIC_PATTERN is empty" in found[0]
    assert "buffer_model is dynamic but DEFAULT_LOSSLESS_BUFFER_PARAMETER is empty" in found[1]
    assert "Ethernet0: priority group 3 leaves its headroom to buffermgrd, but CABLE_LENGTH has no length" in found[2]


@pytest.fixture(scope="module")
def shared() -> tuple[Compiled, tuple[Artifact, ...]]:
    """lab-1su: SN4700 at 2 x 200G is Mellanox-SN4700-V64, whose traditional buffers pool the xoff (its
    pg_profile_lookup.ini has size = xon, its ingress_lossless_pool an xoff)."""
    compiled = compile_spec(INVENTORIES / "lab-1su.yaml")
    return compiled, render(compiled.topology)


def test_shared_headroom_pool_is_consistent_as_rendered(shared: tuple[Compiled, tuple[Artifact, ...]]) -> None:
    compiled, artifacts = shared
    db = json.loads(next(a.content for a in artifacts if a.path.endswith("storage-leaf001/config_db.json")))
    profile = db["BUFFER_PROFILE"][db["BUFFER_PG"]["Ethernet0|3"]["profile"]]
    assert profile["size"] == profile["xon"] != "0" and int(db["BUFFER_POOL"]["ingress_lossless_pool"]["xoff"]) > 0
    assert _messages(compiled, artifacts) == []


def test_xoff_left_to_a_shared_headroom_pool_that_is_not_there(shared: tuple[Compiled, tuple[Artifact, ...]],
                                                               h100: tuple[Compiled, tuple[Artifact, ...]]) -> None:
    """size = xon leaves the xoff to the pool: with the pool's xoff at 0 the in-flight bytes after a pause drop.
    Reserving the full xon + xoff is fine with or without the pool."""
    compiled, artifacts = shared

    def no_pool(db: dict[str, dict[str, dict[str, str]]]) -> None:
        db["BUFFER_POOL"]["ingress_lossless_pool"]["xoff"] = "0"

    found = _messages(compiled, _mutate(artifacts, "storage-leaf001/config_db.json", _sonic(no_pool)))
    ports = len(json.loads(next(a.content for a in artifacts
                                if a.path.endswith("storage-leaf001/config_db.json")))["PORT_QOS_MAP"])
    assert len(found) == ports and all("has no shared headroom pool (xoff 0)" in m for m in found), found[:2]
    assert "storage-leaf001 Ethernet0: lossless priority group 3 uses profile pg_lossless_200000_40m_profile, " \
           "whose size 19456 reserves less than xon 19456 + xoff 51200" in found[0]
    compiled, artifacts = h100

    def pool_only(db: dict[str, dict[str, dict[str, str]]]) -> None:
        db["BUFFER_POOL"]["ingress_lossless_pool"]["xoff"] = "1048576"

    assert _messages(compiled, _mutate(artifacts, "storage-leaf001/config_db.json", _sonic(pool_only))) == []


def test_dynamic_shared_headroom_pool_is_consistent(tmp_path: Path) -> None:
    watchdog = "pfc_watchdog: {detect_ms: 200, restore_ms: 400, action: drop}\n"
    spec = tmp_path / "h100-4su.yaml"
    spec.write_text((INVENTORIES / "h100-4su.yaml").read_text().replace(
        watchdog, watchdog + "      buffer_model: dynamic\n      shared_headroom_pool: {over_subscribe_ratio: 4}\n"))
    compiled = compile_spec(spec)
    assert _messages(compiled, render(compiled.topology)) == []


def test_eos_lossless_queue_left_strict_or_without_a_port_watchdog(tmp_path: Path) -> None:
    """EOS queues are strict priority until `no priority`: a bandwidth share on a strict lossless queue starves the
    lossy ones; a qos profile without the per-port watchdog never breaks a pause storm."""
    compiled = compile_spec(eos_spec(tmp_path))
    artifacts = render(compiled.topology)
    strict = _mutate(artifacts, "storage-leaf001.cfg", lambda c: c.replace(b"      no priority\n", b""))
    assert any("uc-tx-queue 3 has a bandwidth share but no `no priority`" in m for m in _messages(compiled, strict))
    blind = _mutate(artifacts, "storage-leaf001.cfg",
                    lambda c: c.replace(b"   priority-flow-control pause watchdog port action drop\n", b""))
    assert any("enables no per-port PFC watchdog" in m for m in _messages(compiled, blind))


def test_eos_other_dscps_left_to_the_default_map(tmp_path: Path) -> None:
    """EOS's default map sends DSCP 24-31 to TC 3 (the lossless class) and 32-63 to strict queues: every other DSCP
    must be mapped to TC 0 as SONiC and NVUE do."""
    compiled = compile_spec(eos_spec(tmp_path))
    artifacts = render(compiled.topology)
    assert _messages(compiled, artifacts) == []
    default = _mutate(artifacts, "storage-leaf001.cfg",
                      lambda c: b"\n".join(line for line in c.split(b"\n")
                                           if not line.endswith(b" to traffic-class 0")))
    assert any("62 other DSCPs (first 0) are not mapped to traffic class 0" in m
               for m in _messages(compiled, default))


def test_pfc_priority_reaches_another_priority_group(h100: tuple[Compiled, tuple[Artifact, ...]]) -> None:
    """On Mellanox the SAI pauses a priority from the PG pfc_to_pg_map names (qos_config.j2 writes the map there):
    a map that is missing, or sends priority 3 elsewhere, pauses from a PG the lossless traffic never fills."""
    compiled, artifacts = h100

    def broken(db: dict[str, dict[str, dict[str, str]]]) -> None:
        db["PFC_PRIORITY_TO_PRIORITY_GROUP_MAP"]["ROCE"]["3"] = "4"
        del db["PORT_QOS_MAP"]["Ethernet4"]["pfc_to_pg_map"]

    found = _messages(compiled, _mutate(artifacts, "storage-leaf001/config_db.json", _sonic(broken)))
    pfc = [m for m in found if "(pfc_to_pg_map)" in m]
    assert any("Ethernet0: PFC priority 3 maps to priority group 4 (pfc_to_pg_map)" in m for m in pfc), found
    assert any("Ethernet4: PFC priority 3 maps to priority group None" in m for m in pfc), found
