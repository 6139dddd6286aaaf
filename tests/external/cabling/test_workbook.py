"""cables.xlsx and the row workbooks opened back with openpyxl: sheets, headers, row counts, rail fills, print
setup (landscape, fit to width, repeated title row, header and footer), full-width columns, BOM."""

from __future__ import annotations

import csv
import io
from collections import Counter

import openpyxl  # type: ignore[import-untyped]
import pytest

from fabricgen.features.cabling.handoff import (
    NO_RAIL,
    RAIL_PALETTE,
    RAIL_PATTERNS,
    fabric_sheets,
    page_header,
    rack_ends,
    row_sheets,
)
from fabricgen.features.cabling.workbook import FABRIC_COLUMNS, RACK_COLUMNS
from fabricgen.model.topology import Topology
from fabricgen.pipeline import compile_spec, render_spec
from tests.conftest import INVENTORIES


@pytest.fixture(scope="module")
def h100_files() -> tuple[Topology, dict[str, bytes]]:
    compiled = compile_spec(INVENTORIES / "h100-4su.yaml")
    return compiled.topology, {a.path: a.content for a in render_spec(compiled, ("workbook",))}


@pytest.fixture(scope="module")
def h100(h100_files: tuple[Topology, dict[str, bytes]]) -> tuple[Topology, openpyxl.Workbook]:
    topology, files = h100_files
    return topology, openpyxl.load_workbook(io.BytesIO(files["cabling/cables.xlsx"]))


def test_sheets_and_headers(h100: tuple[Topology, openpyxl.Workbook]) -> None:
    topology, book = h100
    fabrics = [ft.fabric.name for ft in topology.fabrics]
    rows = fabric_sheets(row_sheets(topology), fabrics, page_header(topology))
    assert book.sheetnames == [*fabrics, "rail colours", "BOM"]
    for name in fabrics:
        sheet = book[name]
        assert tuple(c.value for c in sheet[1]) == FABRIC_COLUMNS
        assert sheet.freeze_panes == "A2" and sheet.auto_filter.ref
        assert sheet.max_row - 1 == len(rows[name].rows), "a row per plug and per leg beneath its trunk"
        assert sheet.oddHeader.right.text == rows[name].revision
        assert all(sheet[1][i].font.bold for i in range(len(FABRIC_COLUMNS)))
        assert sheet.oddHeader.center.text == f"fabric {name}"


def test_rail_colours(h100: tuple[Topology, openpyxl.Workbook]) -> None:
    _, book = h100
    sheet = book["compute"]
    rail_col = FABRIC_COLUMNS.index("rail")
    seen = Counter()
    for row in sheet.iter_rows(min_row=2, max_row=400):
        rail = row[rail_col].value
        assert _rail_fill(row[rail_col]) == (RAIL_PALETTE[int(rail) % 8], RAIL_PATTERNS[int(rail) % 8])
        assert row[rail_col].font.bold, "the rail number in bold in its cell"
        assert all(c.fill.patternType is None for c in row if c.column != rail_col + 1), "only the rail cell"
        seen[rail] += 1
    assert len(seen) == 8
    oob = book["oob"]
    assert _rail_fill(oob[2][rail_col]) == (NO_RAIL, "solid"), "a fabric without rails: pale grey"


def _rail_fill(cell: openpyxl.cell.Cell) -> tuple[str, str]:
    """A cell's (colour, pattern): a pattern's colour is its background, under dark grey lines."""
    fill = cell.fill
    colour = fill.fgColor.rgb if fill.patternType == "solid" else fill.bgColor.rgb
    assert fill.patternType == "solid" or str(fill.fgColor.rgb).upper() == "FF404040"
    return str(colour).upper()[-6:], str(fill.patternType)


def test_row_workbooks_print_a_sheet_per_rack(h100_files: tuple[Topology, dict[str, bytes]]) -> None:
    topology, files = h100_files
    ends = rack_ends(topology.cables)
    sheets = {rack: sheet for rs in row_sheets(topology) for rack, sheet in rs.racks.items()}
    seen = []
    for path in sorted(p for p in files if p.startswith("cabling/rows/")):
        row = path.removeprefix("cabling/rows/").removesuffix(".xlsx")
        book = openpyxl.load_workbook(io.BytesIO(files[path]))
        assert book.sheetnames[-1] == "rail colours"
        for name in book.sheetnames[:-1]:
            rack = name.removeprefix("rack ")
            seen.append(rack)
            sheet = book[name]
            assert tuple(c.value for c in sheet[1]) == RACK_COLUMNS
            assert sheet.max_row - 1 == len(sheets[rack].rows)
            assert sheet.page_setup.orientation == "landscape" and sheet.page_setup.fitToWidth == 1
            assert sheet.page_setup.fitToHeight == 0 and sheet.sheet_properties.pageSetUpPr.fitToPage
            assert sheet.print_title_rows in ("1:1", "$1:$1")
            assert sheet.oddHeader.left.text == f"site {topology.cluster.metadata.site}, cluster sp-h100-a"
            assert sheet.oddHeader.center.text == f"rack {rack} (row {row})"
            assert sheet.oddHeader.right.text == sheets[rack].revision
            assert sheet.oddFooter.center.text == "Page &P of &N"
            device = RACK_COLUMNS.index("device")
            width = sheet.column_dimensions[openpyxl.utils.get_column_letter(device + 1)].width
            assert width >= max(len(e.here.device) for e in ends[rack]), "device names are never cut"
            labels = [r[RACK_COLUMNS.index("end label")] or "" for r in sheet.iter_rows(min_row=2, values_only=True)]
            assert labels == [r.label for r in sheets[rack].rows]
    assert sorted(seen) == sorted(ends), "every rack with a cable end has its sheet"


def test_rail_colours_are_distinct_and_legended(h100: tuple[Topology, openpyxl.Workbook]) -> None:
    _, book = h100
    legend = [(row[0].value, _rail_fill(row[0])) for row in book["rail colours"].iter_rows(min_row=2)]
    assert [rail for rail, _ in legend[:8]] == list(range(8))
    assert legend == [*((i, (RAIL_PALETTE[i], RAIL_PATTERNS[i])) for i in range(8)), (None, (NO_RAIL, "solid"))]
    assert len({colour for _, (colour, _) in legend}) == len(legend), "one colour per rail, another for none"
    assert len({pattern for _, (_, pattern) in legend[:8]}) == 8, "one pattern per rail: apart in a mono print"


def test_bom_sheet_matches_csv() -> None:
    artifacts = {a.path: a.content for a in render_spec(compile_spec(INVENTORIES / "lab-1su.yaml"))}
    book = openpyxl.load_workbook(io.BytesIO(artifacts["cabling/cables.xlsx"]))
    rows = [tuple(str(c.value) for c in row) for row in book["BOM"].iter_rows()]
    csv_rows = [tuple(row) for row in csv.reader(io.StringIO(artifacts["cabling/bom.csv"].decode()))]
    assert rows == csv_rows


def test_cells_print_as_boxes_and_free_text_wraps(h100_files: tuple[Topology, dict[str, bytes]]) -> None:
    """Every data cell has a border (a number never touches the next column's text; an empty check-off cell is a
    box to tick) and wraps top-aligned; only the free-text columns are narrower than their text."""
    _, files = h100_files
    sheet = openpyxl.load_workbook(io.BytesIO(files["cabling/rows/N.xlsx"]))["rack N01"]
    legs = 0
    for row in sheet.iter_rows(min_row=1, max_row=200):
        leg = row[0].row > 1 and not row[RACK_COLUMNS.index("end label")].value  # a splitter's leg, no plug
        legs += leg
        for cell in row:
            sides = {cell.border.left.style, cell.border.right.style, cell.border.top.style, cell.border.bottom.style}
            assert sides == ({None} if leg and cell.column <= 2 else {"thin"}), cell.coordinate
            assert cell.row == 1 or (leg and cell.column <= 2) or (cell.alignment.wrap_text
                                                                 and cell.alignment.vertical == "top")
    assert legs, "N01 holds breakout trunks: their legs print without check-off boxes"
    for i, title in enumerate(RACK_COLUMNS):
        width = sheet.column_dimensions[openpyxl.utils.get_column_letter(i + 1)].width
        longest = max(len(str(r[i] or "")) for r in sheet.iter_rows(min_row=2, values_only=True))
        assert (width < longest) == (title in ("end label", "breakout leg")), title
