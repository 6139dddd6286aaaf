"""What a feature is: the one record each domain package exports, and what the stages hand to its parts.

A feature is a domain of the cluster (cabling, InfiniBand, RoCE/Ethernet, Lustre ...). Its package holds its
spec-section builder, its checks, its renderers and its read-back of what it rendered; its ``__init__`` exports
one :class:`Feature` naming them. The stages (:mod:`fabricgen.stages`) know no domain: they run these parts of
every feature in :data:`fabricgen.features.registry.FEATURES` order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from fabricgen.core.artifacts import Artifact, Places, Table
from fabricgen.core.document import PathKey
from fabricgen.core.errors import Finding, Severity
from fabricgen.core.issues import Issues
from fabricgen.model.cluster import Cluster, Fabric
from fabricgen.model.hardware import NicModel, SwitchModel
from fabricgen.model.topology import Topology


@dataclass(frozen=True)
class BuildContext:
    """What the core build resolved, for the features that build their sections on top of it.

    ``data`` is the validated spec with the schema's defaults filled in; ``issues`` collects every problem
    against the spec document (the build raises them all at once at the end).
    """

    data: Mapping[str, Any]
    issues: Issues
    switch_models: Mapping[str, SwitchModel]
    nic_models: Mapping[str, NicModel]

    def fabric_spec(self, fabric: Fabric) -> tuple[PathKey, Mapping[str, Any]]:
        """The spec path and validated data of one fabric of the cluster."""
        return ("fabrics", fabric.name), self.data["fabrics"][fabric.name]


# The parts of a feature, each a pure function of what the stage before produced:
BuildStep = Callable[[BuildContext, Cluster], Cluster]
"""Adds a feature's spec section to the cluster the earlier steps built (a new frozen Cluster)."""
CompileStep = Callable[[Topology], Topology]
"""Adds a feature's plan (cables, addresses) to the compiled topology; raises SpecError when it cannot."""
Check = Callable[[Topology], Iterable[Finding]]
"""Findings over the compiled topology (errors stop the pipeline, warnings are shown); O(links)."""
Renderer = Callable[[Topology], Sequence[Artifact]]
"""A target: the compiled topology (which carries the cluster model) to artifacts."""
Readback = Callable[[Topology, Mapping[str, Artifact]], Iterable[Finding]]
"""Findings over the artifacts as rendered (every feature's, by path), read back as their consumer would."""


@dataclass(frozen=True)
class Target:
    """A renderer under the name ``--target`` and the registry know it by.

    ``cloud``: it also renders for a cloud cluster (which has no racks, switches or cables); every target
    renders for an on-premises one and returns nothing where its domain is absent. ``shares``: targets with the
    same key render in one worker of a parallel render, in turn, so a view they all read through
    ``Topology.shared`` is computed once (the workbook and the PDFs print the same cable sheets' rows).
    """

    name: str
    render: Renderer
    cloud: bool = False
    shares: str = ""


@dataclass(frozen=True)
class Feature:
    """One domain's parts, each optional; the stages derive their registries from these records.

    ``cluster_section``: a top-level spec section that, when present, describes the whole cluster in place of
    facility, nodes and fabrics (a cloud cluster); the build then runs only this feature's ``build``, on an
    empty cluster. ``tables``: how plan names the rows of the feature's CSV artifacts (cables, addresses);
    ``places``: where its artifacts say each device stands, by which plan tells a renamed device.
    """

    name: str
    build: BuildStep | None = None
    compile: CompileStep | None = None
    checks: tuple[Check, ...] = ()
    targets: tuple[Target, ...] = ()
    readback: Readback | None = None
    cluster_section: str = ""
    tables: tuple[Table, ...] = ()
    places: tuple[Places, ...] = ()


def per_fabric(build: Callable[[BuildContext, Cluster, Fabric], Fabric]) -> BuildStep:
    """A build step that rebuilds every fabric of the cluster with ``build`` (fabric sections)."""

    def step(context: BuildContext, cluster: Cluster) -> Cluster:
        return replace(cluster, fabrics=tuple(build(context, cluster, fabric) for fabric in cluster.fabrics))

    return step


def fabric_error(fabric: Fabric, check: str, subject: str, message: str, hint: str = "") -> Finding:
    """An error finding about one fabric, positioned at its topology in the spec."""
    return Finding(Severity.ERROR, check, subject, message, hint, fabric.position)


def fabric_warning(fabric: Fabric, check: str, subject: str, message: str, hint: str = "") -> Finding:
    """A warning finding about one fabric, positioned at its topology in the spec."""
    return Finding(Severity.WARNING, check, subject, message, hint, fabric.position)


def mismatch(subject: str, message: str, fabric: Fabric, hint: str = "") -> Finding:
    """A break in a RoCE fabric's lossless chain, as the read-backs of hosts, NCCL, Lustre and switches report it."""
    return fabric_error(fabric, "lossless-chain", subject, message, hint)
