"""The cross-layer check on lnet.conf: LNet's o2iblnd ToS on the RoCE storage fabric must carry its lossless DSCP."""

from __future__ import annotations

import pytest

from fabricgen.core.artifacts import Artifact
from fabricgen.pipeline import Compiled, compile_spec
from fabricgen.stages.render import render
from tests.conftest import INVENTORIES
from tests.helpers.readback import messages as _messages
from tests.helpers.readback import mutate as _mutate


@pytest.fixture(scope="module")
def h100() -> tuple[Compiled, tuple[Artifact, ...]]:
    compiled = compile_spec(INVENTORIES / "h100-4su.yaml")
    return compiled, render(compiled.topology)


def test_lustre_tos_must_carry_the_lossless_dscp(h100: tuple[Compiled, tuple[Artifact, ...]]) -> None:
    """lnet.conf's o2iblnd ToS on the RoCE storage fabric: DSCP 26 << 2 | ECT(0) passes; another DSCP, none, or
    Not-ECT (104: WRED on the lossless queue drops instead of marking) is refused."""
    compiled, artifacts = h100
    assert b"tos: 106" in next(a.content for a in artifacts if a.path.endswith("lustre/lnet.conf"))
    wrong = _messages(compiled, _mutate(artifacts, "lustre/lnet.conf", lambda c: c.replace(b"tos: 106", b"tos: 0")))
    assert wrong and all("LNet ToS 0 (DSCP 0) but fabric storage's lossless DSCP is 26 with ECT(0)" in m
                         for m in wrong)
    not_ect = _messages(compiled, _mutate(artifacts, "lustre/lnet.conf",
                                          lambda c: c.replace(b"tos: 106", b"tos: 104")))
    assert not_ect and all("LNet ToS 104 (DSCP 26)" in m for m in not_ect)
    missing = _messages(compiled, _mutate(artifacts, "lustre/lnet.conf", lambda c: c.replace(b"tos: 106", b"x: 1")))
    assert missing and all("LNet ToS None" in m for m in missing)


def test_servers_lnet_nids_are_the_planned_ones(h100: tuple[Compiled, tuple[Artifact, ...]]) -> None:
    """Each Lustre server's LNet NIs over its netplan give exactly its planned NIDs, each port with its own source
    rule: the example passes; a port moved to another address, a missing rule or an NI on the wrong port fail."""
    compiled, artifacts = h100
    assert _messages(compiled, artifacts) == []
    moved = _messages(compiled, _mutate(artifacts, "hosts/mds01/netplan-roce.yaml",
                                        lambda c: c.replace(b"10.20.0.193", b"10.20.1.194")))
    assert any("LNet would give mds01 the NIDs 10.20.0.65@o2ib, 10.20.1.194@o2ib (lnet.conf over its netplan), but "
               "clients mount and targets are formatted with 10.20.0.65@o2ib, 10.20.0.193@o2ib" in m for m in moved)
    norule = _messages(compiled, _mutate(artifacts, "hosts/oss01/netplan-roce.yaml",
                                         lambda c: c.replace(b"- from: 10.20.0.63\n", b"- from: 1.2.3.4\n")))
    assert norule and all("oss01 enp65s0f0np0: LNet interface enp65s0f0np0 (10.20.0.63) has no source rule" in m
                          for m in norule)
    swapped = _messages(compiled, _mutate(artifacts, "hosts/lustre-server/lustre/lnet.conf",
                                          lambda c: c.replace(b"0: enp65s0f1np1", b"0: enp65s0f0np0")))
    assert len([m for m in swapped if "lustre-server-lnet" in m]) == 12, "every server, both file systems"


def test_lnet_interfaces_are_roce_qos_ports(h100: tuple[Compiled, tuple[Artifact, ...]]) -> None:
    """Every LNet NI of a server (and client) profile on the RoCE fabric is a port its roce-qos.sh configures
    (lossless class, ARP and link-down sysctls): a port left out of the script is found."""
    compiled, artifacts = h100
    dropped = _messages(compiled, _mutate(artifacts, "hosts/lustre-server/roce-qos.sh",
                                          lambda c: c.replace(b"configure 'enp65s0f1np1'", b"# configure 'x'")))
    assert [m.split(": ", 1)[1] for m in dropped] == [
                       "error: [lossless-chain] hosts/lustre-server/lustre/lnet.conf "
                       "o2ib enp65s0f1np1: LNet interface enp65s0f1np1 is not a port roce-qos.sh configures (hint: "
                       "without it the port has no lossless class and no per-port ARP sysctls: a multi-homed node "
                       "answers ARP for one port's address on the other)"]
