"""Rack space: free U per rack, filled bottom-up. Used by build (nodes) and compile (switches) alike."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from fabricgen.model.nodes import Facility, Rack


class RackSpace:
    """The lowest free U of every rack; devices are stacked upward from each rack's next free U."""

    def __init__(self, facility: Facility, occupied: Iterable[tuple[str, int, int]] = ()) -> None:
        self.top = facility.rack_units
        self.next_u = {r.name: 1 for r in facility.racks}
        self.ceiling = {r.name: self.top for r in facility.racks}  # highest U still free from the top
        for rack, u, height in occupied:
            self.next_u[rack] = max(self.next_u[rack], u + height)

    def fill(self, racks: Sequence[Rack], count: int, height: int, per_rack: int, start_u: int,
             already: Counter[str] | None = None) -> list[tuple[Rack, int]]:
        """Up to ``count`` slots, ``per_rack`` at most in each rack, in rack order; fewer when space runs out.

        ``already`` counts devices earlier calls put in each rack (switches share the per-rack budget across
        fabrics; node groups each get their own ``per_rack``)."""
        slots: list[tuple[Rack, int]] = []
        for rack in racks:
            first = max(self.next_u[rack.name], start_u)
            budget = per_rack - (already[rack.name] if already is not None else 0)
            fits = min(budget, (self.ceiling[rack.name] - first + 1) // height, count - len(slots))
            if fits <= 0:
                continue
            slots.extend((rack, first + i * height) for i in range(fits))
            self.next_u[rack.name] = first + fits * height
            if already is not None:
                already[rack.name] += fits
            if len(slots) == count:
                break
        return slots

    def claim_top(self, rack: Rack, height: int) -> int | None:
        """Mount a device at the very top of ``rack``; its U, or None when that space is taken."""
        u = self.ceiling[rack.name] - height + 1
        if u < self.next_u[rack.name]:
            return None
        self.ceiling[rack.name] = u - 1
        return u
