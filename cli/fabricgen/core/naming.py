"""Name patterns such as ``gpu{n:03d}`` or ``{fabric}-su{su:02d}-leaf{rail}``.

Patterns are expanded by a tiny formatter over a fixed set of placeholders, never by ``str.format`` on user
text (which would allow attribute access such as ``{n.__class__}``). Every expanded name is checked against a
strict pattern before it can reach a path, a shell line or a config.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

PLACEHOLDER = re.compile(r"\{([a-z]+)(?::(0?)([1-9])d)?\}")
# Device names become file names, shell words and NodeDescriptions: keep them boring.
DEVICE_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")
RACK_NAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9-]{0,30}[A-Za-z0-9])?$")
# Names reach file paths, shell words and configs only after these (as strict as the spec schema's patterns).
NETDEV = re.compile(r"^[a-z][a-z0-9]{0,14}$")  # Linux IFNAMSIZ: at most 15 characters
IDENTIFIER = re.compile(r"^[a-z][a-z0-9_-]{0,30}$")  # profile and fabric names
LABEL = re.compile(r"^[A-Za-z0-9/_.-]{1,32}$")  # RDMA device and rear-panel port, shown in comments only


def checked(pattern: re.Pattern[str], value: str, what: str) -> str:
    """``value`` if it matches ``pattern``; raises ValueError otherwise (the schema should have refused it)."""
    if not pattern.fullmatch(value):
        raise ValueError(f"{what} {value!r} does not match {pattern.pattern}")
    return value


def placeholders(pattern: str) -> tuple[str, ...]:
    """Placeholder names used in a pattern, in order."""
    return tuple(m.group(1) for m in PLACEHOLDER.finditer(pattern))


def expand(pattern: str, values: Mapping[str, int | str]) -> str:
    """Fill a pattern; ``{x:03d}`` pads integers with zeros, ``{x:3d}`` with nothing (names have no spaces)."""

    def fill(match: re.Match[str]) -> str:
        value = values[match.group(1)]
        width = match.group(3)
        if width and isinstance(value, int):
            return f"{value:0{int(width)}d}" if match.group(2) else str(value)
        return str(value)

    return PLACEHOLDER.sub(fill, pattern)


def unknown_placeholders(pattern: str, allowed: set[str]) -> list[str]:
    return [name for name in placeholders(pattern) if name not in allowed]
