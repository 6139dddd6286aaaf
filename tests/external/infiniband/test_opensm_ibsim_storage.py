"""Issue 16 on a real subnet manager: storage servers on an InfiniBand storage fabric as the SM sees them.

tests/data/infiniband/storage-fabric.yaml (DGX A100 storage ports, Lustre MDS/OSS servers and an OpenSM pair on an HDR
leaf-spine, every port dual-homed) is applied and booted on ibsim by the same bring-up as test_opensm_ibsim.py (the
SMs started as their units start them), then read back with the real diagnostics:

1. ftree routes the subnet with the DGX ports as its compute nodes and the servers (with the SM hosts) as I/O nodes:
   OpenSM's own count of CNs is the DGX ports only, and cn-guids.conf / io-guids.conf hold exactly the ports of each
   role (`ibnetdiscover -p` names them);
2. every client and server port holds the Lustre partition as a full member at P_Key index 0 (the parent IPoIB
   interface, whose address is a server's o2ib NID), Default limited beside it (`smpquery pkeys`); the SM hosts'
   ports keep Default at index 0;
3. the SA gives a path from a client to every server on the Lustre partition with its SL, and none between two
   clients on Default (limited members), nor from a client to a server there (`saquery PR`);
4. OpenSM creates the Lustre partition's IPoIB broadcast group with its MTU and SL (`saquery -g`);
5. the real `ibnetdiscover` of the fabric, servers included, passes `fabricgen verify` (every planned cable found).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.external.ibsim import Deadline, mc_groups
from tests.external.infiniband.test_opensm_ibsim import (
    DEFAULT_PKEY,
    FULL,
    Booted,
    Case,
    _paths,
    bring_up,
    guid_lines,
    tail,
    tools,
    verify,
)

pytestmark = pytest.mark.external

__all__ = ["tools"]  # the fixture, shared with test_opensm_ibsim.py

LUSTRE = 0x0010
LUSTRE_SL = 2
STORAGE = Case("ib-storage", REPO / "tests/data/infiniband/storage-fabric.yaml", "storage",
               pkeys={}, swap=("", ""))


@pytest.fixture(scope="module")
def storage(tmp_path_factory: pytest.TempPathFactory, tools: dict[str, str]) -> Iterator[Booted]:
    with bring_up(STORAGE, tmp_path_factory.mktemp(STORAGE.name), tools) as booted_fabric:
        yield booted_fabric


@pytest.fixture
def budget(request: pytest.FixtureRequest) -> Deadline:
    return Deadline(60.0, request.node.name)


def _roles(fabric: Booted) -> dict[str, str]:
    """HCA description -> its node profile's role."""
    roles = {n.name: n.profile.role for n in fabric.cluster.nodes}
    return {desc: roles[desc.split(" ")[0]] for desc in fabric.ports}


def _of(fabric: Booted, *roles: str) -> list[str]:
    return sorted(desc for desc, role in _roles(fabric).items() if role in roles)


def test_servers_are_ftree_io_nodes_not_compute_nodes(storage: Booted) -> None:
    run = storage.opensm
    assert run.subnet_up, tail(run)
    assert run.lines("ftree tables configured on all switches"), tail(run)
    assert not [line for line in run.log.splitlines() if "minhop" in line.lower()], "fell back to minhop"
    by_guid = {guid: desc for desc, (_, guid) in storage.ports.items()}
    cns = {by_guid[int(g, 16)] for g in guid_lines(storage.fabric_dir / "cn-guids.conf")}
    ios = {by_guid[int(g, 16)] for g in guid_lines(storage.fabric_dir / "io-guids.conf")}
    clients, others = _of(storage, "compute"), _of(storage, "storage", "management")
    assert sorted(cns) == clients and len(clients) == 16
    assert sorted(ios) == others and any(d.startswith("oss") for d in ios)
    cas = len(storage.net.cas)
    assert run.lines(f"Fabric has {cas} CAs, {cas} CA ports ({len(clients)} of them CNs)"), tail(run)


def test_clients_and_servers_hold_lustre_at_index_0(storage: Booted) -> None:
    for desc in _of(storage, "compute", "storage"):
        table = storage.tables[desc]
        assert table[0] == FULL | LUSTRE, (desc, [hex(k) for k in table])
        assert [k for k in table if k & 0x7FFF == DEFAULT_PKEY] == [DEFAULT_PKEY], (desc, "Default limited")
    for desc in _of(storage, "management"):
        assert storage.tables[desc][0] & 0x7FFF == DEFAULT_PKEY, (desc, "the SM hosts keep Default at index 0")


def test_clients_reach_every_server_on_lustre_only(storage: Booted, tools: dict[str, str], budget: Deadline) -> None:
    clients, servers = _of(storage, "compute"), _of(storage, "storage")
    for server in servers:
        paths = _paths(storage, tools["saquery"], clients[0], server, LUSTRE, budget.left(20))
        assert paths and {p["sl"] for p in paths} == {LUSTRE_SL}, (server, paths)
        assert {p["pkey"] for p in paths} == {FULL | LUSTRE}
        assert _paths(storage, tools["saquery"], clients[0], server, DEFAULT_PKEY, budget.left(20)) == [], server
    assert _paths(storage, tools["saquery"], clients[0], clients[-1], DEFAULT_PKEY, budget.left(20)) == []


def test_lustre_has_its_broadcast_group(storage: Booted, tools: dict[str, str], budget: Deadline) -> None:
    client = storage.net.by_description(_of(storage, "compute")[0]).id
    groups = {g.pkey: g for g in mc_groups(storage.sim.run([tools["saquery"], "-g"], timeout=budget.left(30),
                                                           host=client).stdout)}
    group = groups[FULL | LUSTRE]
    assert group.mgid == f"ff12:401b:{FULL | LUSTRE:x}::ffff:ffff"
    assert (group.mtu, group.sl) == (5, LUSTRE_SL), group  # 4096 bytes


def test_discovered_storage_fabric_matches_the_plan(storage: Booted, tools: dict[str, str], budget: Deadline,
                                                    tmp_path: Path) -> None:
    found = tmp_path / "ibnetdiscover.txt"
    found.write_text(storage.sim.run([tools["ibnetdiscover"]], timeout=budget.left(30)).stdout)
    report = verify(STORAGE.spec, found, STORAGE.fabric, timeout=budget.left(40))
    assert report.returncode == 0 and "the fabric matches the plan" in report.stdout, report.stdout + report.stderr
