"""A loaded spec document: its data, where every node of it came from, and the issues that point there.

The loader (:mod:`fabricgen.spec.load`) makes it; every later stage reports a problem through it so that each
message carries the file:line:col of the spec node at fault.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from fabricgen.core.errors import SourcePosition, SpecIssue, printable

PathKey = tuple[str | int, ...]


def format_path(path: PathKey) -> str:
    """Render a data path the way errors print it: ``fabrics.compute.topology`` or ``nodes[0].count``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{printable(part)}" if out else printable(part)
    return out


REDACTED = "<redacted>"


@dataclass(frozen=True, order=True)
class SourceSpan:
    """The text a YAML value was written as: from its first character (1-based line and column) to just after its
    last one, so a source line can be shown with the value replaced (a secret's) and everything else in place."""

    line: int
    column: int
    end_line: int
    end_column: int

    def on_line(self, number: int, text: str) -> tuple[int, int] | None:
        """The 0-based [start, end) columns of line ``number`` (its ``text``) the value covers, None if none: a
        value that goes on to a later line (a block mapping) covers the rest of this one, and one begun on an
        earlier line starts at this line's first character after its indentation."""
        if not self.line <= number <= self.end_line:
            return None
        start = self.column - 1 if number == self.line else len(text) - len(text.lstrip())
        end = self.end_column - 1 if number == self.end_line else len(text.rstrip())
        return (start, min(end, len(text))) if end > start else None


def is_secret(path: PathKey, secret_keys: frozenset[str]) -> bool:
    """Whether a path lies at or under a key the schema marks secret (``x-secret``: SM keys and their holder)."""
    return any(isinstance(part, str) and part in secret_keys for part in path)


def secret_forms(value: Any) -> set[str]:
    """Every way a message could spell a secret value or a scalar inside it (text, repr, JSON, decimal, hex)."""
    if isinstance(value, dict):
        return {form for v in value.values() for form in secret_forms(v)}
    if isinstance(value, list):
        return {form for v in value for form in secret_forms(v)}
    if value is None or isinstance(value, bool):
        return set()
    forms = {str(value), repr(value), json.dumps(value)}
    if isinstance(value, int):
        forms |= {hex(value), f"0x{value:016x}", f"{value:x}"}
    return {f for f in forms if len(f) >= 4}  # shorter is no key material, and would blank out line numbers


def redact(text: str, forms: set[str]) -> str:
    for form in sorted(forms, key=len, reverse=True):
        text = text.replace(form, REDACTED)
    return text


@dataclass(frozen=True)
class Document:
    """A loaded spec: its data, its source name, a digest of its bytes, and positions for every path.

    Values at ``secret_keys`` never reach a message: :meth:`issue` scrubs them from every issue it makes there.
    """

    data: Any
    source: str
    digest: str
    value_positions: Mapping[PathKey, SourcePosition] = field(repr=False)
    key_positions: Mapping[PathKey, SourcePosition] = field(repr=False)
    secret_keys: frozenset[str] = frozenset()

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

    def subject_position(self, path: PathKey) -> SourcePosition:
        """Where a problem at ``path`` points: a scalar written there (``speed: 40O``) at the scalar, as compilers
        put the caret under the wrong token; a mapping, a list or a missing or empty value at its key."""
        node = self.data
        for part in path:
            try:
                node = node[part]
            except (KeyError, IndexError, TypeError):
                return self.position(path)
        if node is None or isinstance(node, dict | list):
            return self.position(path)
        return self.value_position(path)

    def is_secret(self, path: PathKey) -> bool:
        return is_secret(path, self.secret_keys)

    def secret_value(self, path: PathKey) -> Any:
        """The value at the outermost secret key on ``path`` (None when there is none)."""
        node = self.data
        for part in path:
            try:
                node = node[part]
            except (KeyError, IndexError, TypeError):
                return None
            if isinstance(part, str) and part in self.secret_keys:
                return node
        return None

    def issue(self, path: PathKey, message: str, hint: str = "", *, at_key: bool = False) -> SpecIssue:
        """A problem with the value at ``path`` (:meth:`subject_position`), or with the key itself (``at_key``:
        an unknown or misspelt key)."""
        if self.is_secret(path):
            forms = secret_forms(self.secret_value(path))
            message, hint = redact(message, forms), redact(hint, forms)
        where = self.position(path) if at_key else self.subject_position(path)
        return SpecIssue(where, format_path(path), message, hint)
