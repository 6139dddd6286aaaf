"""What the cross-layer check's tests share (tests/unit/features/*/test_readback.py, tests/unit/test_pipeline.py):
one artifact changed, and the check's findings as text."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from fabricgen.core.artifacts import Artifact
from fabricgen.pipeline import Compiled
from fabricgen.stages.readback import check_artifacts


def mutate(artifacts: tuple[Artifact, ...], suffix: str, change: Callable[[bytes], bytes]) -> tuple[Artifact, ...]:
    """The artifacts with the first one whose path ends in ``suffix`` changed."""
    first = next(a.path for a in artifacts if a.path.endswith(suffix))
    return tuple(dataclasses.replace(a, content=change(a.content)) if a.path == first else a for a in artifacts)


def messages(compiled: Compiled, artifacts: tuple[Artifact, ...]) -> list[str]:
    """Every finding of the cross-layer check over ``artifacts``, as text."""
    return [str(f) for f in check_artifacts(compiled.topology, artifacts)]
