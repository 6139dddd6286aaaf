"""What a technician works from at a rack: every plug in the rack (a connector to label, plug and tick), in the
order the ports sit on the device, with the label that goes on it, grouped per rack and per row. The XLSX row
workbooks and the PDF sheets both print this one view, so the two never disagree.

A plug is not a cables.csv row: cables.csv has a row per link (a splitter's legs and the two links of a cage-pair
cable are rows of their own, sharing ``physical_cable``), but a technician labels and plugs connectors. A
splitter's trunk (one plug in one switch cage, always its Z end: the switch, or a breakout's upper tier) is one
plug with its legs listed beneath it; each fan-out end is a plug of its own; a cage-pair cable is one plug at
each end; a twin-port cage's one optic is printed on the first plug of the cage only. A fabric's sheet in
cables.xlsx takes its plugs' rows from the racks' (``fabric_sheets``), and every sheet's revision is listed for
plan and explain (``revision_rows``)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

from fabricgen.core.reuse import canonical
from fabricgen.model.cabling import Cable, CableEnd
from fabricgen.model.topology import Topology

# Paul Tol's "light" qualitative scheme, made for cell fills under black text and distinct under the common
# colour-vision deficiencies (https://personal.sron.nl/~pault/#sec:qualitative, "light"): light blue, orange,
# light yellow, pink, light cyan, mint, pear, olive (rails 0..7; further rails repeat, the rail number is printed
# in bold in the coloured cell of every row so colour is never the only cue). Tol's pale grey DDDDDD marks
# "no rail".
RAIL_PALETTE = ("77AADD", "EE8866", "EEDD88", "FFAABB", "99DDFF", "44BB99", "BBCC33", "AAAA00")
NO_RAIL = "DDDDDD"
# On a monochrome laser printer Tol's colours collapse to a few greys (relative luminance of rails 0/1/5/7
# 0.379/0.367/0.391/0.373, 3/6 0.536/0.540, 2 0.717 against "no rail" 0.723: review C7), so each rail also has a
# pattern of dark grey lines over its colour, in SpreadsheetML's pattern names (the PDF draws the same lines):
# none, horizontal, vertical, down and up diagonals, grid, diagonal cross-hatch, dots. "No rail" stays plain.
RAIL_PATTERNS = ("solid", "lightHorizontal", "lightVertical", "lightDown", "lightUp", "lightGrid", "lightTrellis",
                 "gray125")
CHECK_COLUMNS = ("plugged", "tested")  # left empty: ticked by hand
END_COLUMNS = ("U", "device", "port", "end label", "fabric", "rail", "to rack", "to U", "to device", "to port",
               "length m", "cable part", "optic here")
_DIGITS = re.compile(r"(\d+)")
Cell = str | int | float


class RackEnd(NamedTuple):
    """One cable end (one cables.csv row's end) as seen from its own rack. A named tuple: two are made per cable
    (270,000 at 16k GPUs), at a tuple's cost."""

    here: CableEnd
    far: CableEnd
    cable: Cable
    is_a: bool


@dataclass(frozen=True, slots=True)
class SheetRow:
    """One printed row: a plug (``plug``: labelled, with its check-off boxes) or a leg listed beneath its trunk."""

    cells: tuple[Cell, ...]  # END_COLUMNS, then the breakout leg
    rail: int | None
    plug: bool
    label: str = ""
    fabric: str = ""  # the plug's fabric (a leg's too): a fabric's sheet prints its plugs as the racks' sheets do


def plug_label(cables: Sequence[Cable], a_end: bool) -> str:
    """The label of one plug: the physical cable (a leg's own plug ``<physical>/L<leg>``), which end, and where the
    other end goes, so the label read at one rack says where to walk: one device's ports joined by ``+`` (a
    cage-pair cable), else the racks and devices of the legs (a splitter's trunk; each leg's port is on its row
    beneath)."""
    first = cables[0]
    name = first.physical if len(cables) > 1 or _shares_plug(first, a_end) else first.name
    if len(cables) == 1:  # most plugs: the one far end, as the general case below writes it
        far = first.z if a_end else first.a
        return f"{name}/{'A' if a_end else 'Z'} to {far.rack} {far.device} {far.port}"
    fars = [c.z if a_end else c.a for c in cables]
    if len({(f.rack, f.device) for f in fars}) == 1:
        to = f"{fars[0].rack} {fars[0].device} {'+'.join(f.port for f in fars)}"
    else:
        to = f"{','.join(dict.fromkeys(f.rack for f in fars))} {','.join(dict.fromkeys(f.device for f in fars))}"
    return f"{name}/{'A' if a_end else 'Z'} to {to}"


def _shares_plug(cable: Cable, a_end: bool) -> bool:
    """Whether this end of a leg is one connector with the other legs of its cable: both ends of a cage-pair cable
    (a medium of one leg, links numbered by lane), a splitter's trunk (its Z end)."""
    return bool(cable.leg) and (cable.medium.legs == 1 or not a_end)


def _plug_key(cable: Cable, a_end: bool) -> tuple[str, bool]:
    """Which plug a cable's end is in: (its physical cable where its legs share the plug, else its own id; is the
    A end)."""
    return cable.physical if _shares_plug(cable, a_end) else cable.id, a_end


def plugs(cables: Iterable[Cable]) -> dict[tuple[str, bool], list[Cable]]:
    """The cables behind each plug (keyed by `_plug_key`), in cable order."""
    out: dict[tuple[str, bool], list[Cable]] = {}
    for c in cables:
        for a_end in (True, False):
            out.setdefault(_plug_key(c, a_end), []).append(c)
    return out


def end_labels(cables: Sequence[Cable]) -> dict[tuple[str, bool], str]:
    """Every cable end's label by (cable id, is the A end): the label of the plug it is in."""
    labels = {}
    for (_, a_end), members in plugs(cables).items():
        label = plug_label(members, a_end)
        labels.update({(c.id, a_end): label for c in members})
    return labels


@lru_cache(maxsize=65536)
def port_order(port: str) -> tuple[tuple[int, str], ...]:
    """Physical order of port names: numbers compared as numbers (``1/2`` < ``1/10``, ``OSFP2P1`` < ``OSFP10P1``).
    Cached: a cluster has few distinct port names and every cable end is sorted by one."""
    return tuple((int(part), "") if part.isdigit() else (-1, part) for part in _DIGITS.split(port) if part)


def rail_colour(rail: int | None) -> str:
    return NO_RAIL if rail is None else RAIL_PALETTE[rail % len(RAIL_PALETTE)]


def rail_pattern(rail: int | None) -> str:
    return "solid" if rail is None else RAIL_PATTERNS[rail % len(RAIL_PATTERNS)]


def _end_key(e: RackEnd) -> tuple[int, str, tuple[tuple[int, str], ...], str]:
    return -e.here.u, e.here.device, port_order(e.here.port), e.cable.id


def rack_ends(cables: Sequence[Cable]) -> dict[str, list[RackEnd]]:
    """Every cable end by rack (racks in name order), each rack top U first (as a technician works down), then
    device, then port in physical order. Bucketing by rack first keeps the sort cost per rack, not per cluster."""
    by_rack: dict[str, list[RackEnd]] = {}
    for c in cables:
        by_rack.setdefault(c.a.rack, []).append(RackEnd(c.a, c.z, c, True))
        by_rack.setdefault(c.z.rack, []).append(RackEnd(c.z, c.a, c, False))
    return {rack: sorted(by_rack[rack], key=_end_key) for rack in sorted(by_rack)}


def rack_plugs(cables: Sequence[Cable]) -> dict[str, list[list[RackEnd]]]:
    """Every plug by rack (racks in name order), in the order of ``rack_ends``: each plug its ends in port order."""
    out: dict[str, list[list[RackEnd]]] = {}
    for rack, ends in rack_ends(cables).items():
        grouped: dict[tuple[str, bool], list[RackEnd]] = {}
        for e in ends:
            grouped.setdefault(_plug_key(e.cable, e.is_a), []).append(e)
        out[rack] = list(grouped.values())  # dicts keep the order of each plug's first (top, lowest) port
    return out


def _rail(ends: Sequence[RackEnd]) -> tuple[int | None, Cell]:
    """A plug's rail and its cell: the rail number (a number, so a sheet sorts and filters it as one), rails
    joined by ``+`` where the plug's links have several, empty where none."""
    rails = sorted({e.cable.rail for e in ends if e.cable.rail is not None})
    return (rails[0] if len(rails) == 1 else None), (rails[0] if len(rails) == 1 else "+".join(map(str, rails)))


@lru_cache(maxsize=65536)
def _number(port: str) -> Cell:
    """A port cell: a port numbered by a plain number (a BMC switch's ``49``) as a number, so a sheet sorts and
    filters it as one; a faceplate name (``21/1``, ``OSFP1P1``, ``1/1+1/2``) stays text. Cached, as ``port_order``:
    every row asks it of two ports, of a few distinct names."""
    return int(port) if port.isascii() and port.isdigit() and str(int(port)) == port else port


def _cage(end: CableEnd) -> tuple[str, str]:
    """The device and cage an optic sits in: a node end knows its chassis cage, a switch port is ``<cage>/<lane>``."""
    return end.device, end.cage or end.port.split("/", 1)[0]


def _optic_cell(first: RackEnd, optic_at: dict[tuple[str, str], str]) -> str:
    """The optic printed on a plug: its part on the cage's first plug, ``shared with <port>`` on the second plug of
    a twin-port cage (``optic_at``: the first plug's port of each cage so far), empty where the plug has none."""
    optic = first.cable.a_optic if first.is_a else first.cable.z_optic
    if not optic:
        return ""
    port = optic_at.setdefault(_cage(first.here), first.here.port)
    return optic.part if port == first.here.port else f"shared with {port}"


def _end_cells(e: RackEnd, label: str, fabric: str, length: Cell, part: str, optic: str) -> tuple[Cell, ...]:
    """The cells of a row that prints one cable end: a plug of one cable (most plugs), or a leg beneath its trunk
    (its fabric, but no label, length, part or optic of its own)."""
    rail = e.cable.rail
    return (e.here.u, e.here.device, _number(e.here.port), label, fabric, "" if rail is None else rail, e.far.rack,
            e.far.u, e.far.device, _number(e.far.port), length, part, optic, e.cable.leg_order)


def sheet_rows(plugs_here: Sequence[Sequence[RackEnd]]) -> list[SheetRow]:
    """One rack's printed rows: a row per plug, then, when its legs go to several devices (a splitter's trunk),
    one row per leg beneath it. The optic of a cage is printed on its first plug; a second plug of a twin-port cage
    says whose optic it shares."""
    rows: list[SheetRow] = []
    optic_at: dict[tuple[str, str], str] = {}
    for ends in plugs_here:
        first = ends[0]
        cable, optic_cell = first.cable, _optic_cell(first, optic_at)
        if len(ends) == 1:  # a plug of one cable, most plugs: its one end's row
            label = plug_label((cable,), first.is_a)
            rows.append(SheetRow(_end_cells(first, label, cable.fabric, cable.length_m, cable.part, optic_cell),
                                 cable.rail, True, label, cable.fabric))
            continue
        cables = [e.cable for e in ends]
        rail, rail_cell = _rail(ends)
        fars = [e.far for e in ends]
        one_far = len({(f.rack, f.device) for f in fars}) == 1
        far: tuple[Cell, ...] = ((fars[0].rack, fars[0].u, fars[0].device, _number("+".join(f.port for f in fars)))
                                 if one_far else ("", "", f"{len(ends)} legs below", ""))
        label = plug_label(cables, first.is_a)
        legs = "; ".join(filter(None, (c.leg_order for c in cables))) if one_far else ""
        rows.append(SheetRow((first.here.u, first.here.device, _number("+".join(e.here.port for e in ends)), label,
                              cable.fabric, rail_cell, *far, cable.length_m, cable.part, optic_cell, legs), rail,
                             True, label, cable.fabric))
        if not one_far:  # a leg repeats its trunk's U, device and fabric, so a sheet filtered by either keeps its
            # legs; length and part stay the trunk's alone (one physical cable, summed once)
            rows += [SheetRow(_end_cells(e, "", e.cable.fabric, "", "", ""), e.cable.rail, False,
                              fabric=e.cable.fabric) for e in ends]
    return rows


@dataclass(frozen=True)
class RackSheet:
    """One rack's printed rows and the revision its pages carry."""

    rows: list[SheetRow]
    revision: str
    texts: list[tuple[str, ...]]  # each row's cells as printed text (``cell_texts``)


@dataclass(frozen=True)
class RowSheets:
    """One row's racks, each with its printed rows, for one printed file."""

    row: str
    racks: dict[str, RackSheet]


def cell_texts(rows: Iterable[SheetRow]) -> list[tuple[str, ...]]:
    """Each row's cells as text, as a sheet prints them and its revision digests them: made once per rack and read
    by the rack's and its fabrics' revisions, the workbook's column widths and the PDF."""
    return [tuple(map(str, r.cells)) for r in rows]


def revision(header: Sequence[str], texts: Iterable[Sequence[str]]) -> str:
    """A sheet's revision: the first 12 hex of the sha256 of what it prints (its header fields, then its rows' cell
    texts, cell by cell), so a sheet changes revision exactly when its content does: a comment in the spec changes
    none, a cable's new length only the sheets that print that cable."""
    digest = hashlib.sha256("\x1f".join(header).encode())
    digest.update("".join(["\x1e" + "\x1f".join(row) for row in texts]).encode())
    return f"revision {digest.hexdigest()[:12]}"


def rack_title(rack: str, row: str) -> str:
    return f"rack {rack} (row {row})"


def row_sheets(topology: Topology) -> list[RowSheets]:
    """The rows in spec order, each with the racks that hold a cable end (racks without cables print nothing);
    each rack's revision is the digest of its page header and rows, so its PDF pages and workbook sheet agree."""
    head = page_header(topology)
    row_of = {rack.name: rack.row for rack in topology.cluster.facility.racks}
    by_row: dict[str, dict[str, RackSheet]] = {}
    for rack, plugs_here in rack_plugs(topology.cables).items():
        rows = sheet_rows(plugs_here)
        texts = cell_texts(rows)
        by_row.setdefault(row_of.get(rack, ""), {})[rack] = RackSheet(
            rows, revision((head, rack_title(rack, row_of.get(rack, ""))), texts), texts)
    return [RowSheets(row, by_row[row]) for row, _ in topology.cluster.facility.rows if row in by_row]


@dataclass(frozen=True)
class FabricSheet:
    """One fabric's printed rows (its plugs as the racks' sheets print them, each with its rack in front) and its
    revision."""

    rows: list[SheetRow]
    cells: list[tuple[Cell, ...]]  # "rack" (a leg's its trunk's), then each row's cells
    revision: str
    texts: list[tuple[str, ...]]  # ``cells`` as text


def fabric_title(fabric: str) -> str:
    return f"fabric {fabric}"


def fabric_sheets(sheets: Iterable[RowSheets], fabrics: Iterable[str], head: str) -> dict[str, FabricSheet]:
    """Each fabric's sheet (in ``fabrics`` order, a fabric without cables too), taken from the racks' sheets in
    their order: a fabric's sheet lists its plugs as the racks' sheets do (a row per plug, a trunk's legs beneath
    it, a twin-port cage's optic once), rack after rack, so the two never disagree; its revision is the digest of
    its header and rows."""
    rows: dict[str, list[tuple[str, SheetRow, tuple[str, ...]]]] = {fabric: [] for fabric in fabrics}
    for row_sheet in sheets:
        for rack, sheet in row_sheet.racks.items():
            for r, row_texts in zip(sheet.rows, sheet.texts, strict=True):
                rows[r.fabric].append((rack, r, row_texts))
    out = {}
    for fabric, printed in rows.items():
        # a leg too has its rack: a sheet filtered by rack keeps its legs
        texts = [(rack, *t) for rack, _, t in printed]
        out[fabric] = FabricSheet([r for _, r, _ in printed], [(rack, *r.cells) for rack, r, _ in printed],
                                  revision((head, fabric_title(fabric)), texts), texts)
    return out


REVISION_COLUMNS = ("sheet", "files", "revision")


def revision_rows(rows: Sequence[RowSheets], fabrics: dict[str, FabricSheet]) -> list[tuple[str, str, str]]:
    """Every printed sheet's revision, as ``cabling/revisions.csv`` lists it for plan (a sheet whose rows change is
    a row that changes: ``sheet rack M01  revision: ... -> ...``): each rack's (its PDF pages and its row
    workbook's sheet carry the one revision), then each fabric's (its sheet in cables.xlsx)."""
    racks = [(f"rack {rack}", f"cabling/rows/{rs.row}.pdf cabling/rows/{rs.row}.xlsx",
              sheet.revision.removeprefix("revision ")) for rs in rows for rack, sheet in rs.racks.items()]
    return [*racks, *((fabric_title(fabric), "cabling/cables.xlsx", sheet.revision.removeprefix("revision "))
                      for fabric, sheet in fabrics.items())]


def sheet_revisions(topology: Topology) -> list[tuple[str, str, str]]:
    """Every printed sheet's (title, files, revision) without printing one (``explain``): the rows of
    ``revision_rows``."""
    rows = row_sheets(topology)
    return revision_rows(rows, fabric_sheets(rows, (ft.fabric.name for ft in topology.fabrics),
                                             page_header(topology)))


def page_header(topology: Topology) -> str:
    """The site and cluster every printed page carries (its revision is the sheet's own: ``revision``)."""
    cluster = topology.cluster
    return f"site {cluster.metadata.site}, cluster {cluster.metadata.name}"


def row_input(head: str, sheets: RowSheets) -> str:
    """The digest of everything a row's printed files' serializers read (``workbook.row_workbook``,
    ``printout.row_pdf``, given ``head`` and ``sheets``): the page header, the row, and each rack's name, revision
    and rows (each ``SheetRow``'s cells, rail and plug), in :func:`~fabricgen.core.reuse.canonical` bytes. A rack's
    cell texts, which the serializers read too, are ``cell_texts`` of those cells (``row_sheets`` makes them so),
    the same function of them under the same code, which the key holds. With the serializer's name and
    fabricgen's code it keys the row's file (:func:`~fabricgen.core.reuse.render_key`): a row found unchanged
    takes the bytes the last apply wrote for it."""
    racks = tuple((rack, sheet.revision, tuple(r.cells for r in sheet.rows), tuple(r.rail for r in sheet.rows),
                   tuple(r.plug for r in sheet.rows)) for rack, sheet in sheets.racks.items())
    return hashlib.sha256(canonical((head, sheets.row, racks))).hexdigest()


def row_inputs(topology: Topology) -> dict[str, str]:
    """Each row's :func:`row_input`, computed once for the workbook and the print targets (their worker's)."""
    head = page_header(topology)
    return {sheets.row: row_input(head, sheets) for sheets in topology.shared(row_sheets)}
