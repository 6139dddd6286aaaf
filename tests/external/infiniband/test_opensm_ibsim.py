"""Proof on a real subnet manager: fabricgen's SM files and expected topology, booted in ibsim, read back with the
real diagnostics.

Three fabrics, from `fabricgen apply` output only: lab-1su (OpenSM, 64 HCAs, an SM pair on two lab nodes),
h100-4su (UFM, 1020 HCAs: 127 DGX x 8 rails + the UFM HA pair's 4 ports) and tests/data/infiniband/multi-tenant.yaml
(OpenSM, two tenants, Default limited, each tenant's IPoIB on a partition of its own over child interfaces, a shared
services partition where the tenants are limited members, an SM pair on two management nodes). The SMs run as
daemons started as the generated units start them (priority, port GUID), so the SA answers queries while the tests
run:

1. the keys: opensm-keys.sh (ExecStartPre on an SM host) or ufm-install.sh writes the config with the key values
   from the sources the spec names; they appear there and in no generated artifact, even with them in apply's env;
2. the generated topology.net boots in ibsim and the master brings the SUBNET UP routed by ftree (roots from
   root-guids.conf, compute nodes from cn-guids.conf, UFM/SM hosts from io-guids.conf), without falling back to
   minhop; the second SM of a pair stands by (sminfo);
3. partitions and QoS policy load without an error, and on every compute HCA the P_Key at the index NCCL uses
   (NCCL_IB_PKEY of its nccl.env, per `smpquery pkeys`) is a full member of the partition UCX_IB_PKEY names, shared
   by every compute HCA of its tenant and by no other tenant's HCA; Default stays limited where the spec says so;
   the switches' port 0 and the master SM's port keep 0x7fff at index 0 (the indx0 partitions list them in a second
   definition without indx0), unless the SM's host is itself a member; sharp_am's UCX port on each SM host
   (smx_ucx_interface) holds SHARP's partition at index 0, as the jobs' HCAs do; with SHARP the ports run 2 VLs
   whose VL arbitration tables (`smpquery vlarb`) carry the config's weights;
4. every IPoIB partition has its broadcast group (`saquery -g`: OpenSM creates it itself for a partition with the
   ipoib flag, before any IPoIB driver joins) with the MTU, rate and SL of partitions.conf; the hosts' IPoIB
   interfaces sit on that P_Key (the parent where it is at index 0, else a child created with it) with its MTU - 4;
5. the SL the SA gives a compute partition's path records (`saquery PR --pkey`) is NCCL_IB_SL and UCX_IB_SL of
   nccl.env, and an IPoIB partition's is its broadcast group's; no path joins two tenants on any P_Key of the
   fabric (the shared services partition included, where each tenant reaches the service nodes) or two limited
   members;
6. the real `ibnetdiscover` / `ibnetdiscover -p` of the fabric passes `fabricgen verify`, and after two HCA-leaf
   cables on different leaves are swapped in a copy of the net file, verify reports exactly those two cables (by
   cable id) as miswired while OpenSM still routes the miswired tree without a word.

Deviations from a real SM host, all in the harness (tests/external/ibsim.py) and nowhere in the generated files:
- the generated config targets config_dir /etc/opensm (or UFM's /opt/ufm) and logs to /var/log: the files are copied
  to a temporary dir and those absolute paths rewritten to it; the log is flushed line by line (force_log_flush) so
  the tests can read it while OpenSM runs;
- UFM: upstream OpenSM 3.3.23's default opensm.conf stands in for UFM's own (ufm-install.sh merges its settings into
  it; upstream ignores NVIDIA's virt_enabled), and a stand-in sync_partitions_conf.sh writes UFM's documented Default
  (every port a full member) followed by partitions.conf.user_ext; UFM's own SM cannot run here;
- ibsim 0.10 knows link speeds up to HDR: NDR tokens of the net file become HDR (an unknown token would bring the
  link up at SDR), so verify runs with --speed-as HDR;
- ibsim does not keep the M_Key fields of PortInfo (sim_mad.c ignores them on Set), so M_Key protection is shown
  only as OpenSM accepting the settings, not read back from the ports;
- no IPoIB driver runs on ibsim: the broadcast groups are OpenSM's own, joins cannot be simulated.

Every subprocess is bounded by what is left of the test's budget (TEST_BUDGET_S) or the bring-up's (SETUP_BUDGET_S);
ibsim and the SMs are stopped by PID in a finally. Each simulator has its own IBSIM_SOCKNAME.
"""

from __future__ import annotations

import configparser
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
from collections import defaultdict
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from fabricgen.features.infiniband import render as infiniband_render
from fabricgen.features.infiniband.readback import partitions_read
from fabricgen.model.cluster import Cluster
from fabricgen.model.infiniband import SubnetManager as SmModel
from fabricgen.pipeline import compile_spec
from tests.conftest import INVENTORIES, REPO, require_tool
from tests.external.ibsim import (
    Deadline,
    IbSim,
    NetFile,
    OpenSmRun,
    StagedConfig,
    SubnetManager,
    booted,
    ca_ports,
    find_libumad2sim,
    mc_groups,
    path_records,
    pkey_table,
    run_opensm,
    sm_state,
    speeds_for_ibsim,
    stage_opensm_config,
    stage_ufm_config,
    write_runtime_config,
)

pytestmark = pytest.mark.external

TEST_BUDGET_S = 90.0
SETUP_BUDGET_S = 150.0
SIM_SPEED = "HDR"
FULL = 0x8000
DEFAULT_PKEY = 0x7FFF
MTU_CODES = {256: 1, 512: 2, 1024: 3, 2048: 4, 4096: 5}
OPENSM_DEFAULTS = Path(infiniband_render.__file__).with_name("opensm-3.3.23.conf")

# OpenSM 3.3.23 logs the `no_fallback` keyword of routing_engine at error level although it honours it:
# setup_routing_engine() sets no_fallback_routing_engine and returns NULL, and its caller logs every NULL as
# "Failed to setup routing engine". Not an error in the generated config.
# With an SM pair, the standby's port announces its IsSM capability with trap 144, which OpenSM logs at error level
# as it logs every trap it receives (log_trap_info): the pair working, not an error.
BENIGN_ERRORS = ("Failed to setup routing engine 'no_fallback'", "Received Generic Notice type:4 num:144")


@dataclass(frozen=True)
class Case:
    name: str
    spec: Path
    fabric: str
    # HCA node description -> {P_Key without the membership bit: expected table entry, None = must be absent}
    pkeys: dict[str, dict[int, int | None]]
    swap: tuple[str, str]  # two HCAs on different leaves whose cables are swapped


CASES = (
    Case("lab-1su", INVENTORIES / "lab-1su.yaml", "compute",
         pkeys={
             # rail 0: training at index 0 (indx0), Default limited, rails01 (full, rails 0-1)
             "hgx02 mlx5_0": {0x0001: 0x8001, 0x7FFF: 0x7FFF, 0x0002: 0x8002},
             # rail 2: training, Default, NOT rails01
             "hgx02 mlx5_2": {0x0001: 0x8001, 0x7FFF: 0x7FFF, 0x0002: None},
         },
         swap=("hgx02 mlx5_0", "hgx05 mlx5_3")),
    Case("h100-4su", INVENTORIES / "h100-4su.yaml", "compute",
         pkeys={
             "gpu002 mlx5_0": {0x0001: 0x8001, 0x7FFF: 0xFFFF},  # tenant-a; UFM's Default: every port full
             "ufm02 mlx5_0": {0x0001: None, 0x7FFF: 0xFFFF},  # the standby UFM appliance is not in tenant-a
             "ufm02 mlx5_1": {0x0001: 0x8001, 0x7FFF: 0xFFFF},  # ... but its sharp_am's UCX port is (index 0)
         },
         swap=("gpu002 mlx5_0", "gpu040 mlx5_5")),
    Case("multi-tenant", REPO / "tests/data/infiniband/multi-tenant.yaml", "compute",
         pkeys={
             # its tenant (NCCL) and its tenant's IPoIB partition full, the shared services limited
             "alpha01 mlx5_0": {0x0011: 0x8011, 0x0012: None, 0x0021: 0x8021, 0x0022: None, 0x0020: 0x0020,
                                0x7FFF: 0x7FFF},
             "beta03 mlx5_7": {0x0011: None, 0x0012: 0x8012, 0x0021: None, 0x0022: 0x8022, 0x0020: 0x0020,
                               0x7FFF: 0x7FFF},
             # the standby SM host: a service node, full in services and in no tenant's partition
             "sm02 mlx5_0": {0x0011: None, 0x0012: None, 0x0021: None, 0x0022: None, 0x0020: 0x8020,
                             0x7FFF: 0x7FFF},
         },
         swap=("alpha02 mlx5_0", "beta02 mlx5_3")),
)


# --- helpers ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tools() -> dict[str, str]:
    found = {name: require_tool(name) for name in ("opensm", "ibsim", "ibnetdiscover", "smpquery", "saquery",
                                                   "sminfo")}
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


def env_file(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if line and not line.startswith("#"))


@dataclass(frozen=True)
class SmHost:
    host: str  # node name
    net_id: str  # its HCA's record in the net file (the SIM_HOST the SM attaches to)
    priority: int | None  # None: the priority opensm.conf gives (UFM)
    guid: str | None


def sm_hosts(fabric_dir: Path, net: NetFile, sm: SmModel) -> list[SmHost]:
    """The SMs as the generated files start them: each unit's --priority and --guid (OpenSM), or UFM's one SM on
    the first host's port; the port GUID names the HCA the SM attaches to (node-name-map: node GUID = port - 1)."""
    names = {}
    for line in (fabric_dir / ("ib-node-name-map" if sm.flavor == "ufm" else "node-name-map")).read_text().splitlines():
        guid, _, desc = line.partition(" ")
        names[int(guid, 16)] = desc.strip('"')
    out = []
    if sm.flavor == "ufm":
        host = sm.hosts[0][0]
        desc = next(d for d in names.values() if d.split(" ")[0] == host)
        return [SmHost(host, net.by_description(desc).id, None, None)]
    for unit in sorted(fabric_dir.glob("hosts/*/opensm-*.service")):
        start = next(line for line in unit.read_text().splitlines() if line.startswith("ExecStart=/"))
        priority = int(re.search(r"--priority (\d+)", start).group(1))  # type: ignore[union-attr]
        guid = re.search(r"--guid (0x[0-9a-f]+)", start).group(1)  # type: ignore[union-attr]
        desc = names[int(guid, 16) - 1]
        out.append(SmHost(unit.parts[-2], net.by_description(desc).id, priority, guid))
    return sorted(out, key=lambda h: -(h.priority or 0))


@dataclass
class Booted:
    case: Case
    cluster: Cluster
    sm: SmModel
    flavor: str
    out: Path
    fabric_dir: Path
    conf: Path  # the config the SMs run
    keys: dict[str, str]  # key name -> value
    key_env: dict[str, str]  # environment of the key installer (and of apply)
    key_files: list[Path]
    staged: StagedConfig | None  # OpenSM
    ufm_output: str  # ufm-install.sh's output (UFM)
    net: NetFile
    sim: IbSim
    hosts: list[SmHost]
    sms: list[SubnetManager]
    net_warnings: list[str]  # ibsim's complaints about the net file (before any SM ran)
    ports: dict[str, tuple[int, int]]  # HCA description -> (LID, port GUID)
    tables: dict[str, list[int]]  # HCA description -> P_Key table, as `smpquery pkeys` reads it from the port

    @property
    def master(self) -> SubnetManager:
        return self.sms[0]

    @property
    def opensm(self) -> OpenSmRun:
        return self.master.run()

    def partitions(self) -> str:
        name = "partitions.conf.user_ext" if self.flavor == "ufm" else "partitions.conf"
        return (self.fabric_dir / name).read_text()


def read_tables(sim: IbSim, smpquery: str, ports: dict[str, tuple[int, int]], deadline: Deadline
                ) -> dict[str, list[int]]:
    """Every HCA port's P_Key table, straight from the (simulated) port with `smpquery pkeys`, four at a time."""
    def one(item: tuple[str, tuple[int, int]]) -> tuple[str, list[int]]:
        desc, (lid, _) = item
        return desc, pkey_table(sim.run([smpquery, "pkeys", str(lid)], timeout=deadline.left(30)).stdout)

    with ThreadPoolExecutor(max_workers=4) as pool:
        return dict(pool.map(one, sorted(ports.items())))


@pytest.fixture(scope="module", params=CASES, ids=[c.name for c in CASES])
def fabric(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
           tools: dict[str, str]) -> Iterator[Booted]:
    case: Case = request.param
    with bring_up(case, tmp_path_factory.mktemp(case.name), tools) as booted_fabric:
        yield booted_fabric


@contextmanager
def bring_up(case: Case, work: Path, tools: dict[str, str]) -> Iterator[Booted]:
    """apply -> keys -> config -> ibsim on topology.net -> the SMs as daemons -> every HCA's P_Key table; ibsim and
    the SMs stay up while the caller's block runs."""
    deadline = Deadline(SETUP_BUDGET_S, f"bring-up of {case.name}")
    topology = compile_spec(case.spec).topology
    cluster = topology.cluster
    sm = topology.fabric(case.fabric).fabric.subnet_manager
    assert sm is not None
    sources = key_sources(case.spec, case.fabric)
    keys = {name: new_key() for name in sources}
    key_env = {s["env"]: keys[name] for name, s in sources.items() if "env" in s}
    out = work / "out"
    # The env keys are in apply's environment too: the generator must not pick them up.
    apply(case.spec, out, timeout=deadline.left(90), env=key_env)
    fabric_dir = out / "infiniband" / case.fabric
    staged, key_files, ufm_output = None, [], ""
    if sm.flavor == "ufm":
        ufm = stage_ufm_config(fabric_dir, work, key_env, OPENSM_DEFAULTS, timeout=deadline.left(30))
        assert ufm.install_code == 3, f"ufm-install.sh should set the settings and ask for a restart:\n" \
                                      f"{ufm.install_output}"
        conf, ufm_output = ufm.conf, ufm.install_output
    else:
        staged = stage_opensm_config(fabric_dir, work)
        key_files = place_keys(sources, keys, staged)
        write_runtime_config(staged, key_env, timeout=deadline.left(20))
        conf = staged.conf_out
    net_text = speeds_for_ibsim((fabric_dir / "topology.net").read_text(), SIM_SPEED)
    net_path = work / "topology-hdr.net"
    net_path.write_text(net_text)
    net = NetFile.parse(net_text)
    hosts = sm_hosts(fabric_dir, net, sm)
    sim = IbSim(net_path, work / "sim", host=hosts[0].net_id)
    sms: list[SubnetManager] = []
    try:
        sim.start(timeout=deadline.left(30))
        net_warnings = sim.warnings()
        for i, host in enumerate(hosts):
            daemon = SubnetManager(sim, conf, host=host.net_id, priority=host.priority, guid=host.guid)
            sms.append(daemon.start(timeout=deadline.left(90), until=("SUBNET UP",) if i == 0 else ("STANDBY",)))
        ports = ca_ports(sim.run([tools["ibnetdiscover"], "-p"], timeout=deadline.left(60)).stdout)
        tables = read_tables(sim, tools["smpquery"], ports, deadline)
        yield Booted(case, cluster, sm, sm.flavor, out, fabric_dir, conf, keys, key_env, key_files, staged, ufm_output,
                     net, sim, hosts, sms, net_warnings, ports, tables)
    finally:
        for daemon in reversed(sms):
            daemon.stop()
        sim.stop()


def tail(run: OpenSmRun, n: int = 40) -> str:
    return "\n".join(line for line in run.log.splitlines()[-n:] if "osm_vendor_bind" not in line)


def guid_lines(path: Path) -> list[str]:
    return [line.strip() for line in path.read_text().splitlines() if line.strip().startswith("0x")]


def compute_hcas(fabric: Booted, *, but_sm: bool = False) -> dict[str, str]:
    """HCA description -> its node's profile, for every HCA of a compute node (``but_sm``: except the master SM's
    own port, which partitions.conf makes a full member of every partition: SELF)."""
    profiles = {n.name: n.profile for n in fabric.cluster.nodes}
    master = fabric.net.nodes[fabric.hosts[0].net_id].description
    return {desc: profiles[desc.split(" ")[0]].name for desc in fabric.ports
            if profiles[desc.split(" ")[0]].role == "compute" and not (but_sm and desc == master)}


def nccl_env(fabric: Booted, profile: str) -> dict[str, str]:
    return env_file(fabric.out / "hosts" / profile / "nccl.env")


def tenant(fabric: Booted, desc: str) -> int:
    """The compute partition (pkey, no membership bit) the model gives an HCA: the expectation, read from the spec."""
    sm = fabric.sm
    node = next(n for n in fabric.cluster.nodes if n.name == desc.split(" ")[0])
    nic = next(n for n in node.profile.compute if n.dev == desc.split(" ")[1])
    partition = sm.compute_partition(node, nic)
    assert partition is not None, desc
    return partition.pkey


# --- 1. keys ---------------------------------------------------------------------------------------------


def test_keys_reach_only_the_sm_config(fabric: Booted, budget: Deadline) -> None:
    keys = fabric.keys
    assert keys, "the spec names keys"
    runtime = fabric.conf.read_text()
    for name, value in keys.items():
        assert re.search(rf"^{name} {value}$", runtime, re.M), f"{name} not substituted into the SM's config"
    assert not files_containing(fabric.out, [v[2:] for v in keys.values()]), "a key leaked into the artifacts"
    if fabric.flavor == "ufm":
        installed = fabric.conf.parent / "ufm-root/opt/ufm/files/conf/opensm/opensm.conf"
        assert stat.S_IMODE(installed.stat().st_mode) == 0o600, "UFM's opensm.conf with keys: root only"
        for value in keys.values():
            assert value[2:].lower() not in fabric.ufm_output.lower(), "ufm-install.sh printed a key"
        again = subprocess.run(["bash", str(fabric.conf.parent / "ufm-files/ufm-install.sh")],
                               env={**os.environ, **fabric.key_env, "UFM_ROOT": str(fabric.conf.parent / "ufm-root")},
                               capture_output=True, text=True, timeout=budget.left(30), check=False)
        assert again.returncode == 0 and "0 change(s)" in again.stdout, again.stdout + again.stderr
        return
    staged = fabric.staged
    assert staged is not None
    config_files = [p for p in staged.config_dir.iterdir() if p not in fabric.key_files]
    assert not [p for p in config_files if any(v[2:] in p.read_text().lower() for v in keys.values())], \
        "a key leaked into the installed config files"
    for value in keys.values():
        assert value[2:].lower() not in staged.keys_output.lower(), "opensm-keys.sh printed a key"
    assert stat.S_IMODE(staged.conf_out.stat().st_mode) == 0o600, "runtime config must be readable by root only"
    installed_conf = staged.conf_in.read_text()
    for name in keys:
        assert re.search(rf"^{name} 0x0+[01]$", installed_conf, re.M), f"{name} placeholder missing in opensm.conf"
    before = (staged.conf_out.read_bytes(), staged.conf_out.stat().st_mtime_ns)
    write_runtime_config(staged, fabric.key_env, timeout=budget.left(20))
    assert (staged.conf_out.read_bytes(), staged.conf_out.stat().st_mtime_ns) == before, "idempotent"


# --- 2. OpenSM on the generated fabric -------------------------------------------------------------------


def test_ibsim_accepts_the_generated_net_file(fabric: Booted) -> None:
    assert fabric.sim.running
    assert fabric.net_warnings == [], "ibsim complained about topology.net"
    runtime = fabric.conf.read_text()
    assert "/var/log" not in runtime and not re.search(r"\s/opt/ufm", runtime), "the test must not touch the host"
    if fabric.flavor == "opensm":  # (UFM's stand-in opensm.conf keeps upstream's own /etc/opensm defaults)
        assert "/etc/opensm" not in runtime, "the test must not touch the host's files"


def test_opensm_routes_the_fabric_with_ftree(fabric: Booted) -> None:
    run, net = fabric.opensm, fabric.net
    assert run.subnet_up, tail(run)
    assert run.lines("ftree tables configured on all switches"), tail(run)
    assert run.lines("FatTree rank (roots to leaf switches): 2"), tail(run)
    assert not run.lines("ERR AB0"), "FatTree not identified:\n" + "\n".join(run.lines("ERR AB0"))
    assert not [line for line in run.log.splitlines() if "minhop" in line.lower()], "fell back to minhop"
    roots = guid_lines(fabric.fabric_dir / "root-guids.conf")
    cns = guid_lines(fabric.fabric_dir / "cn-guids.conf")
    io = fabric.fabric_dir / "io-guids.conf"
    ios = guid_lines(io) if io.exists() else []
    cas, switches = len(net.cas), len(net.switches)
    assert len(cns) + len(ios) == cas
    assert run.lines(f"Fabric has {cas} CAs, {cas} CA ports ({len(cns)} of them CNs), {switches} switches"), tail(run)
    assert run.lines(f"Fabric has {len(roots)} switches at rank 0 (roots)"), tail(run)
    leaves = switches - len(roots)
    assert run.lines(f"Fabric has {leaves} switches at rank 1 ({leaves} of them leafs)"), tail(run)


def test_the_second_sm_stands_by(fabric: Booted, tools: dict[str, str], budget: Deadline) -> None:
    """The master answers SMInfo with the top priority; the other SM of the pair (same files, lower priority) is in
    STANDBY. UFM runs one SM (its HA pair fails over as a whole), with the priority of its settings."""
    master = sm_state(fabric.sim.run([tools["sminfo"]], timeout=budget.left(20)).stdout)
    sm = fabric.sm
    assert len(sm.hosts) == 2
    assert master == (max(p for _, p in sm.hosts), "SMINFO_MASTER")
    if fabric.flavor == "ufm":
        assert len(fabric.sms) == 1
        return
    standby = fabric.hosts[1]
    lid = next(lid for desc, (lid, _) in fabric.ports.items() if fabric.net.by_description(desc).id == standby.net_id)
    assert sm_state(fabric.sim.run([tools["sminfo"], str(lid)], timeout=budget.left(20)).stdout) == (
        standby.priority, "SMINFO_STANDBY")


def test_opensm_accepts_partitions_and_qos_policy(fabric: Booted) -> None:
    run = fabric.opensm
    assert not run.lines("PARSE ERROR"), "\n".join(run.lines("PARSE ERROR"))
    assert not run.lines("PARSE WARN"), "\n".join(run.lines("PARSE WARN"))
    assert not run.lines("Partition configuration in error")
    assert not run.lines("ERR AC"), "\n".join(run.lines("ERR AC"))
    errors = [line for line in run.errors() if not any(b in line for b in BENIGN_ERRORS)]
    assert errors == []
    settings = fabric.conf.read_text()
    if fabric.keys.get("m_key"):  # ibsim cannot show the ports' protection: OpenSM runs with it, without an error
        assert re.search(r"^m_key_protection_level 2$", settings, re.M) and re.search(
            r"^m_key_lease_period 60$", settings, re.M)
    assert re.search(r"^qos_high_limit 0$", settings, re.M), "the high-priority VLs may not starve the others"


def test_sharp_fabrics_run_on_two_operational_vls(fabric: Booted, tools: dict[str, str], budget: Deadline) -> None:
    """With SHARP (h100-4su) the SM gives every HCA port 2 operational VLs (max_op_vls 2, NVIDIA's advice for
    streaming aggregation), read back from the port's PortInfo, and VL arbitration tables of those 2 VLs with the
    config's weights (`smpquery vlarb`); without it (the others) OpenSM's default stands."""
    desc = sorted(compute_hcas(fabric, but_sm=True))[0]
    lid, _ = fabric.ports[desc]
    info = fabric.sim.run([tools["smpquery"], "portinfo", str(lid), "1"], timeout=budget.left(20)).stdout
    oper = re.search(r"^OperVLs:\.*(\S+)$", info, re.M)
    assert oper, info
    assert (oper.group(1) == "VL0-1") == (fabric.sm.sharp is not None), (desc, oper.group(1))
    if fabric.sm.sharp is None or fabric.sm.qos is None:
        return
    # OpenSM masks every VLArb entry to VL & 1 on such a port (osm_qos.c): the tables hold VLs 0-1 only, so the
    # weights the port arbitrates by are the config's own (VL0 high priority, VL1 low), none folded from VL2-14
    read = fabric.sim.run([tools["smpquery"], "vlarb", str(lid), "1"], timeout=budget.left(20)).stdout
    tables = re.findall(r"^VL\s*:\s*\|(.*)\nWEIGHT:\s*\|(.*)$", read, re.M)
    assert len(tables) == 2, read  # low, then high
    conf = fabric.conf.read_text()
    for (vls, weights), name in zip(tables, ("qos_vlarb_low", "qos_vlarb_high"), strict=True):
        port: dict[int, int] = {}
        for vl, weight in zip(vls.split("|")[:-1], weights.split("|")[:-1], strict=True):
            port[int(vl, 16)] = port.get(int(vl, 16), 0) + int(weight, 16)
        stated = re.search(rf"^{name} (\S+)$", conf, re.M)
        assert stated, name
        want: dict[int, int] = {}
        for entry in stated.group(1).split(","):
            vl, weight = map(int, entry.split(":"))
            assert vl < 2, f"{name} names VL {vl}, which the port folds onto VL {vl & 1}"
            want[vl] = want.get(vl, 0) + weight
        assert {vl: w for vl, w in port.items() if w} == {vl: w for vl, w in want.items() if w}, (name, read)


# --- 3. partitions as the ports hold them ------------------------------------------------------------------


def test_partitions_reach_the_hcas(fabric: Booted) -> None:
    for description, expected in fabric.case.pkeys.items():
        assert description in fabric.tables, f"{description} not discovered"
        table = fabric.tables[description]
        for base, entry in expected.items():
            found = [k for k in table if k & 0x7FFF == base]
            if entry is None:
                assert not found, f"{description} has pkey 0x{base:04x}: {[hex(k) for k in table]}"
            else:
                assert found == [entry], f"{description}: want 0x{entry:04x}, table {[hex(k) for k in table]}"


def test_nccl_index_holds_the_tenants_full_member_pkey(fabric: Booted) -> None:
    """On every compute HCA, the P_Key at NCCL_IB_PKEY is a full member of the partition UCX_IB_PKEY (or, for a
    profile spread over tenants, the HCA's tenant) names: the same on all its tenant's HCAs, on no other tenant's."""
    hcas = compute_hcas(fabric)
    assert len(hcas) > 50
    by_tenant: dict[int, set[str]] = defaultdict(set)
    for desc, profile in hcas.items():
        env = nccl_env(fabric, profile)
        entry = fabric.tables[desc][int(env["NCCL_IB_PKEY"])]
        want = int(env["UCX_IB_PKEY"], 16) if "UCX_IB_PKEY" in env else tenant(fabric, desc)
        assert entry == FULL | want, f"{desc}: index {env['NCCL_IB_PKEY']} holds 0x{entry:04x}, not 0x{FULL | want:04x}"
        by_tenant[want].add(desc)
    for pkey, members in by_tenant.items():
        outsiders = [d for d in hcas if d not in members and any(k & 0x7FFF == pkey for k in fabric.tables[d])]
        assert not outsiders, f"tenant 0x{pkey:04x} reaches {outsiders[:3]}"
    expected_tenants = {"lab-1su": 1, "h100-4su": 1, "multi-tenant": 2}[fabric.case.name]
    assert len(by_tenant) == expected_tenants


def test_default_membership(fabric: Booted) -> None:
    """Default stays limited on every compute HCA where the spec says so (lab, multi-tenant); UFM makes it full."""
    want = 0xFFFF if fabric.flavor == "ufm" else 0x7FFF
    for desc in compute_hcas(fabric, but_sm=True):
        assert [k for k in fabric.tables[desc] if k & 0x7FFF == DEFAULT_PKEY] == [want], desc


def visible_groups(fabric: Booted, saquery: str, budget: Deadline) -> dict[int, Any]:
    """The multicast groups (``saquery -g``) asked from the SM's host and from one HCA of each tenant, by P_Key: the
    SA lists a group only to a requester sharing its partition, and OpenSM 3.3.23's SA leaves some out even for
    the SM's own port (multi-tenant: 0x8022 from sm01, which is its SELF member), so each tenant asks for its own."""
    askers = {None} | {fabric.net.by_description(d).id for d in
                       {tenant(fabric, d): d for d in sorted(compute_hcas(fabric, but_sm=True))}.values()}
    groups = {}
    for host in sorted(askers, key=str):
        out = fabric.sim.run([saquery, "-g"], timeout=budget.left(30), host=host).stdout
        groups |= {g.pkey: g for g in mc_groups(out)}
    return groups


# --- 4. IPoIB -----------------------------------------------------------------------------------------------


def test_ipoib_partitions_have_their_broadcast_group(fabric: Booted, tools: dict[str, str],
                                                      budget: Deadline) -> None:
    """OpenSM creates a broadcast group for every partition with the ipoib flag, with its mtu, rate and sl; one
    without the flag has none (no IPoIB driver runs on ibsim to create one by joining)."""
    groups = visible_groups(fabric, tools["saquery"], budget)
    heads = {int(m.group(2), 16) & 0x7FFF: m.group(3) for m in re.finditer(
        r"^([A-Za-z][\w-]*)=(0x[0-9a-f]+)([^:]*):", fabric.partitions(), re.M)}
    ipoib = {pkey for pkey, flags in heads.items() if ", ipoib" in flags}
    assert ipoib, "the fabric has an IPoIB partition"
    expected = {FULL | p for p in ipoib} | ({FULL | DEFAULT_PKEY} if fabric.flavor == "ufm" else set())
    assert set(groups) == expected, sorted(hex(k) for k in groups)
    for pkey in ipoib:
        group, flags = groups[FULL | pkey], dict(f.strip().split("=") for f in heads[pkey].split(",") if "=" in f)
        assert group.mgid == f"ff12:401b:{FULL | pkey:x}::ffff:ffff"
        assert (group.mtu, group.sl) == (int(flags["mtu"]), int(flags["sl"])), group
        if "rate" in flags:
            assert group.rate == int(flags["rate"]), group


def _network_files(fabric: Booted, node: str) -> dict[str, configparser.ConfigParser]:
    out = {}
    for path in sorted((fabric.out / "hosts" / node / "systemd-network").glob("*")):
        parser = configparser.ConfigParser(strict=False)
        parser.optionxform = str  # type: ignore[assignment,method-assign]
        parser.read_string(path.read_text())
        out[path.name] = parser
    return out


def test_ipoib_interfaces_sit_on_the_ipoib_partition(fabric: Booted, tools: dict[str, str],
                                                      budget: Deadline) -> None:
    """Each host's IPoIB address is on the interface carrying the IPoIB partition: the parent when the partition is
    at the port's index 0 (as the SM programmed it), else a child created with the full-member P_Key the port holds;
    the MTU is the broadcast group's minus the 4-byte IPoIB header."""
    groups = visible_groups(fabric, tools["saquery"], budget)
    mtu_bytes = {code: size for size, code in MTU_CODES.items()}
    checked = 0
    for node in sorted({n.name for n in fabric.cluster.nodes}):
        host = fabric.out / "hosts" / node
        netplan = host / "netplan-ipoib.yaml"
        profile = next(n.profile for n in fabric.cluster.nodes if n.name == node)
        devs = {nic.netdev: nic.dev for nic in profile.compute}
        if netplan.exists():
            for netdev, conf in yaml.safe_load(netplan.read_text())["network"]["ethernets"].items():
                index0 = fabric.tables[f"{node} {devs[netdev]}"][0]
                assert index0 & FULL and index0 in groups, f"{node} {netdev}: index 0 holds 0x{index0:04x}"
                assert conf["mtu"] == mtu_bytes[groups[index0].mtu] - 4
                checked += 1
        for name, parser in _network_files(fabric, node).items():
            if not name.endswith(".netdev"):
                continue
            child = parser["NetDev"]["Name"]
            pkey = int(parser["IPoIB"]["PartitionKey"], 16)
            parent = child.rsplit(".", 1)[0]
            table = fabric.tables[f"{node} {devs[parent]}"]
            assert pkey in table and table[0] != pkey, f"{node} {child}: 0x{pkey:04x} not in {table}"
            assert pkey in groups and int(parser["NetDev"]["MTUBytes"]) == mtu_bytes[groups[pkey].mtu] - 4
            parent_net = _network_files(fabric, node)[f"61-fabricgen-{parent}.network"]
            assert parent_net["Network"]["IPoIB"] == child and "Address" not in parent_net["Network"]
            assert "Address" in _network_files(fabric, node)[f"61-fabricgen-{child}.network"]["Network"]
            checked += 1
    assert checked >= {"lab-1su": 0, "h100-4su": 1016, "multi-tenant": 56}[fabric.case.name]


# --- 5. service levels ---------------------------------------------------------------------------------------


def _paths(fabric: Booted, saquery: str, a: str, b: str, pkey: int, timeout: float) -> list[dict[str, int]]:
    argv = [saquery, "PR", "--slid", str(fabric.ports[a][0]), "--dlid", str(fabric.ports[b][0]), "--pkey",
            hex(FULL | pkey)]
    return path_records(fabric.sim.run(argv, timeout=timeout, check=False).stdout)


def test_service_levels_match_across_sa_partitions_and_nccl(fabric: Booted, tools: dict[str, str],
                                                             budget: Deadline) -> None:
    """The SA gives a compute partition's paths the SL nccl.env sets (NCCL never asks the SA), and an IPoIB
    partition's paths the SL of its broadcast group."""
    hcas = compute_hcas(fabric)
    by_tenant: dict[int, list[str]] = defaultdict(list)
    for desc in sorted(hcas):
        by_tenant[tenant(fabric, desc)].append(desc)
    for pkey, members in sorted(by_tenant.items()):
        env = nccl_env(fabric, hcas[members[0]])
        paths = _paths(fabric, tools["saquery"], members[0], members[-1], pkey, budget.left(20))
        assert paths and {p["sl"] for p in paths} == {int(env["NCCL_IB_SL"])} == {int(env["UCX_IB_SL"])}, paths
        assert {p["pkey"] for p in paths} == {FULL | pkey}
    for group in visible_groups(fabric, tools["saquery"], budget).values():
        pkey = group.pkey & 0x7FFF
        members = [d for d in sorted(hcas) if group.pkey in fabric.tables[d]]
        if pkey == DEFAULT_PKEY and fabric.flavor == "ufm":
            continue  # UFM's own group
        paths = _paths(fabric, tools["saquery"], members[0], members[-1], pkey, budget.left(20))
        assert paths and {p["sl"] for p in paths} == {group.sl}, (hex(group.pkey), paths)
    for pkey, read in partitions_read(fabric.partitions()).items():  # every partition's sl= is its paths' SL
        members = [d for d in sorted(hcas) if FULL | pkey in fabric.tables[d]]
        if len(members) >= 2:
            paths = _paths(fabric, tools["saquery"], members[0], members[-1], pkey, budget.left(20))
            assert {p["sl"] for p in paths} == {read.sl}, (read, paths)


def test_no_path_joins_tenants_or_limited_members(fabric: Booted, tools: dict[str, str], budget: Deadline) -> None:
    """Isolation as the SA enforces it: two compute HCAs that are only limited members of Default get no path on
    it; HCAs of two tenants get none on any P_Key of the fabric, the shared services partition included, where
    each tenant does reach the service nodes (limited to full)."""
    hcas = sorted(compute_hcas(fabric, but_sm=True))
    if fabric.flavor != "ufm":
        assert _paths(fabric, tools["saquery"], hcas[0], hcas[-1], DEFAULT_PKEY, budget.left(20)) == []
    tenants: dict[int, str] = {}
    for desc in hcas:
        tenants.setdefault(tenant(fabric, desc), desc)
    pkeys = sorted(partitions_read(fabric.partitions()))
    for (_, a), (_, b) in zip(sorted(tenants.items()), sorted(tenants.items())[1:], strict=False):
        shared = [k for k in pkeys if any(e & 0x7FFF == k for e in fabric.tables[a])
                  and any(e & 0x7FFF == k for e in fabric.tables[b])]
        assert shared or fabric.flavor == "ufm", (a, b)
        for pkey in pkeys:
            assert _paths(fabric, tools["saquery"], a, b, pkey, budget.left(20)) == [], (a, b, hex(pkey))
    if fabric.case.name == "multi-tenant":
        service = next(d for d in fabric.ports if d.startswith("sm02 "))
        for desc in tenants.values():  # limited tenant ports reach the full service node on services, nothing else
            assert _paths(fabric, tools["saquery"], desc, service, 0x0020, budget.left(20)), desc
            assert [e for e in fabric.tables[desc] if e & 0x7FFF == 0x0020] == [0x0020], "limited in services"


def test_switches_and_the_sm_keep_default_at_index_0(fabric: Booted, tools: dict[str, str],
                                                      budget: Deadline) -> None:
    """An indx0 partition would also take P_Key index 0 of every switch port 0 and of the SM's port (OpenSM passes
    indx0 for ALL_SWITCHES and SELF): the second definition without indx0 leaves them 0x7fff (UFM's management
    partition), except the SM's port where the SM runs on a member host (lab-1su: its NCCL needs the tenant there).
    sharp_am's UCX port on each SM host (h100-4su: mlx5_1, smx_ucx_interface) holds SHARP's partition at index 0 as
    the jobs' HCAs do (UCX connects two ports only on one P_Key)."""
    switch = fabric.net.switches[0].id
    lid = next(int(m.group(1)) for m in re.finditer(r"^Switch\s+\d+\s+\S+\s+.*?lid (\d+)", fabric.sim.run(
        [tools["ibnetdiscover"]], timeout=budget.left(30)).stdout, re.M) if m)
    table = pkey_table(fabric.sim.run([tools["smpquery"], "pkeys", str(lid)], timeout=budget.left(20)).stdout)
    assert table[0] == FULL | DEFAULT_PKEY, (switch, [hex(k) for k in table])
    master = fabric.net.nodes[fabric.hosts[0].net_id].description
    index0 = fabric.tables[master][0]
    member_host = fabric.case.name == "lab-1su"
    assert (index0 & 0x7FFF != DEFAULT_PKEY) == member_host, (master, hex(index0))
    sharp = fabric.sm.sharp
    am_cfg = fabric.fabric_dir / "sharp_am-settings.conf"
    ucx = re.search(r"^smx_ucx_interface (\S+):1$", am_cfg.read_text(), re.M) if am_cfg.exists() else None
    assert bool(ucx) == (fabric.case.name == "h100-4su"), "h100-4su's UFM appliances have a second port for it"
    for host, _ in fabric.sm.hosts if ucx else ():
        desc = f"{host} {ucx.group(1)}"
        assert sharp is not None and desc != master
        assert fabric.tables[desc][0] == FULL | fabric.sm.partition(sharp.partition).pkey, (
            desc, [hex(k) for k in fabric.tables[desc]])


# --- 6. discovery against the plan -----------------------------------------------------------------------


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
        text = verify(case.spec, found, case.fabric, timeout=budget.left(60))
        assert text.returncode == 0, text.stdout + text.stderr
        assert "the fabric matches the plan" in text.stdout, text.stdout
        report = verify(case.spec, found, case.fabric, timeout=budget.left(60), json_out=True)
        assert report.returncode == 0, report.stdout + report.stderr
        doc = json.loads(report.stdout)
        assert doc["clean"] is True and doc["findings"] == [], doc["findings"][:5]
        summary = doc["summary"]
        assert summary["planned_links"] == summary["found_links"] == summary["matched_links"] > 0, summary
        assert summary["planned_devices"] == summary["found_devices"] == len(fabric.net.nodes), summary


def _runnable_conf(fabric_dir: Path, work: Path, spec: Path, fabric: str, timeout: float) -> Path:
    """The config a one-shot OpenSM runs here: OpenSM's installed file (key placeholders are valid keys), or UFM's
    after ufm-install.sh, with fresh keys."""
    if (fabric_dir / "ufm-install.sh").exists():
        keys = {s["env"]: new_key() for s in key_sources(spec, fabric).values() if "env" in s}
        return stage_ufm_config(fabric_dir, work, keys, OPENSM_DEFAULTS, timeout=timeout).conf
    return stage_opensm_config(fabric_dir, work).conf_in


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_swapped_cables_are_reported_as_miswired(case: Case, tools: dict[str, str], budget: Deadline,
                                                  tmp_path: Path) -> None:
    out = tmp_path / "out"
    apply(case.spec, out, timeout=budget.left(60))
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

    conf = _runnable_conf(fabric_dir, tmp_path, case.spec, case.fabric, budget.left(30))
    with booted(swapped, tmp_path / "sim", host=net.first_ca().id, timeout=budget.left(30)) as sim:
        assert sim.warnings() == [], "ibsim rejected the rewired net file"
        # OpenSM routes the miswired tree without complaint: cabling has to be verified separately.
        run = run_opensm(sim, conf, timeout=budget.left(60))
        assert run.subnet_up and run.lines("ftree tables configured on all switches"), tail(run)
        found = tmp_path / "ibnetdiscover.txt"
        found.write_text(sim.run([tools["ibnetdiscover"]], timeout=budget.left(30)).stdout)

    report = verify(case.spec, found, case.fabric, timeout=budget.left(60), json_out=True)
    assert report.returncode != 0, "verify passed a miswired fabric"
    doc = json.loads(report.stdout)
    assert doc["clean"] is False
    kinds = {(f["kind"], f["cable"]) for f in doc["findings"]}
    assert kinds == {("miswired", a_cable), ("miswired", b_cable)}, json.dumps(doc["findings"], indent=1)[:3000]
    assert len(doc["findings"]) == 2, [f["message"] for f in doc["findings"]]
    text = verify(case.spec, found, case.fabric, timeout=budget.left(60))
    assert text.returncode != 0
    assert a_cable in text.stdout and b_cable in text.stdout, text.stdout


# --- 7. the bring-up benchmark script --------------------------------------------------------------------


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

