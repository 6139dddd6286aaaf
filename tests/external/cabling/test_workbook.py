"""cables.xlsx opened back with openpyxl: sheets, headers, row counts, rail fills, rack pages, BOM."""

from __future__ import annotations

import io
import itertools
from collections import Counter

import openpyxl  # type: ignore[import-untyped]
import pytest

from fabricgen.features.cabling.sheets import CABLE_COLUMNS
from fabricgen.features.cabling.workbook import RACK_COLUMNS, RAIL_PALETTE
from fabricgen.model.topology import Topology
from fabricgen.pipeline import compile_spec, render_spec
from tests.conftest import INVENTORIES


@pytest.fixture(scope="module")
def h100() -> tuple[Topology, openpyxl.Workbook]:
    compiled = compile_spec(INVENTORIES / "h100-4su.yaml")
    content = next(a.content for a in render_spec(compiled) if a.path == "cabling/cables.xlsx")
    return compiled.topology, openpyxl.load_workbook(io.BytesIO(content))


def test_sheets_and_headers(h100: tuple[Topology, openpyxl.Workbook]) -> None:
    topology, book = h100
    fabrics = [ft.fabric.name for ft in topology.fabrics]
    assert book.sheetnames == [*fabrics, "by rack", "BOM"]
    for name in fabrics:
        sheet = book[name]
        assert tuple(c.value for c in sheet[1]) == CABLE_COLUMNS
        assert sheet.freeze_panes == "A2" and sheet.auto_filter.ref
        assert sheet.max_row - 1 == sum(1 for c in topology.cables if c.fabric == name)
        assert all(sheet[1][i].font.bold for i in range(len(CABLE_COLUMNS)))
    assert tuple(c.value for c in book["by rack"][1]) == RACK_COLUMNS
    assert book["by rack"].max_row - 1 == 2 * len(topology.cables)


def test_rail_colours(h100: tuple[Topology, openpyxl.Workbook]) -> None:
    _, book = h100
    sheet = book["compute"]
    rail_col = CABLE_COLUMNS.index("rail")
    seen = Counter()
    for row in sheet.iter_rows(min_row=2, max_row=400):
        rail = row[rail_col].value
        colour = row[0].fill.fgColor.rgb
        assert str(colour).upper().endswith(RAIL_PALETTE[int(rail) % len(RAIL_PALETTE)])
        seen[rail] += 1
    assert len(seen) == 8
    oob = book["oob"]
    assert oob[2][0].fill.fill_type in (None, "none")


def test_rack_pages(h100: tuple[Topology, openpyxl.Workbook]) -> None:
    _, book = h100
    sheet = book["by rack"]
    racks = [row[0].value for row in sheet.iter_rows(min_row=2)]
    changes = sum(1 for a, b in itertools.pairwise(racks) if a != b)
    assert len(sheet.row_breaks.brk) == changes
    assert racks == sorted(racks), "grouped by rack"
    assert sheet.print_title_rows in ("1:1", "$1:$1")


def test_bom_sheet_matches_csv() -> None:
    artifacts = {a.path: a.content for a in render_spec(compile_spec(INVENTORIES / "lab-1su.yaml"))}
    book = openpyxl.load_workbook(io.BytesIO(artifacts["cabling/cables.xlsx"]))
    rows = [tuple(str(c.value) for c in row) for row in book["BOM"].iter_rows()]
    csv_rows = [tuple(line.split(",")) for line in artifacts["cabling/bom.csv"].decode().splitlines()]
    assert rows == csv_rows
