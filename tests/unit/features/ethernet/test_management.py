"""The management baseline (the spec's ``management`` section) in all three dialects, and management-secrets.sh: the
TACACS+ key and SNMP community are never in an artifact; each switch's script reads them where the spec says, on the
switch, and applies them through its NOS without printing them or putting them on a command line, TACACS+ login
last. The scripts run here under bash against stub NOS commands (tests/data/fake-nos/)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from fabricgen.features.ethernet.checks import unrouted_management
from fabricgen.pipeline import compile_spec
from fabricgen.stages.render import render
from tests.conftest import INVENTORIES, REPO
from tests.helpers.ethernet import eos_spec

STUBS = REPO / "tests" / "data" / "fake-nos"
KEY, COMMUNITY = "k3y-for-tacacs+", "c0mmunity.ro"  # what the switch holds; never in an artifact


@pytest.fixture(scope="module")
def sonic_files() -> dict[str, bytes]:
    return {a.path: a.content for a in render(compile_spec(INVENTORIES / "h100-4su.yaml").topology)}


@pytest.fixture(scope="module")
def eos_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    compiled = compile_spec(eos_spec(tmp_path_factory.mktemp("eos")))
    return {a.path: a.content for a in render(compiled.topology, ["eos"])}


@pytest.fixture(scope="module")
def nvue_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    spec = tmp_path_factory.mktemp("nvue") / "nvue.yaml"
    spec.write_text((INVENTORIES / "h100-4su.yaml").read_text().replace("    switch: SN5600\n    nos: sonic\n",
                                                                         "    switch: SN5600\n    nos: nvue\n"))
    return {a.path: a.content for a in render(compile_spec(spec).topology, ["nvue"])}


def test_sonic_baseline_tables(sonic_files: dict[str, bytes]) -> None:
    """In the management VRF where the switch has one (every fabric of h100-4su; without it the default VRF, see
    `test_management_services_without_a_route_are_named_at_plan`)."""
    db: dict[str, Any] = json.loads(sonic_files["switches/storage-leaf001/config_db.json"])
    assert db["NTP"] == {"global": {"vrf": "mgmt"}}
    assert db["NTP_SERVER"] == {s: {"association_type": "server", "iburst": "on"} for s in ("10.99.0.11", "10.99.0.12")}
    assert db["DNS_NAMESERVER"] == {"10.99.0.53": {}}
    assert db["SYSLOG_SERVER"] == {"10.99.0.80": {"port": "514", "vrf": "mgmt"}}
    mgmt = next(iter(db["MGMT_INTERFACE"])).split("|")[1].split("/")[0]
    assert db["SNMP_AGENT_ADDRESS_CONFIG"] == {f"{mgmt}||mgmt": {}}
    assert db["SNMP"] == {"LOCATION": {"Location": "dc1"}, "CONTACT": {"Contact": "noc@example.net"}}
    assert db["TACPLUS"] == {"global": {"auth_type": "pap", "timeout": "5"}}
    assert db["TACPLUS_SERVER"] == {"10.99.0.49": {"priority": "2", "tcp_port": "49", "timeout": "5", "vrf": "mgmt"},
                                    "10.99.0.50": {"priority": "1", "tcp_port": "49", "timeout": "5", "vrf": "mgmt"}}
    assert not {"AAA", "SNMP_COMMUNITY"} & set(db), "login and the community wait for management-secrets.sh"
    assert "passkey" not in db["TACPLUS"]["global"]
    oob: dict[str, Any] = json.loads(sonic_files["switches/oob-a01/config_db.json"])
    # rack A01, facility position 0: the management pool's first address after the gateway
    assert oob["NTP"] == {"global": {"vrf": "mgmt"}} and oob["MGMT_INTERFACE"] == {
        "eth0|10.37.0.2/24": {"gwaddr": "10.37.0.1"}}
    assert oob["SNMP_AGENT_ADDRESS_CONFIG"] == {"10.37.0.2||mgmt": {}}


def test_eos_and_nvue_baselines(eos_files: dict[str, bytes], nvue_files: dict[str, bytes]) -> None:
    cli = eos_files["switches/storage-leaf001/storage-leaf001.cfg"].decode()
    for line in ("ntp server vrf MGMT 10.99.0.11 iburst", "ip name-server vrf MGMT 10.99.0.53",
                 "dns domain dc1.example.net", "logging vrf MGMT host 10.99.0.80 514", "snmp-server vrf MGMT",
                 "tacacs-server host 10.99.0.49 vrf MGMT", "aaa group server tacacs+ TACACS",
                 "ip tacacs vrf MGMT source-interface Management1"):
        assert f"\n{line}\n" in cli, line
    assert "aaa authentication" not in cli and "snmp-server community" not in cli
    tree = yaml.safe_load(nvue_files["switches/storage-leaf001/startup.yaml"])[0]["set"]
    assert tree["service"]["ntp"] == {"mgmt": {"server": {"10.99.0.11": {"iburst": "on"},
                                                          "10.99.0.12": {"iburst": "on"}}}}
    assert tree["service"]["syslog"] == {"mgmt": {"server": {"10.99.0.80": {"port": 514}}}}
    assert tree["system"]["aaa"] == {"tacacs": {"server": {"1": {"host": "10.99.0.49"}, "2": {"host": "10.99.0.50"}},
                                                "vrf": "mgmt", "timeout": 5}}
    assert "readonly-community" not in tree["service"]["snmp-server"]


def test_no_secret_is_in_any_artifact(tmp_path: Path, sonic_files: dict[str, bytes], eos_files: dict[str, bytes],
                                      nvue_files: dict[str, bytes]) -> None:
    """The spec names TACACS_KEY and /etc/fabricgen/snmp-community; only the scripts name them, no file holds a
    secret (rendering reads neither)."""
    os.environ["TACACS_KEY"] = KEY
    try:
        again = {a.path: a.content for a in render(compile_spec(INVENTORIES / "h100-4su.yaml").topology)}
    finally:
        del os.environ["TACACS_KEY"]
    assert again == sonic_files, "the environment changes nothing"
    for files in (sonic_files, eos_files, nvue_files):
        for path, content in files.items():
            assert KEY.encode() not in content and COMMUNITY.encode() not in content, path
            if b"TACACS_KEY" in content or b"/etc/fabricgen/snmp-community" in content:
                assert path.endswith("/management-secrets.sh"), path


def _run(script: bytes, tmp: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    path = tmp / "management-secrets.sh"
    path.write_bytes(script)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    full = {"PATH": f"{STUBS}:{os.environ['PATH']}", "FAKE_NOS_LOG": str(tmp / "log"), **env}
    return subprocess.run(["bash", str(path)], capture_output=True, text=True, env=full, timeout=60, check=False)


@pytest.mark.parametrize("dialect", ["sonic", "eos", "nvue"])
def test_the_script_applies_the_secrets_without_showing_them(dialect: str, tmp_path: Path,
                                                             sonic_files: dict[str, bytes],
                                                             eos_files: dict[str, bytes],
                                                             nvue_files: dict[str, bytes]) -> None:
    files = {"sonic": sonic_files, "eos": eos_files, "nvue": nvue_files}[dialect]
    script = files["switches/storage-leaf001/management-secrets.sh"]
    community = tmp_path / "snmp-community"
    community.write_text(COMMUNITY + "\n")
    script = script.replace(b"/etc/fabricgen/snmp-community", str(community).encode())
    done = _run(script, tmp_path, {"TACACS_KEY": KEY})
    assert done.returncode == 0, done.stderr
    assert KEY not in done.stdout + done.stderr and COMMUNITY not in done.stdout + done.stderr
    log = (tmp_path / "log").read_text()
    argv = [line for line in log.splitlines() if line.startswith("argv:")]
    assert argv and not any(KEY in line or COMMUNITY in line for line in argv), "secrets never on a command line"
    applied = "\n".join(line for line in log.splitlines() if not line.startswith("argv:"))
    expected = {
        "sonic": [f"HSET TACPLUS|global passkey {KEY}", f"HSET SNMP_COMMUNITY|{COMMUNITY} TYPE RO",
                  "HSET AAA|authentication login tacacs+,local"],
        "eos": [f"tacacs-server key 0 {KEY}", f"snmp-server community {COMMUNITY} ro",
                "aaa authentication login default group TACACS local"],
        "nvue": [f'"{COMMUNITY}":', f'secret: "{KEY}"', '"5": tacacs'],
    }[dialect]
    positions = [applied.index(text) for text in expected]
    assert positions == sorted(positions), "TACACS+ login only after the key"
    if dialect == "nvue":  # the patch is the startup.yaml tree, its server priorities those of the config
        patch = yaml.safe_load((tmp_path / "log.patch").read_text())
        assert patch[0]["set"]["system"]["aaa"]["tacacs"]["server"] == {"1": {"secret": KEY}, "2": {"secret": KEY}}
        assert patch[0]["set"]["service"]["snmp-server"]["readonly-community"] == {COMMUNITY: {"access": {"any": {}}}}


def test_nvue_patch_keeps_secrets_strings_yaml_would_read_otherwise(tmp_path: Path,
                                                                    nvue_files: dict[str, bytes]) -> None:
    """A key such as ``on`` or ``*k`` is a boolean or an alias to YAML unless quoted: the patch quotes both."""
    script = nvue_files["switches/storage-leaf001/management-secrets.sh"]
    community = tmp_path / "snmp-community"
    community.write_text("*c0m\n")
    script = script.replace(b"/etc/fabricgen/snmp-community", str(community).encode())
    done = _run(script, tmp_path, {"TACACS_KEY": "on"})
    assert done.returncode == 0, done.stderr
    patch = yaml.safe_load((tmp_path / "log.patch").read_text())
    assert patch[0]["set"]["system"]["aaa"]["tacacs"]["server"]["1"] == {"secret": "on"}
    assert list(patch[0]["set"]["service"]["snmp-server"]["readonly-community"]) == ["*c0m"]


def test_the_script_refuses_a_missing_or_malformed_secret(tmp_path: Path, sonic_files: dict[str, bytes]) -> None:
    script = sonic_files["switches/storage-leaf001/management-secrets.sh"]
    script = script.replace(b"/etc/fabricgen/snmp-community", str(tmp_path / "absent").encode())
    missing = _run(script, tmp_path, {"TACACS_KEY": KEY})
    assert missing.returncode == 1 and "no value for snmp_community" in missing.stderr
    assert not (tmp_path / "log").exists(), "nothing applied"
    (tmp_path / "absent").write_text("has a space\n")
    spaced = _run(script, tmp_path, {"TACACS_KEY": KEY})
    assert spaced.returncode == 1 and "snmp_community must be 1-64 characters" in spaced.stderr
    assert "has a space" not in spaced.stderr


def test_no_management_section_no_baseline(tmp_path: Path) -> None:
    text = (INVENTORIES / "h100-4su.yaml").read_text()
    start, end = text.index("management:  "), text.index("kubernetes:")
    spec = tmp_path / "plain.yaml"
    spec.write_text(text[:start] + text[end:])
    files = {a.path: a.content for a in render(compile_spec(spec).topology, ["sonic"])}
    assert not any(p.endswith("management-secrets.sh") for p in files)
    db = json.loads(files["switches/storage-leaf001/config_db.json"])
    assert not {"NTP", "NTP_SERVER", "TACPLUS_SERVER", "SYSLOG_SERVER", "SNMP"} & set(db)


OOB_MANAGEMENT = ("      management: 10.37.0.0/24    # the OOB switches' own management ports, like the other "
                  "fabrics': NTP, TACACS+\n      management_gateway: 10.37.0.1\n")


def test_management_services_without_a_route_are_named_at_plan(tmp_path: Path) -> None:
    """h100-4su's OOB switches without their management pool: their NTP, syslog and TACACS+ run in the default VRF,
    which the fabric's eBGP alone cannot route to the servers (field review F7). The fabrics with a management pool
    and gateway get no finding, the example as shipped none at all."""
    text = (INVENTORIES / "h100-4su.yaml").read_text()
    assert text.count(OOB_MANAGEMENT) == 1
    assert not list(unrouted_management(compile_spec(INVENTORIES / "h100-4su.yaml").topology))
    spec = tmp_path / "h100-4su.yaml"
    spec.write_text(text.replace(OOB_MANAGEMENT, ""))
    topology = compile_spec(spec).topology
    found = list(unrouted_management(topology))
    assert [f.subject for f in found] == ["oob"]
    # the services then run in the default VRF, from the loopback
    oob = json.loads(next(a.content for a in render(topology, ["sonic"])
                          if a.path == "switches/oob-a01/config_db.json"))
    assert oob["NTP"] == {"global": {"vrf": "default"}} and "MGMT_VRF_CONFIG" not in oob
    loopback = next(k for k in oob["LOOPBACK_INTERFACE"] if "|" in k).split("|")[1].split("/")[0]
    assert oob["SNMP_AGENT_ADDRESS_CONFIG"] == {f"{loopback}||": {}}
    assert "the fabric has no management pool and fabricgen writes no border or default route" in found[0].message
    assert "10.99.0.49" in found[0].message
