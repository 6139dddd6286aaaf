"""The ``nccl`` section: NCCL options the spec sets for its IB-verbs transport (InfiniBand and RoCE)."""

from __future__ import annotations

from dataclasses import dataclass, field

from fabricgen.core.errors import SourcePosition


@dataclass(frozen=True)
class NcclOption:
    """One NCCL environment variable the spec sets, with what it means (for nccl.env's comment)."""

    env: str
    value: int
    why: str
    position: SourcePosition = field(compare=False)
