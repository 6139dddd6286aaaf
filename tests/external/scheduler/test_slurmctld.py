"""Slurm's own controller reads the generated tree: Debian's slurmctld 22.05 (topology/tree) starts with a slurm.conf
that includes the generated slurm.conf.topology and the generated topology.conf beside it, and `scontrol show
topology` lists exactly the planned switches, their levels, children and nodes. The expected tree is computed here
from the compiled links (which leaves each node's ports reach, which spines and cores sit above), not from the
renderer's grouping; hostlists are expanded by `scontrol show hostnames`, Slurm's own parser.

The block form and topology.yaml need Slurm >= 24.05 and 25.05, which Debian does not ship: they are checked against
SchedMD's grammar in tests/unit/features/scheduler/."""

from __future__ import annotations

import getpass
import os
import shutil
import signal
import socket
import subprocess
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

from fabricgen.model.topology import LEAF_SPINE, NODE_LEAF, SPINE_CORE, Topology
from fabricgen.pipeline import compile_spec, render_spec
from tests.conftest import INVENTORIES, REPO, require_tool

THREE_TIER = REPO / "tests" / "data" / "scheduler" / "three-tier.yaml"


def _spec(tmp_path: Path, spec: Path, fabric: str) -> Path:
    """The spec, with the scheduler following another fabric than the compute one when asked."""
    if not fabric:
        return spec
    copy = tmp_path / spec.name
    copy.write_text(spec.read_text() + f"scheduler: {{fabric: {fabric}}}\n")
    return copy


def _free_ports() -> tuple[int, int]:
    with socket.socket() as a, socket.socket() as b:
        a.bind(("127.0.0.1", 0))
        b.bind(("127.0.0.1", 0))
        return a.getsockname()[1], b.getsockname()[1]


def _slurm_conf(directory: Path, nodes: list[str], fragment: Path) -> Path:
    """A controller-only slurm.conf: the planned nodes (all at 127.0.0.1), one partition, the generated fragment."""
    ctld, slurmd = _free_ports()
    state = directory / "state"
    state.mkdir()
    node_lines = "".join(f"NodeName={n} NodeAddr=127.0.0.1 CPUs=1 State=UNKNOWN\n" for n in nodes)
    conf = directory / "slurm.conf"
    conf.write_text(
        f"ClusterName=fabricgen\nSlurmctldHost=localhost\nSlurmctldPort={ctld}\nSlurmdPort={slurmd}\n"
        f"AuthType=auth/none\nCredType=cred/none\nSlurmUser={getpass.getuser()}\nStateSaveLocation={state}\n"
        f"SlurmctldPidFile={directory}/slurmctld.pid\nSlurmctldLogFile={directory}/slurmctld.log\n"
        f"ProctrackType=proctrack/linuxproc\nMpiDefault=none\nMailProg=/bin/true\n"
        f"Include {fragment}\n{node_lines}PartitionName=all Nodes=ALL Default=YES\n")
    return conf


def _hostnames(scontrol: str, env: dict[str, str], expression: str) -> set[str]:
    done = subprocess.run([scontrol, "show", "hostnames", expression], env=env, capture_output=True, text=True,
                          check=True)
    return set(done.stdout.split())


def _show_topology(directory: Path, conf: Path) -> Iterator[str]:
    """`scontrol show topology` of a slurmctld started on ``conf``; the controller is stopped afterwards."""
    slurmctld, scontrol = require_tool("slurmctld"), require_tool("scontrol")
    env = {**os.environ, "SLURM_CONF": str(conf)}
    log = (directory / "stdout").open("w")
    ctld = subprocess.Popen([slurmctld, "-D", "-i", "-f", str(conf)], stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            done = subprocess.run([scontrol, "show", "topology"], env=env, capture_output=True, text=True)
            if done.returncode == 0 and done.stdout.strip():
                yield from done.stdout.splitlines()
                return
            if ctld.poll() is not None:
                break
            time.sleep(0.5)
        pytest.fail(f"slurmctld did not answer: {(directory / 'stdout').read_text()[-3000:]}")
    finally:
        ctld.send_signal(signal.SIGTERM)
        try:
            ctld.wait(timeout=20)
        except subprocess.TimeoutExpired:
            ctld.kill()
        log.close()


def _expected(topology: Topology, fabric: str) -> list[tuple[int, list[str]]]:
    """What the plan says Slurm must see, by the set of nodes under each switch: leaf groups (level 0) are the
    compute nodes sharing the same leaves, upper switches (level 1, 2) the nodes under the same spines or cores."""
    ft = topology.fabric(fabric)
    compute = {n.name for n in topology.cluster.nodes if n.group in ft.fabric.node_groups
               and n.profile.role == "compute"}
    up: dict[str, set[str]] = defaultdict(set)
    for link in ft.links:
        up[link.a.device].add(link.z.device)
    by_leaves: dict[frozenset[str], set[str]] = defaultdict(set)
    for link in ft.links_in(NODE_LEAF):
        if link.a.device in compute:
            by_leaves[frozenset(up[link.a.device])].add(link.a.device)
    levels = [(0, sorted(nodes)) for nodes in by_leaves.values()]
    tiers = [t for t in (LEAF_SPINE, SPINE_CORE) if ft.links_in(t)]
    above: dict[frozenset[str], set[str]] = {leaves: set(nodes) for leaves, nodes in by_leaves.items()}
    for level in range(1, len(tiers) + 1):
        grouped: dict[frozenset[str], set[str]] = defaultdict(set)
        for devices, nodes in above.items():
            grouped[frozenset(set().union(*(up[d] for d in devices)))] |= nodes
        above = grouped
        levels += [(level, sorted(nodes)) for nodes in above.values()]
    return sorted(levels)


CASES = [
    pytest.param(INVENTORIES / "lab-1su.yaml", "", 2, id="lab-1su"),
    pytest.param(INVENTORIES / "h100-4su.yaml", "", 5, id="h100-4su"),
    pytest.param(INVENTORIES / "h100-4su.yaml", "oob", 0, id="h100-4su-top-of-rack"),
    pytest.param(THREE_TIER, "", 27, id="three-tier"),
    pytest.param(THREE_TIER, "storage", 0, id="fat-tree-straddling"),
]


@pytest.mark.parametrize(("spec", "fabric", "switches"), CASES)
def test_slurmctld_reads_the_planned_tree(spec: Path, fabric: str, switches: int, tmp_path: Path) -> None:
    require_tool("slurmctld")
    scontrol = require_tool("scontrol")
    compiled = compile_spec(_spec(tmp_path, spec, fabric))
    files = {a.path: a.content for a in render_spec(compiled, ["slurm"])}
    etc = tmp_path / "etc"
    etc.mkdir()
    for name in ("topology.conf", "slurm.conf.topology"):
        (etc / name).write_bytes(files[f"scheduler/slurm/{name}"])
    scheduler = compiled.cluster.scheduler
    assert scheduler is not None
    expected = _expected(compiled.topology, scheduler.fabric)
    nodes = sorted(set().union(*(nodes for _, nodes in expected)))
    conf = _slurm_conf(etc, nodes, etc / "slurm.conf.topology")
    env = {**os.environ, "SLURM_CONF": str(conf)}

    seen, names = [], []
    for line in _show_topology(tmp_path, conf):
        fields = dict(item.split("=", 1) for item in line.split())
        names.append(fields["SwitchName"])
        seen.append((int(fields["Level"]), sorted(_hostnames(scontrol, env, fields["Nodes"]))))
    assert sorted(seen) == expected
    assert len(names) == len(set(names)) == len(expected)
    if switches:
        assert len(names) == switches
    log = (etc / "slurmctld.log").read_text()
    assert "lack access" not in log and "fatal" not in log.lower()
    shutil.rmtree(etc / "state", ignore_errors=True)
