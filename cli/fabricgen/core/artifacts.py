"""The unit every renderer produces and plan/apply consume."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

# Relative POSIX paths made of safe segments only: no "..", no absolute paths, no shell or glob characters.
_SEGMENT = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]*$")


def is_safe_relative_path(path: str) -> bool:
    """True when ``path`` is a relative POSIX path whose every segment is a plain file name."""
    parts = path.split("/")
    return bool(path) and all(_SEGMENT.fullmatch(p) and p not in {".", ".."} for p in parts)


@dataclass(frozen=True)
class Artifact:
    """One output file: a path relative to the output directory, its bytes and its permission bits."""

    path: str
    content: bytes = field(repr=False)
    mode: int = 0o644

    def __post_init__(self) -> None:
        if not is_safe_relative_path(self.path):
            raise ValueError(f"unsafe artifact path {self.path!r}")
        if self.mode not in (0o644, 0o755):
            raise ValueError(f"artifact {self.path}: mode must be 0644 or 0755, not {self.mode:o}")

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.content).hexdigest()
