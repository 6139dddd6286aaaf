"""Target ``workbook``: cables.xlsx for the datacenter team.

One sheet per fabric (a colour per rail, frozen header, filters, fitted widths), a per-rack sheet a technician
prints (every cable end in the rack, ordered by U, a printed page per rack), and the bill of materials.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from fabricgen.core.artifacts import Artifact
from fabricgen.features.cabling.plan import bill_of_materials
from fabricgen.features.cabling.sheets import CABLE_COLUMNS, Cell, cable_row
from fabricgen.features.cabling.xlsx import Sheet, write_workbook
from fabricgen.model.cabling import Cable, CableEnd
from fabricgen.model.topology import Topology

# Eight light, distinguishable fills (rails 0..7; further rails repeat the cycle).
RAIL_PALETTE = ("FFD6D6", "FFE9C7", "FFF7B3", "D9F5C5", "C9EEF2", "CCD9FF", "E3D1FF", "F7D1EC")
MAX_PAGE_BREAKS = 1023  # Excel ignores more manual breaks than this on one sheet
RACK_COLUMNS = ("rack", "u", "device", "port", "cable_id", "fabric", "rail", "far_rack", "far_u", "far_device",
                "far_port", "length_m", "cable_part", "optic_here")


def _fabric_sheet(name: str, cables: Sequence[Cable], site: str) -> Sheet:
    return Sheet(name=name[:31], header=CABLE_COLUMNS, rows=(cable_row(c, site) for c in cables),
                 fills=(None if c.rail is None else c.rail % len(RAIL_PALETTE) for c in cables))


def _rack_rows(cables: Sequence[Cable]) -> list[tuple[CableEnd, CableEnd, Cable, bool]]:
    """Every cable end with the far end, grouped by rack (racks in name order), then by U top down (as a
    technician works), device and port. Bucketing by rack first keeps the sort cost per rack, not per cluster."""
    by_rack: dict[str, list[tuple[CableEnd, CableEnd, Cable, bool]]] = {}
    for c in cables:
        by_rack.setdefault(c.a.rack, []).append((c.a, c.z, c, True))
        by_rack.setdefault(c.z.rack, []).append((c.z, c.a, c, False))
    ends = []
    for rack in sorted(by_rack):
        ends.extend(sorted(by_rack[rack], key=lambda e: (-e[0].u, e[0].device, e[0].port_number, e[2].id)))
    return ends


def _rack_sheet(cables: Sequence[Cable]) -> Sheet:
    ends = _rack_rows(cables)
    breaks = [i for i in range(1, len(ends)) if ends[i][0].rack != ends[i - 1][0].rack]

    def rows() -> Iterator[tuple[Cell, ...]]:
        for here, far, cable, is_a in ends:
            optic = cable.a_optic if is_a else cable.z_optic
            yield (here.rack, here.u, here.device, here.port, cable.id, cable.fabric,
                   "" if cable.rail is None else cable.rail, far.rack, far.u, far.device, far.port, cable.length_m,
                   cable.part, optic.part if optic else "")

    return Sheet(name="by rack", header=RACK_COLUMNS, rows=rows(),
                 fills=(None if e[2].rail is None else e[2].rail % len(RAIL_PALETTE) for e in ends),
                 page_breaks_before=breaks if len(breaks) <= MAX_PAGE_BREAKS else None)


def render(topology: Topology) -> list[Artifact]:
    site = topology.cluster.metadata.site
    by_fabric = {ft.fabric.name: [c for c in topology.cables if c.fabric == ft.fabric.name] for ft in topology.fabrics}
    bom = bill_of_materials((s.model.name for f in topology.fabrics for s in f.switches), topology.cables)
    sheets = [_fabric_sheet(name, cables, site) for name, cables in by_fabric.items()]
    sheets.append(_rack_sheet(topology.cables))
    sheets.append(Sheet(name="BOM", header=("category", "part", "description", "count"),
                        rows=((b.category, b.part, b.description, b.count) for b in bom), landscape=False))
    return [Artifact("cabling/cables.xlsx", write_workbook(sheets, RAIL_PALETTE))]
