"""``fabricgen lab up|check|down`` on NVUE and EOS fabrics: lab-1su's RoCE storage fabric on Cumulus Linux (SN4700,
NVUE startup.yaml) and on Arista EOS (7060DX5-64S, the EOS CLI; a second network rack for the 2U switches), each
applied to a fresh OUT and run from its rendered switch configurations' read-back. Every session, route, ECMP
width and host ping holds; then one edit of a rendered file breaks each, and ``lab check`` names it: an NVUE spine
expecting a wrong AS of a leaf (its sessions), an EOS leaf without the network statement of its host subnet (the
announcement and the prefix missing on the other switches). Before the break, lldpd's tables (``lab lldp``) verify
against the plan with nothing but the cables of the hosts the lab leaves out missing: NVUE's ports go out as
``swp<n>``, EOS's as ``Ethernet<n>/<m>`` (their Port IDs), the hosts' by interface name. ``down`` leaves no
namespace."""
from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from ipaddress import ip_interface
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fabricgen.cli import app
from fabricgen.features.lab import run
from fabricgen.model.topology import NODE_LEAF
from fabricgen.pipeline import compile_spec
from tests.conftest import INVENTORIES, require_tool
from tests.external.lab.test_lab_switches import _require_root

SONIC_STORAGE = "    switch: SN4700\n    nos: sonic\n"
CASES = {
    "nvue": ((SONIC_STORAGE, "    switch: SN4700\n    nos: nvue\n"),),
    # the Arista switches are 2U: the one network rack holds the storage switches but not the OOB spines as well
    "eos": ((SONIC_STORAGE, "    switch: 7060DX5-64S\n    nos: eos\n"),
            ("    - {name: M, racks: 1, kind: network}\n", "    - {name: M, racks: 2, kind: network}\n")),
}


def _cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    assert "Traceback" not in result.output
    return result.exit_code, " ".join(result.output.split())


def _namespaces() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


@pytest.fixture
def applied(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """(spec, OUT) of one case, applied; the lab taken down whatever happens."""
    require_tool("vtysh")
    require_tool("ping")
    require_tool("lldpctl")
    _require_root()
    text = (INVENTORIES / "lab-1su.yaml").read_text()
    for old, new in CASES[request.param]:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    spec, out = tmp_path / f"lab-1su-{request.param}.yaml", tmp_path / "out"
    spec.write_text(text)
    code, output = _cli("apply", str(spec), "-o", str(out), "--yes")
    assert code == 0, output
    before = _namespaces()
    try:
        yield spec, out
    finally:
        _cli("lab", "down", str(spec), "--fabric", "storage")
        assert _namespaces() <= before


def _up_and_check(spec: Path, out: Path, wait: str = "") -> tuple[int, str]:
    """Up and check; ``wait``: how long each waits for sessions (a broken lab's never all come up)."""
    waiting = ("--wait", wait) if wait else ()
    code, text = _cli("lab", "up", str(spec), "-o", str(out), "--fabric", "storage", *waiting)
    assert code == 0, text
    return _cli("lab", "check", str(spec), "-o", str(out), "--fabric", "storage", *waiting)


def _lldp_verifies(spec: Path, out: Path, tables: Path) -> None:
    """verify --lldp on the running lab's lldpd tables: only the cables of hosts not in the lab are missing."""
    code, text = _cli("lab", "lldp", str(spec), "-o", str(out), "--fabric", "storage", "--to", str(tables))
    assert code == 0, text
    topology = compile_spec(spec).topology
    [fl] = run.labs(topology, out, "storage", 1)
    [ft] = [ft for ft in topology.fabrics if ft.fabric.name == "storage"]
    left_out = {link.a.device for link in ft.links if link.tier == NODE_LEAF} - set(fl.lab.host_namespaces)
    result = CliRunner().invoke(app, ["verify", str(spec), "--lldp", str(tables), "-o", str(out), "--fabric",
                                      "storage", "--json"])
    findings = json.loads(result.output[result.output.index("{"):])["findings"]
    assert findings and all(f["kind"] == "missing" and f["planned"].split(" <-> ")[1].split(":")[0] in left_out
                            for f in findings), findings
    assert len(findings) == sum(link.tier == NODE_LEAF and link.a.device in left_out for link in ft.links)


@pytest.mark.parametrize("applied", ["nvue"], indirect=True)
def test_nvue_fabric_holds_and_a_wrong_peer_as_is_named(applied: tuple[Path, Path], tmp_path: Path) -> None:
    spec, out = applied
    code, text = _up_and_check(spec, out)
    assert code == 0 and "4 switches, 80 sessions, 18 routes, 2 hosts (2 addresses): all hold" in text, text
    _lldp_verifies(spec, out, tmp_path / "lldp")
    startup = out / "switches/storage-spine01/startup.yaml"
    edited, count = re.subn(r"(remote-as: )65100\b", r"\g<1>65101", startup.read_text())
    assert count == 10  # spine01's sessions to storage-leaf001 (AS 65100)
    startup.write_text(edited)
    code, text = _up_and_check(spec, out, wait="20")
    assert code == 1, text
    named = re.findall(r"storage-spine01: BGP session to (\S+) \(\S+, AS 65101\) on (swp\S+) \(cable ", text)
    assert len(named) == len({port for _, port in named}) == 10  # each session once, by its port
    assert "storage-leaf001: BGP session to" in text  # and leaf001's ends of them


@pytest.mark.parametrize("applied", ["eos"], indirect=True)
def test_eos_fabric_holds_and_a_missing_network_is_named(applied: tuple[Path, Path], tmp_path: Path) -> None:
    spec, out = applied
    code, text = _up_and_check(spec, out)
    assert code == 0 and "5 switches, 168 sessions, 28 routes, 2 hosts (2 addresses): all hold" in text, text
    _lldp_verifies(spec, out, tmp_path / "lldp")
    cfg = out / "switches/storage-leaf001/storage-leaf001.cfg"
    cli = cfg.read_text()
    [subnet] = re.findall(r"^interface Vlan100\n(?:   .*\n)*?   ip address (\S+)\n", cli, re.M)
    network = str(ip_interface(subnet).network)
    assert cli.count(f"      network {network}\n") == 1
    cfg.write_text(cli.replace(f"      network {network}\n", ""))
    code, text = _up_and_check(spec, out)
    assert code == 1, text
    assert f"storage-leaf001: announces no network {network}, which the plan gives it" in text
    assert text.count(f"{network} (from storage-leaf001) is missing") == 4  # on every other switch
