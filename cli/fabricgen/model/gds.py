"""GPUDirect Storage of a node profile: what its GPUs read and write directly (Lustre file systems, the local NVMe
tier) and the cuFile settings of its /etc/cufile.json."""

from __future__ import annotations

from dataclasses import dataclass, field

from fabricgen.core.errors import SourcePosition


@dataclass(frozen=True)
class GdsProfile:
    """GDS on the nodes of ``profile``: through ``filesystems`` (names of the lustre section) and, with ``nvme``,
    the profile's local NVMe; ``properties`` are cufile.json's ``properties`` in NVIDIA's order."""

    profile: str
    lustre_client: str  # "" when GDS reads no Lustre file system
    filesystems: tuple[str, ...]
    nvme: bool
    properties: tuple[tuple[str, int | bool], ...]
    posix_unaligned_writes: bool
    posix_gds_min_kb: int
    logging_level: str
    position: SourcePosition = field(compare=False)
