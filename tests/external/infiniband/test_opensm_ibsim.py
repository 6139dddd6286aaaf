"""Proof on a real subnet manager: fabricgen's OpenSM files and expected topology, booted in ibsim.

For the InfiniBand fabric of lab-1su (64 HCAs, 8 leaves, 2 spines) and of h100-4su (1020 HCAs: 127 DGX x 8
rails + 4 UFM ports, 32 leaves, 16 spines), from `fabricgen apply` output only:

1. the keys: opensm-keys.sh (as ExecStartPre on the SM host) writes the runtime config from the key sources
   the spec names; the key values appear there and in no generated artifact, even with them in apply's env;
2. the generated topology.net boots in ibsim, `opensm -o` with the runtime config brings the SUBNET UP routed by
   ftree (roots from root-guids.conf, compute nodes from cn-guids.conf), without falling back to minhop;
3. partitions.conf and qos-policy.conf load, and the partitions reach the HCAs' P_Key tables;
4. the real `ibnetdiscover` / `ibnetdiscover -p` of that fabric passes `fabricgen verify`, and after two
   HCA-leaf cables on different leaves are swapped in a copy of the net file, verify reports exactly those two
   cables (by cable id) as miswired while OpenSM still routes the miswired tree without a word.

Deviations from a real SM host, all in the harness (tests/external/ibsim.py) and nowhere in the generated files:
- the generated config targets config_dir /etc/opensm on the SM host (and logs to /var/log): the files are copied
  to a temporary dir and those absolute paths rewritten to it (opensm.conf and opensm-keys.sh);
- ibsim 0.10 knows link speeds up to HDR: NDR tokens of the net file become HDR (an unknown token would bring the
  link up at SDR), so verify runs with --speed-as HDR;
- OpenSM attaches to the first Ca record of the net file (SIM_HOST), an HCA port as on a real SM host.

Every subprocess is bounded by what is left of the test's budget (TEST_BUDGET_S) or the bring-up's (SETUP_BUDGET_S);
ibsim is stopped by PID in a finally. Each simulator has its own IBSIM_SOCKNAME.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import os
import re
import secrets
import stat
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import INVENTORIES, REPO, require_tool
from tests.external.ibsim import (
    Deadline,
    IbSim,
    NetFile,
    OpenSmRun,
    StagedConfig,
    booted,
    ca_ports,
    find_libumad2sim,
    pkey_table,
    run_opensm,
    speeds_for_ibsim,
    stage_opensm_config,
    write_runtime_config,
)

pytestmark = pytest.mark.external

TEST_BUDGET_S = 60.0
SETUP_BUDGET_S = 90.0
SIM_SPEED = "HDR"

# OpenSM 3.3.23 logs the `no_fallback` keyword of routing_engine at error level although it honours it:
# setup_routing_engine() sets no_fallback_routing_engine and returns NULL, and its caller logs every NULL as
# "Failed to setup routing engine". Not an error in the generated config.
BENIGN_ERRORS = ("Failed to setup routing engine 'no_fallback'",)



@dataclass(frozen=True)
class Case:
    name: str
    fabric: str
    # HCA node description -> {P_Key without the membership bit: expected table entry, None = must be absent}
    pkeys: dict[str, dict[int, int | None]]
    swap: tuple[str, str]  # two HCAs on different leaves whose cables are swapped


CASES = (
    Case("lab-1su", "compute",
         pkeys={
             # rail 0: Default (limited), training (full), rails01 (full, rails 0-1)
             "hgx02 mlx5_0": {0x7FFF: 0x7FFF, 0x0001: 0x8001, 0x0002: 0x8002},
             # rail 2: Default, training, NOT rails01
             "hgx02 mlx5_2": {0x7FFF: 0x7FFF, 0x0001: 0x8001, 0x0002: None},
         },
         swap=("hgx02 mlx5_0", "hgx05 mlx5_3")),
    Case("h100-4su", "compute",
         pkeys={
             "gpu002 mlx5_0": {0x7FFF: 0x7FFF, 0x0001: 0x8001},  # tenant-a: groups gpu{n:03d}
             "ufm01 mlx5_0": {0x7FFF: 0x7FFF, 0x0001: None},  # the UFM appliance is not in tenant-a
         },
         swap=("gpu002 mlx5_0", "gpu040 mlx5_5")),
)


# --- helpers ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tools() -> dict[str, str]:
    found = {name: require_tool(name) for name in ("opensm", "ibsim", "ibnetdiscover", "smpquery")}
    lib = find_libumad2sim()
    if lib is None:  # a library, not on PATH: the same skip/fail rule as require_tool
        message = "libumad2sim.so (package libumad2sim0, pulled in by ibsim-utils)"
        if os.environ.get("FABRICGEN_REQUIRE_EXTERNAL") == "1":
            pytest.fail(f"{message} is required in CI (FABRICGEN_REQUIRE_EXTERNAL=1) but is not installed")
        pytest.skip(f"{message} not installed")
    found["libumad2sim"] = str(lib)
    return found


@pytest.fixture
def budget(request: pytest.FixtureRequest) -> Deadline:
    return Deadline(TEST_BUDGET_S, request.node.name)


def fabricgen(*args: str, timeout: float, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fabricgen", *args], capture_output=True, text=True,
                          timeout=timeout, check=False, env={**os.environ, **(env or {})}, cwd=REPO)


def apply(spec: Path, out: Path, *, timeout: float, env: dict[str, str] | None = None) -> None:
    cp = fabricgen("apply", str(spec), "-o", str(out), "--yes", timeout=timeout, env=env)
    assert cp.returncode == 0, cp.stdout + cp.stderr


def new_key() -> str:
    return "0x" + secrets.token_hex(8)


def files_containing(root: Path, needles: list[str]) -> list[str]:
    """Files under root (and members of its zip-based .xlsx files) containing any needle, case-insensitively."""
    wanted = [n.lower().encode() for n in needles]
    hits = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        blobs = [(str(path), path.read_bytes())]
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as z:
                blobs += [(f"{path}!{name}", z.read(name)) for name in z.namelist()]
        hits += [name for name, data in blobs if any(w in data.lower() for w in wanted)]
    return hits


def key_sources(spec: Path, fabric: str) -> dict[str, dict[str, str]]:
    doc: dict[str, Any] = yaml.safe_load(spec.read_text())
    keys: dict[str, dict[str, str]] = doc["fabrics"][fabric].get("subnet_manager", {}).get("keys", {})
    return keys


def place_keys(sources: dict[str, dict[str, str]], values: dict[str, str],
               staged: StagedConfig) -> list[Path]:
    """Write the file-sourced keys where opensm-keys.sh reads them: under the staged config dir."""
    files = []
    prefix = staged.original_config_dir.rstrip("/") + "/"
    for name, source in sources.items():
        if "file" in source:
            path = source["file"]
            assert path.startswith(prefix), f"{name} file {path} is outside config_dir {prefix}: cannot stage it"
            target = staged.config_dir / path[len(prefix):]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(values[name] + "\n")
            target.chmod(0o600)
            files.append(target)
    return files


@dataclass
class Booted:
    case: Case
    spec: Path
    out: Path
    fabric_dir: Path
    staged: StagedConfig
    keys: dict[str, str]  # key name -> value
    key_env: dict[str, str]  # environment of opensm-keys.sh (and of apply)
    key_files: list[Path]
    net: NetFile
    sim: IbSim
    opensm: OpenSmRun


@pytest.fixture(scope="module", params=CASES, ids=[c.name for c in CASES])
def fabric(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
           tools: dict[str, str]) -> Iterator[Booted]:
    """apply -> keys -> runtime config -> ibsim on topology.net -> opensm -o; ibsim stays up for the tests."""
    case: Case = request.param
    deadline = Deadline(SETUP_BUDGET_S, f"bring-up of {case.name}")
    work = tmp_path_factory.mktemp(case.name)
    spec = INVENTORIES / f"{case.name}.yaml"
    sources = key_sources(spec, case.fabric)
    keys = {name: new_key() for name in sources}
    key_env = {s["env"]: keys[name] for name, s in sources.items() if "env" in s}
    out = work / "out"
    # The env keys are in apply's environment too: the generator must not pick them up.
    apply(spec, out, timeout=deadline.left(60), env=key_env)
    fabric_dir = out / "infiniband" / case.fabric
    staged = stage_opensm_config(fabric_dir, work)
    key_files = place_keys(sources, keys, staged)
    write_runtime_config(staged, key_env, timeout=deadline.left(20))
    net_text = speeds_for_ibsim((fabric_dir / "topology.net").read_text(), SIM_SPEED)
    net_path = work / "topology-hdr.net"
    net_path.write_text(net_text)
    net = NetFile.parse(net_text)
    sim = IbSim(net_path, work / "sim", host=net.first_ca().id)
    try:
        sim.start(timeout=deadline.left(30))
        run = run_opensm(sim, staged.conf_out, timeout=deadline.left())
        yield Booted(case, spec, out, fabric_dir, staged, keys, key_env, key_files, net, sim, run)
    finally:
        sim.stop()


def tail(run: OpenSmRun, n: int = 40) -> str:
    return "\n".join(line for line in run.log.splitlines()[-n:] if "osm_vendor_bind" not in line)


def guid_lines(path: Path) -> list[str]:
    return [line.strip() for line in path.read_text().splitlines() if line.strip().startswith("0x")]


# --- 1. keys ---------------------------------------------------------------------------------------------


def test_keys_reach_only_the_runtime_config(fabric: Booted, budget: Deadline) -> None:
    staged, keys = fabric.staged, fabric.keys
    assert keys, "the spec names keys"
    runtime = staged.conf_out.read_text()
    for name, value in keys.items():
        assert re.search(rf"^{name} {value}$", runtime, re.M), f"{name} not substituted into the runtime config"
    assert not files_containing(fabric.out, [v[2:] for v in keys.values()]), "a key leaked into the artifacts"
    config_files = [p for p in staged.config_dir.iterdir() if p not in fabric.key_files]
    assert not [p for p in config_files if any(v[2:] in p.read_text().lower() for v in keys.values())], \
        "a key leaked into the installed config files"
    for value in keys.values():
        assert value[2:].lower() not in staged.keys_output.lower(), "opensm-keys.sh printed a key"
    assert stat.S_IMODE(staged.conf_out.stat().st_mode) == 0o600, "runtime config must be readable by root only"
    # placeholders stay in the installed config
    installed_conf = staged.conf_in.read_text()
    for name in keys:
        assert re.search(rf"^{name} 0x0+[01]$", installed_conf, re.M), f"{name} placeholder missing in opensm.conf"
    # idempotent: same keys, same output, file untouched
    before = (staged.conf_out.read_bytes(), staged.conf_out.stat().st_mtime_ns)
    write_runtime_config(staged, fabric.key_env, timeout=budget.left(20))
    assert (staged.conf_out.read_bytes(), staged.conf_out.stat().st_mtime_ns) == before


# --- 2. OpenSM on the generated fabric -------------------------------------------------------------------


def test_ibsim_accepts_the_generated_net_file(fabric: Booted) -> None:
    assert fabric.sim.running
    assert fabric.sim.warnings() == [], "ibsim complained about topology.net"
    staged = fabric.staged.conf_out.read_text()
    assert "/etc/opensm" not in staged and "/var/log" not in staged, "the test must not touch the host's files"


def test_opensm_routes_the_fabric_with_ftree(fabric: Booted) -> None:
    run, net = fabric.opensm, fabric.net
    assert run.returncode == 0, run.stdout
    assert run.subnet_up, tail(run)
    assert run.lines("ftree tables configured on all switches"), tail(run)
    assert run.lines("FatTree rank (roots to leaf switches): 2"), tail(run)
    assert not run.lines("ERR AB0"), "FatTree not identified:\n" + "\n".join(run.lines("ERR AB0"))
    assert not [line for line in run.log.splitlines() if "minhop" in line.lower()], "fell back to minhop"
    roots = guid_lines(fabric.fabric_dir / "root-guids.conf")
    cns = guid_lines(fabric.fabric_dir / "cn-guids.conf")
    cas, switches = len(net.cas), len(net.switches)
    assert run.lines(f"Fabric has {cas} CAs, {cas} CA ports ({len(cns)} of them CNs), {switches} switches"), tail(run)
    assert run.lines(f"Fabric has {len(roots)} switches at rank 0 (roots)"), tail(run)
    leaves = switches - len(roots)
    assert run.lines(f"Fabric has {leaves} switches at rank 1 ({leaves} of them leafs)"), tail(run)


def test_opensm_accepts_partitions_and_qos_policy(fabric: Booted) -> None:
    run = fabric.opensm
    assert not run.lines("PARSE ERROR"), "\n".join(run.lines("PARSE ERROR"))
    assert not run.lines("Partition configuration in error")
    assert not run.lines("ERR AC"), "\n".join(run.lines("ERR AC"))
    errors = [line for line in run.errors() if not any(b in line for b in BENIGN_ERRORS)]
    assert errors == []


def test_partitions_reach_the_hcas(fabric: Booted, tools: dict[str, str], budget: Deadline) -> None:
    sim = fabric.sim
    ports = ca_ports(sim.run([tools["ibnetdiscover"], "-p"], timeout=budget.left(30)).stdout)
    for description, expected in fabric.case.pkeys.items():
        assert description in ports, f"{description} not discovered"
        lid, _guid = ports[description]
        table = pkey_table(sim.run([tools["smpquery"], "pkeys", str(lid)], timeout=budget.left(15)).stdout)
        for base, entry in expected.items():
            found = [k for k in table if k & 0x7FFF == base]
            if entry is None:
                assert not found, f"{description} (lid {lid}) has pkey 0x{base:04x}: {[hex(k) for k in table]}"
            else:
                assert found == [entry], (f"{description} (lid {lid}): want 0x{entry:04x}, "
                                          f"table {[hex(k) for k in table]}")


# --- 3. discovery against the plan -----------------------------------------------------------------------


def verify(spec: Path, found: Path, fabric_name: str, *, timeout: float,
           json_out: bool = False) -> subprocess.CompletedProcess[str]:
    args = ["verify", str(spec), "--ibnetdiscover", str(found), "--fabric", fabric_name, "--speed-as", SIM_SPEED]
    return fabricgen(*args, *(["--json"] if json_out else []), timeout=timeout)


def test_discovered_fabric_matches_the_plan(fabric: Booted, tools: dict[str, str], budget: Deadline,
                                            tmp_path: Path) -> None:
    sim, case = fabric.sim, fabric.case
    for form, argv in (("topology", [tools["ibnetdiscover"]]), ("ports", [tools["ibnetdiscover"], "-p"])):
        found = tmp_path / f"ibnetdiscover-{form}.txt"
        found.write_text(sim.run(argv, timeout=budget.left(30)).stdout)
        text = verify(fabric.spec, found, case.fabric, timeout=budget.left(60))
        assert text.returncode == 0, text.stdout + text.stderr
        assert "the fabric matches the plan" in text.stdout, text.stdout
        report = verify(fabric.spec, found, case.fabric, timeout=budget.left(60), json_out=True)
        assert report.returncode == 0, report.stdout + report.stderr
        doc = json.loads(report.stdout)
        assert doc["clean"] is True and doc["findings"] == [], doc["findings"][:5]
        summary = doc["summary"]
        assert summary["planned_links"] == summary["found_links"] == summary["matched_links"] > 0, summary
        assert summary["planned_devices"] == summary["found_devices"] == len(fabric.net.nodes), summary


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_swapped_cables_are_reported_as_miswired(case: Case, tools: dict[str, str], budget: Deadline,
                                                  tmp_path: Path) -> None:
    spec = INVENTORIES / f"{case.name}.yaml"
    out = tmp_path / "out"
    apply(spec, out, timeout=budget.left(30))
    fabric_dir = out / "infiniband" / case.fabric
    net = NetFile.parse(speeds_for_ibsim((fabric_dir / "topology.net").read_text(), SIM_SPEED))
    with (out / "cabling" / "cables.csv").open(newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["fabric"] == case.fabric and r["tier"] == "node-leaf"]
    picked = []
    for description in case.swap:
        hca = net.by_description(description)
        leaf_id, leaf_port, _ = hca.ports[1]
        host, dev = description.split()
        [row] = [r for r in rows if r["a_device"] == host and r["a_rdma_dev"] == dev]
        # the cable plan and the net file agree on where this cable lands
        assert (row["z_device"], int(row["z_port_number"])) == (net.nodes[leaf_id].description, leaf_port)
        picked.append((hca, leaf_id, leaf_port, row["cable_id"]))
    (a, a_leaf, a_port, a_cable), (b, b_leaf, b_port, b_cable) = picked
    assert a_leaf != b_leaf, "pick HCAs on different leaves"

    net.swap_far_ends((a.id, 1), (b.id, 1))
    assert net.nodes[a.id].ports[1][:2] == (b_leaf, b_port) and net.nodes[b.id].ports[1][:2] == (a_leaf, a_port)
    assert net.nodes[a_leaf].ports[a_port][:2] == (b.id, 1) and net.nodes[b_leaf].ports[b_port][:2] == (a.id, 1)
    swapped = tmp_path / "topology-swapped.net"
    swapped.write_text(net.text())

    staged = stage_opensm_config(fabric_dir, tmp_path)
    with booted(swapped, tmp_path / "sim", host=net.first_ca().id, timeout=budget.left(30)) as sim:
        assert sim.warnings() == [], "ibsim rejected the rewired net file"
        # OpenSM routes the miswired tree without complaint (the installed config: key placeholders are valid
        # keys): cabling has to be verified separately.
        run = run_opensm(sim, staged.conf_in, timeout=budget.left(40))
        assert run.subnet_up and run.lines("ftree tables configured on all switches"), tail(run)
        found = tmp_path / "ibnetdiscover.txt"
        found.write_text(sim.run([tools["ibnetdiscover"]], timeout=budget.left(30)).stdout)

    report = verify(spec, found, case.fabric, timeout=budget.left(60), json_out=True)
    assert report.returncode != 0, "verify passed a miswired fabric"
    doc = json.loads(report.stdout)
    assert doc["clean"] is False
    kinds = {(f["kind"], f["cable"]) for f in doc["findings"]}
    assert kinds == {("miswired", a_cable), ("miswired", b_cable)}, json.dumps(doc["findings"], indent=1)[:3000]
    assert len(doc["findings"]) == 2, [f["message"] for f in doc["findings"]]
    text = verify(spec, found, case.fabric, timeout=budget.left(60))
    assert text.returncode != 0
    assert a_cable in text.stdout and b_cable in text.stdout, text.stdout


# --- 4. the bring-up benchmark script --------------------------------------------------------------------


def test_bringup_benchmark_script_runs(tools: dict[str, str], budget: Deadline, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    path = REPO / "bench" / "opensm_bringup.py"
    spec = importlib.util.spec_from_file_location("opensm_bringup", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses resolve annotations through sys.modules
    try:
        spec.loader.exec_module(module)
        rc = module.main(["--nodes", "16", "--workdir", str(tmp_path), "--timeout", str(budget.left())])
    finally:
        del sys.modules[spec.name]
    line = capsys.readouterr().out.splitlines()[0]
    print(line)
    assert rc == 0, line
    assert line.startswith("opensm-bringup: 16 nodes x 8 rails = 128 HCAs"), line
    assert re.search(r"SUBNET UP [\d.]+ s after OpenSM started", line) and "ftree yes" in line, line
