"""A loaded spec document: its data, where every node of it came from, and the issues that point there.

The loader (:mod:`fabricgen.spec.load`) makes it; every later stage reports a problem through it so that each
message carries the file:line:col of the spec node at fault.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from fabricgen.core.errors import SourcePosition, SpecIssue

PathKey = tuple[str | int, ...]


def format_path(path: PathKey) -> str:
    """Render a data path the way errors print it: ``fabrics.compute.topology`` or ``nodes[0].count``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out


@dataclass(frozen=True)
class Document:
    """A loaded spec: its data, its source name, a digest of its bytes, and positions for every path."""

    data: Any
    source: str
    digest: str
    value_positions: Mapping[PathKey, SourcePosition] = field(repr=False)
    key_positions: Mapping[PathKey, SourcePosition] = field(repr=False)

    def position(self, path: PathKey) -> SourcePosition:
        """Best position for a path: the key's line, else the value's, else the nearest ancestor's."""
        for n in range(len(path), -1, -1):
            prefix = path[:n]
            found = self.key_positions.get(prefix) or self.value_positions.get(prefix)
            if found is not None:
                return found
        return SourcePosition(self.source, 1, 1)

    def value_position(self, path: PathKey) -> SourcePosition:
        """Position of the value itself (for a mapping: its first key), falling back to :meth:`position`."""
        return self.value_positions.get(path) or self.position(path)

    def issue(self, path: PathKey, message: str, hint: str = "") -> SpecIssue:
        return SpecIssue(self.position(path), format_path(path), message, hint)
