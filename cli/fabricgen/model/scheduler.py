"""What the cluster's schedulers are told about the fabric: which fabric their topology follows, and Slurm's
block sizes when the spec pins them."""

from __future__ import annotations

from dataclasses import dataclass, field

from fabricgen.core.errors import SourcePosition


@dataclass(frozen=True)
class Scheduler:
    """The ``scheduler`` section: the fabric whose tree the schedulers see (the compute fabric NCCL runs on) and
    Slurm's ``BlockSizes`` (empty: derived from the plan)."""

    fabric: str
    block_sizes: tuple[int, ...]
    position: SourcePosition = field(compare=False)  # of ``fabric`` (or the section)
    block_sizes_position: SourcePosition | None = field(default=None, compare=False)
