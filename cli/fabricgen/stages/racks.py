"""Rack space: free U per rack, filled bottom-up, and the placer that resolves a placement to racks. Used by build
(nodes, explicit tier placements) and compile (switches) alike."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from fabricgen.core.document import PathKey
from fabricgen.core.hints import choices_hint
from fabricgen.core.issues import Issues
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

    def reserve_below(self, rack: str, u: int) -> None:
        """Keep every U below ``u`` of ``rack`` for what was laid out there (the network racks' slot ranges)."""
        self.next_u[rack] = max(self.next_u[rack], u)

    def claim_top(self, rack: Rack, height: int) -> int | None:
        """Mount a device at the very top of ``rack``; its U, or None when that space is taken."""
        u = self.ceiling[rack.name] - height + 1
        if u < self.next_u[rack.name]:
            return None
        self.ceiling[rack.name] = u - 1
        return u


class RackPlacer:
    """Fills racks bottom-up, group by group in spec order (the only order-dependent step, and documented)."""

    def __init__(self, facility: Facility, broken: bool) -> None:
        self.facility = facility
        self.broken = broken  # racks are misnamed: placement results would only add noise
        self.racks = {r.name: r for r in facility.racks}
        self.space = RackSpace(facility)

    def candidates(self, issues: Issues, path: PathKey, placement: Mapping[str, Any]) -> list[Rack] | None:
        rows = {row for row, _ in self.facility.rows}
        if "racks" in placement:
            unknown = [i for i, name in enumerate(placement["racks"]) if name not in self.racks]
            for i in unknown:
                issues.error(
                    (*path, "racks", i),
                    f"unknown rack {placement['racks'][i]!r}",
                    choices_hint(placement["racks"][i], self.racks),
                )
            return None if unknown else [self.racks[n] for n in placement["racks"]]
        unknown = [i for i, row in enumerate(placement["rows"]) if row not in rows]
        for i in unknown:
            issues.error(
                (*path, "rows", i),
                f"unknown row {placement['rows'][i]!r}",
                choices_hint(placement["rows"][i], rows),
            )
        if unknown:
            return None
        order = {row: i for i, row in enumerate(placement["rows"])}
        return sorted(
            (r for r in self.facility.racks if r.row in order), key=lambda r: (order[r.row], r.index)
        )

    def place(
        self,
        issues: Issues,
        path: PathKey,
        group: str,
        count: int,
        height: int,
        placement: Mapping[str, Any],
    ) -> list[tuple[Rack, int]]:
        racks = self.candidates(issues, path, placement)
        if racks is None or self.broken:
            return []
        per_rack, start_u, top = placement["per_rack"], placement["start_u"], self.facility.rack_units
        if start_u + height - 1 > top:
            issues.error((*path, "start_u"), f"a node of {height}U starting at U{start_u} does not fit a {top}U rack",
                         f"start_u at most {top - height + 1}")
            return []
        if start_u + per_rack * height - 1 > top:
            issues.error(
                (*path, "per_rack"),
                f"{per_rack} nodes of {height}U starting at U{start_u} would reach U{start_u + per_rack * height - 1}"
                f" but racks have {top}U",
                f"at most {(top - start_u + 1) // height} per rack",
            )
            return []
        slots = self.space.fill(racks, count, height, per_rack, start_u)
        if len(slots) == count:
            return slots
        issues.error(
            path,
            f"{count - len(slots)} of {count} nodes of group {group!r} do not fit in their racks",
            f"{len(racks)} racks with {per_rack} per rack hold {len(slots)}; add racks or rows",
        )
        return slots
