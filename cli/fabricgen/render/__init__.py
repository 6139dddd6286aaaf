"""Stage 6, render: one renderer per target, each a pure function of the cluster model and its topology.

A new target is one module here plus its templates, registered in :data:`RENDERERS` below.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from fabricgen.artifacts import Artifact
from fabricgen.gcpause import without_gc
from fabricgen.render import cable_sheets, diagram, topology_dump
from fabricgen.topology import Topology


class Renderer(Protocol):
    """A target: maps the compiled topology (which carries the cluster model) to artifacts."""

    def __call__(self, topology: Topology) -> Sequence[Artifact]: ...


# The registry, in output order. Renderers are independent: the order only fixes the artifact listing.
RENDERERS: dict[str, Renderer] = {
    "topology": topology_dump.render,
    "cabling": cable_sheets.render,
    "diagram": diagram.render,
}


@without_gc
def render(topology: Topology, targets: Sequence[str] | None = None) -> tuple[Artifact, ...]:
    """Run the chosen renderers (all by default) and return their artifacts sorted by path."""
    chosen = targets or list(RENDERERS)
    artifacts = [a for name in chosen for a in RENDERERS[name](topology)]
    paths = [a.path for a in artifacts]
    if len(set(paths)) != len(paths):
        raise ValueError("two renderers produced the same artifact path")
    return tuple(sorted(artifacts, key=lambda a: a.path))
