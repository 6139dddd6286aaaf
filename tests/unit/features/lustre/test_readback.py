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
