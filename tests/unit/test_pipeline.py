"""The pipeline wires the cross-layer check into render_spec: an inconsistent plan is refused, not rendered."""

from __future__ import annotations

import pytest

from fabricgen.core.artifacts import Artifact
from fabricgen.core.errors import CheckError
from fabricgen.pipeline import compile_spec, render_spec
from tests.conftest import INVENTORIES
from tests.helpers.readback import mutate as _mutate


def test_render_spec_refuses_an_inconsistent_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    import fabricgen.stages.render as stage  # the pipeline imports its stages where they run

    original = stage.render

    def sabotaged(topology: object, targets: object = None, offer: object = None) -> tuple[Artifact, ...]:
        artifacts = original(topology, targets, offer)  # type: ignore[arg-type]
        return _mutate(artifacts, "dgx-h100/roce-qos.sh", lambda c: c.replace(b"'9000'", b"'9216'"))

    monkeypatch.setattr(stage, "render", sabotaged)
    with pytest.raises(CheckError) as caught:
        render_spec(compile_spec(INVENTORIES / "h100-4su.yaml"))
    assert "host MTU is 9216, the fabric's host MTU is 9000" in str(caught.value)
