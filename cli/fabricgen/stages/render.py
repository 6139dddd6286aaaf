"""Stage 6, render: one renderer per target, each a pure function of the cluster model and its topology.

The targets are the features' (:attr:`Feature.targets`); a new one is a renderer in its feature's package, listed
in that feature's record.

Because renderers are pure, large clusters render them in parallel: worker processes forked after compile
share the compiled topology copy-on-write and return only their artifacts. The unit of work is a target, or
the targets that share a view (:attr:`Target.shares`: the workbook and the PDFs print the same cable sheets'
rows), which render in one worker, in turn, so the view is computed once. Grouping more than that (a feature's
targets in one worker) would put the cabling feature's ~half of the render CPU on one core.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor

from fabricgen.core.artifacts import Artifact, Places, Table
from fabricgen.core.gcpause import without_gc
from fabricgen.core.reuse import Offer, offered
from fabricgen.features.feature import Target
from fabricgen.features.registry import FEATURES
from fabricgen.model.topology import Topology

# Every feature's targets, by name, in FEATURES order (that order only schedules a parallel render).
TARGETS: dict[str, Target] = {target.name: target for feature in FEATURES for target in feature.targets}
# How plan names the rows of the features' CSV artifacts (cables, addresses), for its per-row listing.
TABLES: tuple[Table, ...] = tuple(table for feature in FEATURES for table in feature.tables)
# Where the features' artifacts say each device stands, by which plan tells a renamed device.
PLACES: tuple[Places, ...] = tuple(places for feature in FEATURES for places in feature.places)
PARALLEL_MIN_LINKS = 20_000  # below this, forking costs more than it saves

_forked_topology: Topology | None = None  # set just before forking; read by the workers


def _render_in_worker(names: Sequence[str]) -> list[Artifact]:
    assert _forked_topology is not None
    return [a for name in names for a in TARGETS[name].render(_forked_topology)]


def _groups(names: Sequence[str]) -> list[list[str]]:
    """The chosen targets, those that share a view together, in the order chosen (FEATURES order by default: the
    slowest, the cable sheets, first, so a parallel render starts them first)."""
    groups: dict[str, list[str]] = {}
    for name in names:
        groups.setdefault(TARGETS[name].shares or name, []).append(name)
    return list(groups.values())


def _render_parallel(topology: Topology, names: Sequence[str]) -> list[Sequence[Artifact]]:
    global _forked_topology
    _forked_topology = topology
    groups = _groups(names)
    try:
        context = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(max_workers=min(len(groups), os.cpu_count() or 1), mp_context=context) as pool:
            return list(pool.map(_render_in_worker, groups))
    finally:
        _forked_topology = None


def _parallel(topology: Topology, names: Sequence[str]) -> bool:
    links = sum(len(f.links) for f in topology.fabrics)
    return (len(_groups(names)) > 1 and links >= PARALLEL_MIN_LINKS and (os.cpu_count() or 1) > 1
            and "fork" in multiprocessing.get_all_start_methods())


@without_gc
def render(topology: Topology, targets: Sequence[str] | None = None, offer: Offer | None = None
           ) -> tuple[Artifact, ...]:
    """Run the chosen renderers (all by default) and return their artifacts sorted by path. ``offer``: the bytes
    the last apply wrote, by render key, for the serializers that key their input to take again
    (:mod:`fabricgen.core.reuse`); set before the fork, so the workers inherit it."""
    chosen = list(targets or (name for name, t in TARGETS.items() if t.cloud or topology.cluster.cloud is None))
    with offered(offer or Offer()):
        if _parallel(topology, chosen):
            outputs = _render_parallel(topology, chosen)
        else:
            outputs = [TARGETS[name].render(topology) for name in chosen]
    artifacts = [a for output in outputs for a in output]
    paths = [a.path for a in artifacts]
    if len(set(paths)) != len(paths):
        raise ValueError("two renderers produced the same artifact path")
    return tuple(sorted(artifacts, key=lambda a: a.path))
