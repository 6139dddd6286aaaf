"""h100-4su's storage fabric switches run in network namespaces: the planned cables as veth pairs, each switch
configured from its golden config_db.json's read-back, FRR's bgpd from that. Every planned session comes up,
every switch learns every leaf's loopback and host subnet (a leaf over all of its 64 uplinks, 16 to each of 4
spines), spines do not learn each other's loopbacks (one AS, no allowas-in: eBGP loop prevention, as on the real
fabric), and ``down`` leaves no namespace, veth or daemon behind. Hosts and the ``lab`` commands come next."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from ipaddress import IPv4Network
from pathlib import Path

import pytest

from fabricgen.features.ethernet.nos.sonic.routing import routing
from fabricgen.features.lab import netns
from fabricgen.features.lab.check import session_failures
from fabricgen.features.lab.plan import LabFabric, lab_fabric
from fabricgen.model.routing import SwitchRouting
from fabricgen.pipeline import compile_spec
from tests.conftest import INVENTORIES, REPO, require_tool
from tests.helpers.ethernet import STORAGE_LEAVES, STORAGE_SWITCHES

GOLDEN = REPO / "tests/golden/h100-4su/switches"


def _require_root() -> None:
    if os.geteuid() != 0:
        if os.environ.get("FABRICGEN_REQUIRE_EXTERNAL") == "1":
            pytest.fail("the lab test needs root in CI (FABRICGEN_REQUIRE_EXTERNAL=1)")
        pytest.skip("the lab needs root (network namespaces)")


def _state_dir() -> Path:
    """Under /run, as the lab's own (FRR runs as user frr, which cannot enter pytest's 0700 temporary dirs)."""
    path = Path(tempfile.mkdtemp(prefix="fabricgen-lab-test-", dir="/run"))
    path.chmod(0o755)
    return path


@pytest.fixture(scope="module")
def switches() -> dict[str, SwitchRouting]:
    return {s: routing(s, (GOLDEN / s / "config_db.json").read_bytes()) for s in STORAGE_SWITCHES}


@pytest.fixture(scope="module")
def lab(switches: dict[str, SwitchRouting]) -> Iterator[tuple[LabFabric, Path]]:
    require_tool("vtysh")
    _require_root()
    compiled = compile_spec(INVENTORIES / "h100-4su.yaml")
    [storage] = [ft for ft in compiled.topology.fabrics if ft.fabric.name == "storage"]
    fabric = lab_fabric(compiled.topology.cluster.metadata.name, storage, switches)
    state = _state_dir()
    try:
        netns.up(fabric, switches, state)
        yield fabric, state
    finally:
        netns.down(state)
        shutil.rmtree(state, ignore_errors=True)


def test_every_planned_session_is_established(lab: tuple[LabFabric, Path], switches: dict[str, SwitchRouting]) -> None:
    fabric, state = lab
    assert len(fabric.veths) == 384
    expected = {s: len(r.neighbors) for s, r in switches.items()}
    assert netns.wait_established(fabric, state, expected, timeout_s=90)
    total = sum(list(netns.sessions(state, fabric.namespaces[s]).values()).count("Established") for s in switches)
    assert total == 2 * 384
    assert list(session_failures(fabric, switches, state)) == []


def test_loopbacks_everywhere_with_full_ecmp(lab: tuple[LabFabric, Path], switches: dict[str, SwitchRouting]) -> None:
    fabric, state = lab
    expected = {s: len(r.neighbors) for s, r in switches.items()}
    assert netns.wait_established(fabric, state, expected, timeout_s=90)
    far = switches["storage-leaf006"].loopback.network
    # BGP best path plus multipath: give the RIB a moment after the sessions settle
    for _ in range(30):
        answer = netns.vtysh(state, fabric.namespaces["storage-leaf001"], f"show ip route {far} json")
        paths = answer.get(str(far), [{}])[0].get("nexthops", []) if isinstance(answer, dict) else []
        if len([p for p in paths if p.get("active")]) == 64:
            break
        subprocess.run(["sleep", "1"], check=True)
    assert len([p for p in paths if p.get("active")]) == 64
    for name in STORAGE_SWITCHES:
        table = json.loads(subprocess.run(["ip", "-n", fabric.namespaces[name], "-j", "route", "show"],
                                          capture_output=True, text=True, check=True).stdout)
        kernel = {IPv4Network(r["dst"]) for r in table if r["dst"] != "default"}
        for other in STORAGE_SWITCHES:
            if other == name:
                continue
            if other in STORAGE_LEAVES or name in STORAGE_LEAVES:
                assert set(switches[other].networks) <= kernel, (name, other)  # loopback and host subnet
            else:  # spines share AS 65000 and take no allowas-in: a spine drops a path through another spine
                assert switches[other].loopback.network not in kernel, (name, other)
    assert all(switches[leaf].allowas_in == 1 for leaf in STORAGE_LEAVES)


def test_down_removes_what_up_made(switches: dict[str, SwitchRouting]) -> None:
    """A second, small lab (one leaf, one spine) torn down: its namespaces and daemons are gone, others stay."""
    require_tool("vtysh")
    _require_root()
    compiled = compile_spec(INVENTORIES / "h100-4su.yaml")
    [storage] = [ft for ft in compiled.topology.fabrics if ft.fabric.name == "storage"]
    fabric = lab_fabric("down-test", storage, switches)
    pair = {"storage-leaf001", "storage-spine01"}
    inside = {fabric.namespaces[s] for s in pair}
    small = LabFabric(fabric.fabric, {s: n for s, n in fabric.namespaces.items() if s in pair},
                      tuple(v for v in fabric.veths if {v.a_namespace, v.z_namespace} <= inside))
    before = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    tmp_path = _state_dir()
    netns.up(small, switches, tmp_path)
    pids = [int((tmp_path / n / f"{d}.pid").read_text()) for n in small.namespaces.values()
            for d in ("zebra", "bgpd", "lldpd")]
    assert sorted(netns.down(tmp_path)) == sorted(small.namespaces.values())
    after = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    assert after == before and not tmp_path.exists()  # the state file and its emptied directory
    for pid in pids:
        for _ in range(50):
            if not Path(f"/proc/{pid}").exists():
                break
            subprocess.run(["sleep", "0.1"], check=True)
        assert not Path(f"/proc/{pid}").exists()


def test_a_wrong_peer_asn_in_one_config_fails_exactly_its_sessions(switches: dict[str, SwitchRouting]) -> None:
    """storage-spine01's config_db.json expects AS 65101 of storage-leaf001 (which is 65100): FRR refuses the OPEN
    (bad peer AS), and the check names those 16 sessions on both ends, and no other."""
    require_tool("vtysh")
    _require_root()
    db = json.loads((GOLDEN / "storage-spine01/config_db.json").read_bytes())
    for entry in db["BGP_NEIGHBOR"].values():
        if entry["name"] == "storage-leaf001":
            entry["asn"] = "65101"
    broken = dict(switches, **{"storage-spine01": routing("storage-spine01", json.dumps(db).encode())})
    compiled = compile_spec(INVENTORIES / "h100-4su.yaml")
    [storage] = [ft for ft in compiled.topology.fabrics if ft.fabric.name == "storage"]
    fabric = lab_fabric("wrong-asn-test", storage, broken)
    pair = {"storage-leaf001", "storage-spine01", "storage-leaf002"}
    inside = {fabric.namespaces[s] for s in pair}
    small = LabFabric(fabric.fabric, {s: n for s, n in fabric.namespaces.items() if s in pair},
                      tuple(v for v in fabric.veths if {v.a_namespace, v.z_namespace} <= inside))
    state = _state_dir()
    try:
        netns.up(small, broken, state)
        # leaf002's 16 sessions to spine01 are the control: they come up, leaf001's do not
        assert not netns.wait_established(small, state, {"storage-leaf001": 1}, timeout_s=15)
        assert netns.wait_established(small, state, {"storage-leaf002": 16}, timeout_s=30)
        failures = list(session_failures(small, {s: broken[s] for s in pair}, state))
    finally:
        netns.down(state)
        shutil.rmtree(state, ignore_errors=True)
    leaf_side = [f for f in failures if ": storage-leaf001: BGP session to storage-spine01 " in f]
    spine_side = [f for f in failures if ": storage-spine01: BGP session to storage-leaf001 " in f and "AS 65101" in f]
    assert len(leaf_side) == 16 and len(spine_side) == 16
    # the side whose configuration is wrong refuses the OPEN and says why; the other side's last NOTIFICATION
    # varies with the order FRR's two connection attempts meet in (Bad Peer AS, or an OpenSent FSM error)
    assert all("(last NOTIFICATION: OPEN Message Error/Bad Peer AS" in f for f in spine_side)
    assert all("(last NOTIFICATION: " in f for f in leaf_side)
    # the other failures are exactly the sessions to switches left out of this small lab
    outside = sum(n.description not in pair for s in pair for n in broken[s].neighbors)
    rest = [f for f in failures if f not in leaf_side and f not in spine_side]
    assert len(rest) == outside and all(f.split("BGP session to ")[1].split(" ")[0] not in pair for f in rest)
