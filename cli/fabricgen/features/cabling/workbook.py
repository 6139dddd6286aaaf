"""Target ``workbook``: the XLSX handoff for the datacenter team.

cabling/cables.xlsx: a sheet per fabric (every plug of the fabric, rack after rack, the rows of the racks' sheets
with the rack in front: ``handoff.fabric_sheets``), the rail colour legend and the bill of materials.
cabling/rows/<row>.xlsx: one sheet per rack of the row (every plug in the rack, the handoff order of ``handoff``),
so even a 16,384-GPU cluster's files stay a few thousand rows each. cabling/revisions.csv: every printed sheet's
revision (``handoff.revision_rows``), a table plan lists by sheet, so a changed sheet reads ``~ sheet rack M01
revision: ... -> ...`` where its workbook and PDF are binary files.
Every sheet prints landscape, fitted to the page width, the title row repeated on each page,
a header with the site, the sheet's rack or fabric and its revision (the digest of what it prints,
``handoff.revision``), and a footer "Page n of m"; columns are as wide as their longest text (device names are
never cut); each row's rail cell carries its rail's colour and pattern under the rail number in bold (readable
on a monochrome printer), the other cells boxed and unfilled. A breakout leg says which leg it is, its MPO
fibers and the harness polarity ("breakout leg").
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

from fabricgen.core.artifacts import Artifact
from fabricgen.core.reuse import render_key, reused
from fabricgen.core.templating import csv_bytes
from fabricgen.features.cabling.handoff import (
    CHECK_COLUMNS,
    END_COLUMNS,
    NO_RAIL,
    RAIL_PALETTE,
    RAIL_PATTERNS,
    REVISION_COLUMNS,
    FabricSheet,
    RowSheets,
    fabric_sheets,
    fabric_title,
    page_header,
    rack_title,
    revision_rows,
    row_inputs,
    row_sheets,
)
from fabricgen.features.cabling.plan import cluster_bom
from fabricgen.features.cabling.sheets import Cell
from fabricgen.features.cabling.xlsx import Sheet, write_workbook
from fabricgen.model.topology import Topology

PALETTE, PATTERNS = (*RAIL_PALETTE, NO_RAIL), (*RAIL_PATTERNS, "solid")
RACK_COLUMNS = (*CHECK_COLUMNS, *END_COLUMNS, "breakout leg")
FABRIC_COLUMNS = (*CHECK_COLUMNS, "rack", *END_COLUMNS, "breakout leg")
ROW_WORKBOOK = "cabling.workbook.row_workbook"  # the serializer's name in its render key (core/reuse.py)
_MAX_WIDTH = 120.0  # characters; far beyond any name the spec's patterns allow, so no name is cut
# What a landscape Letter page (10 in between the 0.5 in margins; A4 is wider) holds at 7 pt: fit to width scales
# the 11 pt font by 720 pt / the sheet's width, and a column of w characters is 7w + 5 pixels (0.75 pt each) of
# Calibri 11, so 720 / (7/11) / 0.75 = 1,509 pixels, less 5 a column; LibreOffice's print (Carlito) rounds its
# scale down to a whole percent and printed 6.9 pt at that width, hence 3% less.
_PRINT_PIXELS, _MIN_TEXT_WIDTH = 1460, 16.0
# Free text that wraps inside its cell when the sheet would otherwise print below 7 pt; names never wrap.
_WRAPPING = frozenset({"end label", "breakout leg"})


def _fill(rail: int | None) -> int:
    return len(RAIL_PALETTE) if rail is None else rail % len(RAIL_PALETTE)


def _widths(header: Sequence[str], texts: Sequence[tuple[str, ...]]) -> tuple[float, ...]:
    """Every column as wide as its longest text (``texts``: the sheet's cells as text, past its check-off columns),
    header included (+3 for bold and the filter button); where the sheet would then print below 7 pt, its free-text
    columns share what the others leave of the page (their cells wrap), but never below 16 characters."""
    longest = [len(h) + 3 for h in header]  # the check-off columns' cells are empty: their header is the longest
    for i, column in enumerate(zip(*texts, strict=True), len(CHECK_COLUMNS)):  # a column at a time: loops in C
        longest[i] = max(longest[i], max(map(len, column)) + 2)
    widths = [min(_MAX_WIDTH, float(n)) for n in longest]
    wrapping = [i for i, h in enumerate(header) if h in _WRAPPING]
    fixed = sum(w for i, w in enumerate(widths) if i not in wrapping)
    room = (_PRINT_PIXELS - 5 * len(widths)) / 7 - fixed
    if wrapping and sum(widths[i] for i in wrapping) > room:
        share = max(_MIN_TEXT_WIDTH, room / len(wrapping))
        for i in wrapping:
            widths[i] = min(widths[i], float(int(share)))
    return tuple(widths)


def _fabric_sheet(name: str, sheet: FabricSheet, head: str) -> Sheet:
    """A fabric's sheet: its plugs as the racks' sheets print them, each with its rack in front (``FabricSheet``)."""
    cells: list[tuple[Cell, ...]] = [("", "", *row) for row in sheet.cells]
    return Sheet(name=name[:31], header=FABRIC_COLUMNS, rows=cells, fills=[_fill(r.rail) for r in sheet.rows],
                 fill_column=FABRIC_COLUMNS.index("rail"), bare_rows=[not r.plug for r in sheet.rows],
                 bare_columns=len(CHECK_COLUMNS), widths=_widths(FABRIC_COLUMNS, sheet.texts),
                 page_header=(head, fabric_title(name), sheet.revision))


def _legend() -> Sheet:
    rows: list[tuple[Cell, ...]] = [*((i, f"rail {i}, {i + len(RAIL_PALETTE)}, ...") for i in range(len(RAIL_PALETTE))),
                                    ("", "no rail")]
    return Sheet(name="rail colours", header=("rail", "meaning"), rows=rows, fills=list(range(len(PALETTE))),
                 fill_column=0, widths=(8.0, 30.0), landscape=False)


def row_workbook(sheets: RowSheets, head: str) -> bytes:
    """One row's workbook: a printable sheet per rack (the rack's revision as its PDF pages carry it), then the
    legend."""
    books = []
    for rack, sheet in sheets.racks.items():
        rows: list[tuple[Cell, ...]] = [("", "", *r.cells) for r in sheet.rows]
        books.append(Sheet(name=f"rack {rack}", header=RACK_COLUMNS, rows=rows,
                           fills=[_fill(r.rail) for r in sheet.rows], fill_column=RACK_COLUMNS.index("rail"),
                           bare_rows=[not r.plug for r in sheet.rows], bare_columns=len(CHECK_COLUMNS),
                           widths=_widths(RACK_COLUMNS, sheet.texts),
                           page_header=(head, rack_title(rack, sheets.row), sheet.revision)))
    return write_workbook([*books, _legend()], PALETTE, PATTERNS)


def render(topology: Topology) -> list[Artifact]:
    head = page_header(topology)
    by_row = topology.shared(row_sheets)
    by_fabric = fabric_sheets(by_row, (ft.fabric.name for ft in topology.fabrics), head)
    bom = topology.shared(cluster_bom)
    sheets = [_fabric_sheet(name, sheet, head) for name, sheet in by_fabric.items()]
    sheets += [_legend(), Sheet(name="BOM", header=("category", "part", "description", "count"),
                                rows=((b.category, b.part, b.description, b.count) for b in bom), landscape=False)]
    inputs = topology.shared(row_inputs)
    rows = [reused(f"cabling/rows/{s.row}.xlsx", render_key(ROW_WORKBOOK, inputs[s.row]),
                   partial(row_workbook, s, head)) for s in by_row]
    return [Artifact("cabling/cables.xlsx", write_workbook(sheets, PALETTE, PATTERNS)), *rows,
            Artifact("cabling/revisions.csv", csv_bytes(REVISION_COLUMNS, revision_rows(by_row, by_fabric)))]
