"""Stage 6, render: one renderer per target, each a pure function of the cluster model and its topology.

A new target is one module here plus its templates, registered in :data:`RENDERERS` below.

Because renderers are pure, large clusters render them in parallel: worker processes forked after compile
share the compiled topology copy-on-write and return only their artifacts (on 2 cores this takes the
16,384-GPU render from ~3.1 s to the ~1.8 s of its slowest target, the XLSX workbook).
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Protocol

from fabricgen.core.artifacts import Artifact
from fabricgen.core.gcpause import without_gc
from fabricgen.features.addressing import render as address_plan
from fabricgen.features.cabling import diagram
from fabricgen.features.cabling import sheets as cable_sheets
from fabricgen.features.cabling import workbook as cable_workbook
from fabricgen.features.cloud import render as pulumi_project
from fabricgen.features.ethernet import host_roce
from fabricgen.features.ethernet.nos import eos, nvue, sonic
from fabricgen.features.infiniband import ipoib as host_ipoib
from fabricgen.features.infiniband import render as infiniband
from fabricgen.features.kubernetes import render as kubernetes
from fabricgen.features.kubernetes import storage as k8s_storage
from fabricgen.features.lustre import render as lustre
from fabricgen.features.nccl import render as nccl
from fabricgen.features.sriov import render as host_sriov
from fabricgen.features.topology import render as topology_dump
from fabricgen.model.topology import Topology


class Renderer(Protocol):
    """A target: maps the compiled topology (which carries the cluster model) to artifacts."""

    def __call__(self, topology: Topology) -> Sequence[Artifact]: ...


# The registry, in output order. Renderers are independent: the order only fixes the artifact listing.
RENDERERS: dict[str, Renderer] = {
    "workbook": cable_workbook.render,  # slowest first, so a parallel render starts it first
    "cabling": cable_sheets.render,
    "topology": topology_dump.render,
    "addressing": address_plan.render,
    "diagram": diagram.render,
    "infiniband": infiniband.render,
    "nccl": nccl.render,
    "host-roce": host_roce.render,
    "host-ipoib": host_ipoib.render,
    "host-sriov": host_sriov.render,
    "kubernetes": kubernetes.render,
    "eos": eos.render,
    "sonic": sonic.render,
    "nvue": nvue.render,
    "pulumi": pulumi_project.render,
    "lustre": lustre.render,
    "k8s-storage": k8s_storage.render,
}
# A cloud cluster has no racks, switches or cables: only these targets apply to it.
CLOUD_TARGETS = ("pulumi", "nccl")
PARALLEL_MIN_LINKS = 20_000  # below this, forking costs more than it saves

_forked_topology: Topology | None = None  # set just before forking; read by the workers


def _render_in_worker(name: str) -> Sequence[Artifact]:
    assert _forked_topology is not None
    return RENDERERS[name](_forked_topology)


def _render_parallel(topology: Topology, names: Sequence[str]) -> list[Sequence[Artifact]]:
    global _forked_topology
    _forked_topology = topology
    try:
        context = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(max_workers=min(len(names), os.cpu_count() or 1), mp_context=context) as pool:
            return list(pool.map(_render_in_worker, names))
    finally:
        _forked_topology = None


def _parallel(topology: Topology, names: Sequence[str]) -> bool:
    links = sum(len(f.links) for f in topology.fabrics)
    return (len(names) > 1 and links >= PARALLEL_MIN_LINKS and (os.cpu_count() or 1) > 1
            and "fork" in multiprocessing.get_all_start_methods())


@without_gc
def render(topology: Topology, targets: Sequence[str] | None = None) -> tuple[Artifact, ...]:
    """Run the chosen renderers (all by default) and return their artifacts sorted by path."""
    chosen = list(targets or (CLOUD_TARGETS if topology.cluster.cloud else RENDERERS))
    if _parallel(topology, chosen):
        outputs = _render_parallel(topology, chosen)
    else:
        outputs = [RENDERERS[name](topology) for name in chosen]
    artifacts = [a for output in outputs for a in output]
    paths = [a.path for a in artifacts]
    if len(set(paths)) != len(paths):
        raise ValueError("two renderers produced the same artifact path")
    return tuple(sorted(artifacts, key=lambda a: a.path))
