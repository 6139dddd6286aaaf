"""The render stage: a parallel render gives the serial render's bytes; targets that share a view render in one
worker, so the view (``Topology.shared``) is computed once."""

from __future__ import annotations

import pytest

from fabricgen.features.cabling.handoff import row_sheets
from fabricgen.model.topology import Topology
from fabricgen.pipeline import compile_spec
from fabricgen.stages import render as stage
from tests.conftest import INVENTORIES


@pytest.fixture(scope="module")
def topology() -> Topology:
    return compile_spec(INVENTORIES / "h100-4su.yaml").topology


def test_parallel_render_gives_the_serial_bytes(topology: Topology, monkeypatch: pytest.MonkeyPatch) -> None:
    serial = stage.render(topology)
    monkeypatch.setattr(stage, "PARALLEL_MIN_LINKS", 0)
    assert stage._parallel(topology, list(stage.TARGETS))
    parallel = stage.render(topology)
    assert [(a.path, a.content) for a in parallel] == [(a.path, a.content) for a in serial]


def test_targets_that_share_a_view_render_in_one_group_the_rest_each_alone() -> None:
    groups = stage._groups(list(stage.TARGETS))
    assert groups[0] == ["workbook", "print"]  # the cable sheets' rows, computed once; the slowest, started first
    assert sorted(n for g in groups for n in g) == sorted(stage.TARGETS)
    assert all(len(g) == 1 for g in groups[1:])
    assert stage._groups(["sonic", "print", "eos", "workbook"]) == [["sonic"], ["print", "workbook"], ["eos"]]


def test_a_shared_view_is_computed_once_per_topology(topology: Topology) -> None:
    calls: list[Topology] = []

    def view(t: Topology) -> int:
        calls.append(t)
        return len(t.cables)

    assert topology.shared(view) == topology.shared(view) == len(topology.cables)
    assert calls == [topology]
    assert topology.shared(row_sheets) is topology.shared(row_sheets)  # the workbook's and the PDFs' rows
