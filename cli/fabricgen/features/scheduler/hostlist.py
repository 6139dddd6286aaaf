"""Slurm's hostlist expressions (``gpu[001-031,033]``), which topology.conf and topology.yaml take for names."""

from __future__ import annotations

import re
from collections.abc import Iterable

_NUMBERED = re.compile(r"^(?P<prefix>.*?)(?P<digits>[0-9]+)$")


def hostlist(names: Iterable[str]) -> str:
    """Names as one hostlist expression: runs of a prefix and equally wide numbers become ``prefix[lo-hi,...]``.

    Numbers of one width keep it (Slurm pads a range to the width of its bounds), so ``gpu099`` and ``gpu100``
    share a bracket while ``n9`` and ``n10`` (no padding) get one each; names without a number stay as they are.
    Groups keep the order of their first name.
    """
    runs: dict[tuple[str, int], list[int]] = {}
    for name in names:
        m = _NUMBERED.match(name)
        if m is None:
            runs.setdefault((name, -1), [])
            continue
        digits = m["digits"]
        runs.setdefault((m["prefix"], len(digits)), []).append(int(digits))
    return ",".join(_expression(prefix, width, numbers) for (prefix, width), numbers in runs.items())


def _expression(prefix: str, width: int, numbers: list[int]) -> str:
    if width < 0:
        return prefix
    spans: list[tuple[int, int]] = []
    for n in sorted(set(numbers)):
        if spans and n == spans[-1][1] + 1:
            spans[-1] = (spans[-1][0], n)
        else:
            spans.append((n, n))
    if len(spans) == 1 and spans[0][0] == spans[0][1]:
        return f"{prefix}{spans[0][0]:0{width}d}"
    ranges = ",".join(f"{lo:0{width}d}" if lo == hi else f"{lo:0{width}d}-{hi:0{width}d}" for lo, hi in spans)
    return f"{prefix}[{ranges}]"
