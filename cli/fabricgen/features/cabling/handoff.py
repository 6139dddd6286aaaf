"""What a technician works from at a rack: every cable end in the rack, in the order the ports sit on the device,
with the label that goes on that end, grouped per rack and per row. The XLSX row workbooks and the PDF sheets
both print this one view, so the two never disagree."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from fabricgen.model.cabling import Cable, CableEnd
from fabricgen.model.topology import Topology

# Paul Tol's "light" qualitative scheme, made for cell fills under black text and distinct under the common
# colour-vision deficiencies (https://personal.sron.nl/~pault/#sec:qualitative, "light"): light blue, orange,
# light yellow, pink, light cyan, mint, pear, olive (rails 0..7; further rails repeat, the rail number is printed
# beside the colour in every row so colour is never the only cue). Tol's pale grey DDDDDD marks "no rail".
RAIL_PALETTE = ("77AADD", "EE8866", "EEDD88", "FFAABB", "99DDFF", "44BB99", "BBCC33", "AAAA00")
NO_RAIL = "DDDDDD"
CHECK_COLUMNS = ("plugged", "tested")  # left empty: ticked by hand
END_COLUMNS = ("U", "device", "port", "end label", "fabric", "rail", "to rack", "to U", "to device", "to port",
               "length m", "cable part", "optic here")
_DIGITS = re.compile(r"(\d+)")


@dataclass(frozen=True, slots=True)
class RackEnd:
    """One cable end as seen from its own rack."""

    here: CableEnd
    far: CableEnd
    cable: Cable
    is_a: bool

    @property
    def label(self) -> str:
        return end_label(self.cable, self.is_a)

    def cells(self) -> tuple[str | int | float, ...]:
        """The END_COLUMNS cells."""
        optic = self.cable.a_optic if self.is_a else self.cable.z_optic
        return (self.here.u, self.here.device, self.here.port, self.label, self.cable.fabric,
                "" if self.cable.rail is None else self.cable.rail, self.far.rack, self.far.u, self.far.device,
                self.far.port, self.cable.length_m, self.cable.part, optic.part if optic else "")


def end_label(cable: Cable, a_end: bool) -> str:
    """The label printed for one end: the cable (a splitter leg ``<physical>/L<leg>``), which end, and where the
    other end goes, so the label read at one rack says where to walk. The near device and port are where the
    label hangs."""
    far = cable.z if a_end else cable.a
    return f"{cable.name}/{'A' if a_end else 'Z'} to {far.rack} {far.device} {far.port}"


@lru_cache(maxsize=65536)
def port_order(port: str) -> tuple[tuple[int, str], ...]:
    """Physical order of port names: numbers compared as numbers (``1/2`` < ``1/10``, ``OSFP2P1`` < ``OSFP10P1``).
    Cached: a cluster has few distinct port names and every cable end is sorted by one."""
    return tuple((int(part), "") if part.isdigit() else (-1, part) for part in _DIGITS.split(port) if part)


def rail_colour(rail: int | None) -> str:
    return NO_RAIL if rail is None else RAIL_PALETTE[rail % len(RAIL_PALETTE)]


def rack_ends(cables: Sequence[Cable]) -> dict[str, list[RackEnd]]:
    """Every cable end by rack (racks in name order), each rack top U first (as a technician works down), then
    device, then port in physical order. Bucketing by rack first keeps the sort cost per rack, not per cluster."""
    by_rack: dict[str, list[RackEnd]] = {}
    for c in cables:
        by_rack.setdefault(c.a.rack, []).append(RackEnd(c.a, c.z, c, True))
        by_rack.setdefault(c.z.rack, []).append(RackEnd(c.z, c.a, c, False))
    return {rack: sorted(by_rack[rack], key=lambda e: (-e.here.u, e.here.device, port_order(e.here.port),
                                                       e.cable.id))
            for rack in sorted(by_rack)}


@dataclass(frozen=True)
class RowSheets:
    """One row's racks, each with its cable ends, for one printed file."""

    row: str
    racks: dict[str, list[RackEnd]]


def row_sheets(topology: Topology) -> list[RowSheets]:
    """The rows in spec order, each with the racks that hold a cable end (racks without cables print nothing)."""
    ends = rack_ends(topology.cables)
    row_of = {rack.name: rack.row for rack in topology.cluster.facility.racks}
    rows = [RowSheets(row, {r: e for r, e in ends.items() if row_of.get(r) == row})
            for row, _ in topology.cluster.facility.rows]
    return [r for r in rows if r.racks]


def page_header(topology: Topology) -> tuple[str, str]:
    """The site/cluster and the revision every printed page carries: the spec digest (what `fabricgen plan`
    and the lock file call the spec) so a sheet on a clipboard can be matched to the plan it came from."""
    cluster = topology.cluster
    return (f"site {cluster.metadata.site}, cluster {cluster.metadata.name}",
            f"spec {cluster.spec_digest.removeprefix('sha256:')[:12]}")
