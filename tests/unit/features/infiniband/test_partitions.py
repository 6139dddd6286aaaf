"""The partition model: which partition carries NCCL and IPoIB on each port, at which P_Key index, on which SL; the
VF GUIDs their pods use; the read-back that refuses files disagreeing on any of it. The checks that refuse a cluster
that cannot communicate are negative cases (tests/negative/sm-*.yaml); OpenSM itself programs the tables in
tests/external/infiniband/test_opensm_ibsim.py."""

from __future__ import annotations

import re

import pytest

from fabricgen.core.artifacts import Artifact
from fabricgen.features.infiniband.readback import partitions_read, readback, sa_sl
from fabricgen.model.topology import Topology
from fabricgen.pipeline import Compiled, compile_spec, render_spec
from tests.conftest import INVENTORIES, REPO

LAB = INVENTORIES / "lab-1su.yaml"
MULTI_TENANT = REPO / "tests/data/infiniband/multi-tenant.yaml"


@pytest.fixture(scope="module")
def compiled() -> Compiled:
    return compile_spec(MULTI_TENANT)


@pytest.fixture(scope="module")
def multi(compiled: Compiled) -> Topology:
    return compiled.topology


@pytest.fixture(scope="module")
def artifacts(compiled: Compiled) -> dict[str, Artifact]:
    return {a.path: a for a in render_spec(compiled)}


def test_each_port_gets_its_tenant_at_index_0(multi: Topology) -> None:
    fabric = multi.fabric("compute").fabric
    sm = fabric.subnet_manager
    assert sm is not None
    by_name = {p.name: p for p in sm.partitions}
    assert sm.partitions[0].name == "Default", "Default first"
    assert {n: (p.index0, p.sl) for n, p in by_name.items()} == {
        "Default": (False, 0), "tenant-a": (True, 1), "tenant-b": (True, 1), "ipoib-a": (False, 2),
        "ipoib-b": (False, 2), "services": (False, 2)}
    nodes = {n.name: n for n in multi.cluster.nodes}
    alpha, beta, sm01 = nodes["alpha03"], nodes["beta01"], nodes["sm01"]
    nic = alpha.profile.compute[5]
    assert sm.compute_partition(alpha, nic) == sm.index0_partition(alpha, nic) == by_name["tenant-a"]
    assert sm.ipoib_partition(alpha, nic) == by_name["ipoib-a"]
    services = by_name["services"]  # the tenants limited, the service nodes (SM hosts) full
    assert services.has_member(alpha, nic) and not services.full_member(alpha, nic)
    assert services.full_member(sm01, sm01.profile.compute[0])
    assert sm.compute_partition(beta, beta.profile.compute[0]) == by_name["tenant-b"]
    assert sm.compute_partition(sm01, sm01.profile.compute[0]) is None
    assert sm.index0_partition(sm01, sm01.profile.compute[0]) == by_name["Default"]


def test_default_is_added_full_when_the_spec_names_none() -> None:
    """Without a Default rule OpenSM would make every port a limited member of 0x7fff; fabricgen writes a full one,
    and NCCL runs on it at index 0."""
    sm = compile_spec(INVENTORIES / "h100-4su.yaml").topology.fabric("compute").fabric.subnet_manager
    assert sm is not None
    default = sm.partitions[0]
    assert (default.name, default.implicit, default.membership, default.members_all) == ("Default", True, "full", True)


def test_partitions_file_for_tenants(artifacts: dict[str, Artifact]) -> None:
    text = artifacts["infiniband/compute/partitions.conf"].content.decode()
    assert "tenant-a=0x0011, indx0, ipoib, mtu=5, sl=1, defmember=full :" in text
    # the switches and the SM keep Default at their index 0: a second definition without indx0
    assert "\ntenant-a=0x0011, ipoib, mtu=5, sl=1, defmember=full : ALL_SWITCHES=full, SELF=full ;\n" in text
    assert "services=0x0020, sl=2, defmember=full :" in text
    services = text.split("services=0x0020")[1]
    assert services.count("=limited") == 56 and services.count("=full") == 2 + 3  # sm01, sm02; switches, SELF
    read = partitions_read(text)
    assert sorted(read) == [0x11, 0x12, 0x20, 0x21, 0x22, 0x7FFF]
    assert (read[0x11].indx0, read[0x11].sl, read[0x20].indx0, read[0x20].sl) == (True, 1, False, 2)
    assert (read[0x7FFF].name, read[0x7FFF].indx0) == ("Default", False)


def test_sa_sl_follows_opensm_rule_order() -> None:
    """First matching pkey rule; a bare ipoib rule is 0x7fff; else the default rule; no policy: 0."""
    policy = "qos-ulps\n    default : 3\n    ipoib : 4\n    any, pkey 0x0011 : 1\n    ipoib, pkey 0x0020 : 2\n"
    assert [sa_sl(policy, k) for k in (0x11, 0x20, 0x7FFF, 0x99)] == [1, 2, 4, 3]
    assert sa_sl(None, 0x11) == 0


def test_nccl_for_a_profile_across_tenants(artifacts: dict[str, Artifact]) -> None:
    """Both tenants run the same profile: NCCL_IB_PKEY=0 suits both (indx0), UCX_IB_PKEY stays unset (its auto,
    the first full-member P_Key, is each tenant's index 0), one SL."""
    env = artifacts["hosts/hgx-8gpu-generic/nccl.env"].content.decode()
    settings = dict(line.split("=", 1) for line in env.splitlines() if line and not line.startswith("#"))
    assert (settings["NCCL_IB_PKEY"], settings["NCCL_IB_SL"], settings["UCX_IB_SL"]) == ("0", "1", "1")
    assert "UCX_IB_PKEY" not in settings and "UCX_IB_PKEY stays unset" in env
    assert not [p for p in artifacts if p.startswith("hosts/sm-server")], "management nodes run no NCCL"


def test_vf_guids_join_the_partition_their_pods_use() -> None:
    """h100-4su: 8 VFs on each of the 1016 DGX ports, each a full member of tenant-a (its PF's compute partition,
    which a pod sees at the VF's own P_Key index 0), with the GUIDs sriov-setup.sh sets."""
    h100 = {a.path: a for a in render_spec(compile_spec(INVENTORIES / "h100-4su.yaml"))}
    text = h100["infiniband/compute/partitions.conf.user_ext"].content.decode()
    rows = [line.split("\t") for line in h100["hosts/dgx-h100/sriov-vfs.tsv"].content.decode().splitlines()
            if line and not line.startswith("#")]
    vf_guids = {"0x" + row[3].replace(":", "") for row in rows if row[3].count(":") == 7}  # GUIDs, not MACs
    assert len(vf_guids) == 127 * 8 * 8
    members = set(re.findall(r"^\s+(0x[0-9a-f]{16})=full", text, re.M))
    assert vf_guids <= members and len(members) == 1016 + 2 + len(vf_guids)  # + sharp_am's UCX port on each UFM


def test_readback_refuses_files_that_disagree(multi: Topology, artifacts: dict[str, Artifact]) -> None:
    """An SL or P_Key index changed in one file is caught against the others."""
    assert list(readback(multi, artifacts)) == []
    path = "infiniband/compute/partitions.conf"
    bad = dict(artifacts)
    bad[path] = Artifact(path, artifacts[path].content.replace(b"services=0x0020, sl=2", b"services=0x0020, sl=0"))
    assert [f.message for f in readback(multi, bad)] == [
        "partition services (0x0020) has sl=0, but infiniband/compute/qos-policy.conf gives its paths SL 2"]
    env = "hosts/hgx-8gpu-generic/nccl.env"
    bad = dict(artifacts)
    bad[env] = Artifact(env, artifacts[env].content.replace(b"NCCL_IB_SL=1", b"NCCL_IB_SL=0"))
    assert {f.message for f in readback(multi, bad)} == {
        f"NCCL_IB_SL=0, but the subnet manager gives partition {t}'s paths SL 1" for t in ("tenant-a", "tenant-b")}
    bad = dict(artifacts)
    bad[path] = Artifact(path, artifacts[path].content.replace(b"tenant-a=0x0011, indx0,", b"tenant-a=0x0011,"))
    assert [f.message for f in readback(multi, bad)] == [
        f"NCCL uses P_Key index 0, but {path} does not put partition tenant-a (0x0011) there"]


def test_lab_keeps_default_limited_and_checks_pass() -> None:
    compiled = compile_spec(LAB)
    sm = compiled.topology.fabric("compute").fabric.subnet_manager
    assert sm is not None and sm.partitions[0].membership == "limited" and sm.compute == ("training",)
    assert [f for f in compiled.findings if f.check.startswith("ib-")] == []
