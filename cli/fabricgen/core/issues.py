"""The one issue collector: every stage and feature reports spec problems through it, all raised together.

An :class:`Issues` knows the spec document and a path prefix; :meth:`Issues.at` hands out a narrower one for a
sub-section that shares the same list, so a builder of ``fabrics.<name>.sriov`` reports ``("vlan",)`` and the
message still says ``fabrics.<name>.sriov.vlan`` with the file:line of that node.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from fabricgen.core.document import Document, PathKey
from fabricgen.core.errors import SourcePosition, SpecError, SpecIssue


@dataclass(frozen=True)
class Issues:
    """Spec issues found so far, against ``doc``, for paths under ``prefix``."""

    doc: Document
    prefix: PathKey = ()
    found: list[SpecIssue] = field(default_factory=list)

    def at(self, *where: str | int) -> Issues:
        """The same collector for a sub-section: paths given to it are relative to ``prefix + where``."""
        return Issues(self.doc, (*self.prefix, *where), self.found)

    def root(self) -> Issues:
        """The same collector for paths from the top of the document."""
        return Issues(self.doc, (), self.found)

    def error(self, where: PathKey, message: str, hint: str = "") -> None:
        """One problem at ``prefix + where``, positioned at that spec node (or its nearest ancestor)."""
        self.found.append(self.doc.issue((*self.prefix, *where), message, hint))

    def position(self, where: PathKey) -> SourcePosition:
        """Where ``prefix + where`` is in the spec, for a model object that keeps its position."""
        return self.doc.position((*self.prefix, *where))

    def extend(self, issues: Iterable[SpecIssue]) -> None:
        """Issues a loader or validator already positioned (schema errors, inventory files)."""
        self.found.extend(issues)

    def __len__(self) -> int:
        return len(self.found)

    def since(self, count: int) -> bool:
        """Whether any issue was added after the collector held ``count`` (a part failed: skip what needs it)."""
        return len(self.found) > count

    def raise_any(self) -> None:
        """Raise every issue found, sorted by position, as one SpecError; nothing when there is none."""
        if self.found:
            raise SpecError(self.found)
