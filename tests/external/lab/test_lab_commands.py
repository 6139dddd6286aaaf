"""``fabricgen lab up|check|down`` on h100-4su's storage fabric, from its golden artifacts as OUT: 10 switches and
the sampled hosts (one per leaf, and every storage server) from their netplan files; every session, route and ECMP
width as eBGP's rules give them; every host reaching every other and each storage server at 9000 bytes with DF set.
A second ``up`` changes nothing, ``down`` leaves no namespace or daemon. Then one lab with three breaks the lab
must catch, each named: a spine's config_db.json expecting a wrong ASN of a leaf (its sessions, by port and cable),
a host MTU above the switches' in a netplan file (that host's pings, by cable), and a leaf announcing no network
for its host subnet (the prefix missing on every other switch; its hosts unreachable from other leaves)."""
from __future__ import annotations

import dataclasses
import ipaddress
import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fabricgen.cli import app
from fabricgen.features.lab import netns, run
from fabricgen.pipeline import compile_spec
from tests.conftest import INVENTORIES, REPO, require_tool
from tests.external.lab.test_lab_switches import _require_root

GOLDEN = REPO / "tests/golden/h100-4su"
SPEC = INVENTORIES / "h100-4su.yaml"


def _lab(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["lab", *args])
    assert "Traceback" not in result.output
    return result.exit_code, result.output


def _namespaces() -> set[str]:
    return {line.split()[0] for line in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True,
                                                       check=True).stdout.splitlines() if line.strip()}


@pytest.fixture
def tools() -> Iterator[None]:
    require_tool("vtysh")
    require_tool("ping")
    _require_root()
    before = _namespaces()
    try:
        yield
    finally:  # whatever failed, nothing of the lab stays
        _lab("down", str(SPEC), "--fabric", "storage")
        assert _namespaces() <= before


def test_up_check_down(tools: None) -> None:
    before = _namespaces()
    code, text = _lab("up", str(SPEC), "-o", str(GOLDEN), "--fabric", "storage")
    assert code == 0, text
    assert "fabric storage: up in " in text and "10 switches, 9 hosts, 402 cables" in text
    code, text = _lab("up", str(SPEC), "-o", str(GOLDEN), "--fabric", "storage")
    assert code == 0 and "already up with these artifacts: unchanged" in text, text
    code, text = _lab("check", str(SPEC), "-o", str(GOLDEN), "--fabric", "storage", "--json")
    assert code == 0, text
    [report] = json.loads(text[text.index("["):])
    assert report["failures"] == []
    assert report["counts"] == {"switches": 10, "hosts": 9, "sessions": 768, "routes": 198, "addresses": 18}
    made = _namespaces() - before
    assert len(made) == 19
    pids = [int(p.read_text()) for p in (run.RUN_DIR).glob("*/fg-*/*.pid")]
    code, text = _lab("down", str(SPEC), "--fabric", "storage")
    assert code == 0 and "removed 19 namespaces" in text
    assert _namespaces() == before
    assert all(not Path(f"/proc/{pid}/exe").exists() or Path(f"/proc/{pid}/exe").resolve().name not in
               ("zebra", "bgpd", "lldpd") for pid in pids)
    code, text = _lab("check", str(SPEC), "-o", str(GOLDEN), "--fabric", "storage")
    assert code == 1 and "no lab runs (run `fabricgen lab up`)" in text


def test_lab_1su_storage_holds(tools: None) -> None:
    """A second shape: lab-1su's RoCE storage fabric, 2 leaves and 2 spines, one host per split cage, 40 links on
    20 cage-pair cables (80 sessions)."""
    spec, out = INVENTORIES / "lab-1su.yaml", REPO / "tests/golden/lab-1su"
    try:
        code, text = _lab("up", str(spec), "-o", str(out), "--fabric", "storage")
        assert code == 0 and "4 switches, 2 hosts, 42 cables" in text, text
        code, text = _lab("check", str(spec), "-o", str(out), "--fabric", "storage")
        assert code == 0 and "80 sessions, 18 routes, 2 hosts (2 addresses): all hold" in " ".join(text.split()), text
    finally:
        _lab("down", str(spec), "--fabric", "storage")


def _broken_out(tmp_path: Path) -> Path:
    out = tmp_path / "out"
    shutil.copytree(GOLDEN / "switches", out / "switches")
    shutil.copytree(GOLDEN / "hosts", out / "hosts")
    db_path = out / "switches/storage-spine01/config_db.json"
    db = json.loads(db_path.read_text())
    for entry in db["BGP_NEIGHBOR"].values():
        if entry["name"] == "storage-leaf001":
            entry["asn"] = "65101"
    db_path.write_text(json.dumps(db))
    netplan = out / "hosts/gpu059/netplan-roce.yaml"
    text = netplan.read_text()
    assert text.count("mtu: 9000") == 2
    netplan.write_text(text.replace("mtu: 9000", "mtu: 9216", 1))  # enp170s0f0np0, to storage-leaf003
    return out


def test_the_lab_names_each_break(tools: None, tmp_path: Path) -> None:
    compiled = compile_spec(SPEC)
    [fl] = run.labs(compiled.topology, _broken_out(tmp_path), "storage", 1)
    leaf006 = fl.switches["storage-leaf006"]
    hosts_subnet = next(n for n in leaf006.networks if ipaddress.ip_address("10.20.2.130") in n)
    # SONiC announces every VLAN_INTERFACE prefix: a missing network statement is made in the read-back's routing
    # (the host subnet's only: its pod range, for gpu123-127's VFs, stays announced)
    unannounced = dataclasses.replace(leaf006, networks=tuple(n for n in leaf006.networks if n != hosts_subnet))
    fl = dataclasses.replace(fl, switches=dict(fl.switches, **{"storage-leaf006": unannounced}))
    try:
        run.up(fl, timeout_s=20)
        report = run.run_check(fl, settle_s=20)
    finally:
        netns.down(fl.state_dir)
    failures = list(report.failures)
    asn = [f for f in failures if "BGP session to" in f]
    assert len(asn) == 32 and all("storage-leaf001" in f and "storage-spine01" in f for f in asn)
    assert all(" on Ethernet" in f and "(cable storage-" in f for f in asn)
    missing = [f for f in failures if f"{hosts_subnet} (from storage-leaf006) is missing" in f]
    assert len(missing) == 9  # every other switch
    assert f"fabric storage: storage-leaf006: announces no network {hosts_subnet}, which the plan gives it" in failures
    mtu = [f for f in failures if "gpu059 enp170s0f0np0 10.20.1.2 ->" in f]
    assert mtu and all("9216-byte ping with DF set (first cable storage-" in f for f in mtu)
    unreachable = [f for f in failures if f.split(" -> ")[-1].split(":")[0].endswith(("enp41s0f0np0 10.20.2.130",))]
    assert unreachable  # gpu123's port on leaf006, from the other leaves
    # spine01 and leaf001 no longer exchange routes: leaf001's hosts lose spine01's loopback (spines share one AS,
    # so no other spine passes it on), and nothing else
    spine01_loopback = fl.switches["storage-spine01"].loopback.ip
    # (gpu001 and the six servers, whose first ports count down from leaf001's last)
    cut = [f for f in failures
           if re.search(rf" 10\.20\.0\.(2|6[0-5]) -> storage-spine01's loopback {spine01_loopback}:", f)]
    assert len(cut) == 7, cut
    explained = set(asn) | set(missing) | set(mtu) | set(cut) | {f for f in failures if "announces no network" in f}
    rest = [f for f in failures if f not in explained]
    # everything else is a ping to or from an address of leaf006's unannounced subnet
    assert all(any(f"10.20.2.{n} " in f or f.endswith(f"10.20.2.{n}") for n in range(129, 255)) or
               "10.20.2.1" in f for f in rest), rest
