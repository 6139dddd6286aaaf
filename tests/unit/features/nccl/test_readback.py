"""The cross-layer check on nccl.env: NCCL's traffic class on a RoCE compute fabric must carry the lossless DSCP."""

from __future__ import annotations

from pathlib import Path

from fabricgen.pipeline import compile_spec, render_spec
from tests.conftest import INVENTORIES
from tests.helpers.readback import messages as _messages
from tests.helpers.readback import mutate as _mutate


def test_nccl_traffic_class_must_carry_the_lossless_dscp(tmp_path: Path) -> None:
    text = (INVENTORIES / "lab-1su.yaml").read_text()
    start, end = text.index("  compute:\n"), text.index("  storage:\n")
    roce = ("  compute:\n    type: roce\n    speed: 200G\n    switch: SN4700\n"
            "    topology: {kind: rail-optimized, scalable_unit: 8}\n"
            "    addressing: {hosts: 10.60.0.0/20, p2p: 10.61.0.0/22, loopbacks: 10.62.0.0/26}\n")
    spec = tmp_path / "roce.yaml"
    spec.write_text(text[:start] + roce + text[end:])
    compiled = compile_spec(spec)
    artifacts = render_spec(compiled)  # consistent as generated
    found = _messages(compiled, _mutate(artifacts, "nccl.env", lambda c: c.replace(b"NCCL_IB_TC=106", b"NCCL_IB_TC=0")))
    assert any("NCCL_IB_TC 0 carries DSCP 0, but the switches treat DSCP 26 as lossless" in m for m in found)
    assert any("ECN bits 00, not ECT(0)" in m for m in found)
