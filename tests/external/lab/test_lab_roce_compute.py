"""A RoCE compute fabric in the lab (tests/data/lab/roce-compute.yaml: 2 scalable units of one DGX H100 each, 8 x
400G rails on 16 SONiC SN5600 rail leaves, 2 SN5600 spines, eBGP), applied to a fresh OUT and brought up once:
``lab check`` holds (every session, route and ECMP width, every rail address of each DGX reaching every rail
address of the other at 9000 bytes with DF set); lldpd's own tables (``lab lldp``) verify clean against the plan;
then two planned cables are re-plugged crosswise (two leaves' uplinks to spine001 swapped at the spine) and
``verify --lldp`` names exactly those two cables as miswired, by label and both planned ends, and nothing else.
``down`` leaves no namespace and no lldpd, bgpd or zebra."""
from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fabricgen.cli import app
from fabricgen.features.lab import netns, run
from fabricgen.features.lab.plan import Veth
from fabricgen.pipeline import compile_spec
from tests.conftest import REPO, require_tool
from tests.external.lab.test_lab_switches import _require_root

SPEC = REPO / "tests/data/lab/roce-compute.yaml"


def _cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    assert "Traceback" not in result.output
    return result.exit_code, result.output


def _namespaces() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, run.FabricLab]]:
    """OUT applied from the spec and its lab up, once for every test here; down whatever happens."""
    require_tool("vtysh")
    require_tool("ping")
    require_tool("lldpctl")
    _require_root()
    out = tmp_path_factory.mktemp("roce-compute") / "out"
    code, text = _cli("apply", str(SPEC), "-o", str(out), "--yes")
    assert code == 0, text
    before = _namespaces()
    try:
        code, text = _cli("lab", "up", str(SPEC), "-o", str(out))
        assert code == 0 and "fabric compute: up in " in text and "18 switches, 2 hosts, 48 cables" in text, text
        [fl] = run.labs(compile_spec(SPEC).topology, out, "compute", 1)
        yield out, fl
    finally:
        pids = [int(p.read_text().split()[0]) for p in run.RUN_DIR.glob("*/fg-*/*.pid")]
        code, text = _cli("lab", "down", str(SPEC))
        assert code == 0 and "removed 20 namespaces" in text, text
        assert _namespaces() <= before
        assert not [pid for pid in pids if Path(f"/proc/{pid}/exe").exists()
                    and Path(f"/proc/{pid}/exe").resolve().name in ("zebra", "bgpd", "lldpd")]


def test_check_holds(lab: tuple[Path, run.FabricLab]) -> None:
    out, _ = lab
    code, text = _cli("lab", "check", str(SPEC), "-o", str(out), "--json")
    assert code == 0, text
    [report] = json.loads(text[text.index("["):])
    assert report["failures"] == []
    # 32 leaf-spine cables, a session on each end; each DGX's 8 rail addresses
    assert report["counts"] == {"switches": 18, "hosts": 2, "sessions": 64, "routes": 578, "addresses": 16}


def _verify(out: Path, tables: Path) -> tuple[int, dict[str, list[dict[str, str]]]]:
    code, text = _cli("verify", str(SPEC), "--lldp", str(tables), "-o", str(out), "--json")
    return code, json.loads(text[text.index("{"):])


def test_lldpd_tables_verify_clean(lab: tuple[Path, run.FabricLab], tmp_path: Path) -> None:
    out, _ = lab
    code, text = _cli("lab", "lldp", str(SPEC), "-o", str(out), "--to", str(tmp_path))
    assert code == 0 and "20 LLDP tables, 96 neighbours" in " ".join(text.split()), text
    code, report = _verify(out, tmp_path)
    assert code == 0 and report["findings"] == [], report
    assert len(report["devices"]) == 20


def _replug(crossed: list[tuple[tuple[str, str], tuple[str, str]]]) -> None:
    for (a, a_if), (z, z_if) in crossed:
        subprocess.run(["ip", "-n", a, "link", "add", a_if, "type", "veth", "peer", "name", z_if, "netns", z],
                       check=True)
        subprocess.run(["ip", "-n", a, "link", "set", a_if, "up"], check=True)
        subprocess.run(["ip", "-n", z, "link", "set", z_if, "up"], check=True)


def _unplug(fl: run.FabricLab, cables: list[Veth]) -> None:
    """Pull both cables and wait until no lldpd lists a neighbour on their ports (as a pulled cable does)."""
    for v in cables:
        subprocess.run(["ip", "-n", v.a_namespace, "link", "del", v.a_interface], check=True)
    pulled = {(v.a_namespace, v.a_interface) for v in cables} | {(v.z_namespace, v.z_interface) for v in cables}
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        listed = {(ns, next(iter(item))) for ns in {ns for ns, _ in pulled}
                  for item in _interfaces(netns.lldp_neighbors(fl.state_dir, ns))}
        if not listed & pulled:
            return
        time.sleep(0.5)
    raise AssertionError("lldpd still lists the neighbours of the pulled cables after 20 s")


def _interfaces(text: str) -> list[dict[str, object]]:
    found = json.loads(text)["lldp"].get("interface", [])
    return [found] if isinstance(found, dict) else list(found)


def test_two_swapped_cables_are_named_exactly(lab: tuple[Path, run.FabricLab], tmp_path: Path) -> None:
    """Last here: it rewires the lab. Two leaves' uplinks to spine001 trade spine ports."""
    out, fl = lab
    spine = fl.lab.namespaces["compute-spine001"]
    first, second = [v for v in fl.lab.veths if v.z_namespace == spine][:2]
    assert first.a_namespace != second.a_namespace  # two leaves
    _unplug(fl, [first, second])
    _replug([((first.a_namespace, first.a_interface), (spine, second.z_interface)),
             ((second.a_namespace, second.a_interface), (spine, first.z_interface))])
    code, text = _cli("lab", "lldp", str(SPEC), "-o", str(out), "--to", str(tmp_path))
    assert code == 0 and "20 LLDP tables, 96 neighbours" in " ".join(text.split()), text
    code, report = _verify(out, tmp_path)
    assert code == 1
    leaves = {namespace: name for name, namespace in fl.lab.namespaces.items()}
    ends = {}
    for v in (first, second):
        leaf_end = f"{leaves[v.a_namespace]}:{v.a_interface}"
        spine_end = f"compute-spine001:{v.z_interface}"
        ends[v.label] = {f"{leaf_end} <-> {spine_end}", f"{spine_end} <-> {leaf_end}"}
    findings = report["findings"]
    assert sorted((f["kind"], f["cable"]) for f in findings) == sorted(
        ("miswired", label) for label in (first.label, second.label) for _ in range(2)), findings
    for f in findings:  # both planned ends, once from each side
        assert f["planned"] in ends[f["cable"]]
    assert {f["planned"] for f in findings} == ends[first.label] | ends[second.label]
    # what each end sees instead: the other cable's far end
    first_leaf, second_leaf = leaves[first.a_namespace], leaves[second.a_namespace]
    assert {f["found"] for f in findings} == {
        f"{first_leaf}:{first.a_interface} sees compute-spine001:{second.z_interface}",
        f"{second_leaf}:{second.a_interface} sees compute-spine001:{first.z_interface}",
        f"compute-spine001:{first.z_interface} sees {second_leaf}:{second.a_interface}",
        f"compute-spine001:{second.z_interface} sees {first_leaf}:{first.a_interface}"}
