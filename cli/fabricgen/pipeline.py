"""The pipeline in one place: load -> validate -> build -> compile -> check -> render -> cross-layer check.

Each step is a stage module; this module only wires them in order so the CLI, tests and the benchmark run the
same code path. Nothing here touches the output directory: plan and apply do.

The stages are imported where they run: a plan whose inputs are the last apply's (`loaded`, `input_digest_now`)
compiles nothing, and importing the stages imports every feature (~0.3 s of the ~0.4 s such a plan took).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from fabricgen.core import inputs
from fabricgen.core.artifacts import Artifact
from fabricgen.core.document import Document
from fabricgen.core.errors import CheckError, Finding, Severity, SpecError
from fabricgen.core.reuse import Offer
from fabricgen.model.cluster import Cluster
from fabricgen.model.topology import Topology
from fabricgen.spec.load import load_file


@dataclass(frozen=True)
class Compiled:
    """A spec that passed validation and checks: the model, its topology and the (warning) findings."""

    document: Document
    cluster: Cluster
    topology: Topology
    findings: tuple[Finding, ...]
    named_files: tuple[tuple[str, str], ...] = ()  # files the spec names (GUID inventories): relative path, sha256

    @property
    def warnings(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.severity is Severity.WARNING)

    def input_digest(self, tool_version: str) -> str:
        """Everything this compile read, as the lock records it (:mod:`fabricgen.core.inputs`)."""
        return inputs.input_digest(self.document.digest, dict(self.named_files), tool_version)


Step = Callable[[str], None]
"""Told what the pipeline starts next (the CLI's progress line); a no-op by default."""


def _quiet(_: str) -> None:
    pass


def compile_spec(path: Path, step: Step = _quiet) -> Compiled:
    """Load, validate, build, compile and check a spec; raise SpecError or CheckError on any error."""
    from fabricgen.stages.build import build_cluster
    from fabricgen.stages.check import run_checks
    from fabricgen.stages.compile import compile_topology

    with inputs.recording(path) as named:
        step(f"loading {path}")
        document = load_file(path)
        step("validating the spec and building the cluster model")
        cluster = build_cluster(document)
        step(f"compiling the topology of {len(cluster.nodes)} nodes")
        topology = compile_topology(cluster)
        step(f"checking {sum(len(f.links) for f in topology.fabrics)} links")
        findings = run_checks(topology)
    if any(f.severity is Severity.ERROR for f in findings):
        raise CheckError(findings)
    # compile completes the model (server NIDs), hence topology.cluster
    return Compiled(document, topology.cluster, topology, findings, tuple(sorted(named.items())))


def loaded(path: Path) -> Document | None:
    """The spec parsed (not validated), or None when it cannot be read or parsed: the full path reports why."""
    try:
        return load_file(path)
    except SpecError:
        return None


def input_digest_now(document: Document, named_files: Sequence[str], tool_version: str) -> str:
    """The input digest a compile of ``document`` would record, from the spec's bytes and, read again now, the
    files a previous compile found it names (their names come from the spec's bytes, which are in the digest)."""
    path = Path(document.source)
    files = {rel: inputs.read_named_file(path, rel, inputs.MAX_NAMED_FILE_BYTES) for rel in named_files}
    return inputs.input_digest(document.digest, files, tool_version)


def render_spec(compiled: Compiled, targets: Sequence[str] | None = None, step: Step = _quiet,
                prior: Mapping[str, bytes] | None = None) -> tuple[Artifact, ...]:
    """Render every (or the chosen) target, then check the lossless chain across what was rendered. ``prior``:
    bytes the last apply wrote, by render key (:func:`fabricgen.outdir.lastrun.prior_renders`), which a
    serializer whose input is unchanged takes again; the keys are made with fabricgen's code fingerprint, so a
    byte of code, data or template changed since makes none match."""
    from fabricgen.stages.readback import check_artifacts
    from fabricgen.stages.render import render

    step("rendering the artifacts")
    artifacts = render(compiled.topology, targets, Offer(inputs.code_fingerprint(), prior or {}))
    step(f"reading back {len(artifacts)} artifacts")
    findings = check_artifacts(compiled.topology, artifacts)
    if any(f.severity is Severity.ERROR for f in findings):
        raise CheckError(findings)
    return artifacts
