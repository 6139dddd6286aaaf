"""Storage servers on an InfiniBand storage fabric as the subnet manager's files see them (issue 16): ftree's I/O
nodes, never its compute nodes, full members of the partition carrying Lustre at P_Key index 0, their IPoIB address
(the LNet o2ib NID) on the parent interface. Booted on ibsim by tests/external/infiniband/test_opensm_ibsim_storage.py;
a server left out of every IPoIB partition is tests/negative/sm-storage-server-off-ipoib.yaml."""

from __future__ import annotations

import pytest

from fabricgen.features.infiniband.view import ib_fabric
from fabricgen.pipeline import Compiled, compile_spec, render_spec
from tests.conftest import REPO

STORAGE_FABRIC = REPO / "tests/data/infiniband/storage-fabric.yaml"


@pytest.fixture(scope="module")
def compiled() -> Compiled:
    return compile_spec(STORAGE_FABRIC)


@pytest.fixture(scope="module")
def files(compiled: Compiled) -> dict[str, str]:
    return {a.path: a.content.decode() for a in render_spec(compiled, ["infiniband", "host-ipoib"])}


def _guids(text: str) -> set[int]:
    return {int(line, 16) for line in text.splitlines() if line.startswith("0x")}


def test_servers_are_io_nodes_and_only_compute_nodes_are_cns(compiled: Compiled, files: dict[str, str]) -> None:
    topology = compiled.topology
    ib = ib_fabric(topology, topology.fabric("storage"))
    role = {n.name: n.profile.role for n in topology.cluster.nodes}
    by_role: dict[str, set[int]] = {}
    for hca in ib.hcas:
        assert hca.port_guid is not None
        by_role.setdefault(role[hca.description.split(" ")[0]], set()).add(hca.port_guid)
    cns, ios = _guids(files["infiniband/storage/cn-guids.conf"]), _guids(files["infiniband/storage/io-guids.conf"])
    assert cns == by_role["compute"] and len(cns) == 16
    assert ios == by_role["storage"] | by_role["management"] and len(by_role["storage"]) == 8
    assert "management nodes (UFM, SM hosts) and storage servers" in files["infiniband/storage/io-guids.conf"]
    conf = files["infiniband/storage/opensm.conf"]
    assert "io_guid_file /etc/opensm/io-guids.conf" in conf and "12 HCA ports of management nodes" in conf


def test_servers_carry_lustre_at_index_0_on_the_parent(compiled: Compiled, files: dict[str, str]) -> None:
    sm = compiled.topology.fabric("storage").fabric.subnet_manager
    assert sm is not None
    servers = [n for n in compiled.topology.cluster.nodes if n.profile.role == "storage"]
    assert len(servers) == 4
    for node in servers:
        for nic in node.profile.storage:
            partition = sm.index0_partition(node, nic)
            assert partition is not None and partition.name == "lustre", (node.name, nic.dev)
        netplan = files[f"hosts/{node.name}/netplan-ipoib.yaml"]
        assert "partition lustre (0x0010) at P_Key index 0, on the parent" in netplan
    assert not [p for p in files if p.endswith("nccl.env")], "no NCCL on a storage fabric"
