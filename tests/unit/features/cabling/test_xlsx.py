"""The streaming XLSX writer, checked by reading its bytes back with openpyxl (an independent SpreadsheetML reader)
and by parsing every XML part; plus determinism, validation, and one timed 2 x 65,000 x 25 run (printed, not asserted,
because wall time on shared CI runners is noise)."""

from __future__ import annotations

import enum
import time
import xml.etree.ElementTree as ET
import zipfile
from collections.abc import Iterator
from io import BytesIO

import pytest
from openpyxl import load_workbook  # type: ignore[import-untyped]
from openpyxl.workbook.workbook import Workbook  # type: ignore[import-untyped]

from fabricgen.features.cabling.xlsx import COMPRESS_LEVEL, Sheet, Value, column_letter, write_workbook

PALETTE = ("1F77B4", "ff7f0e", "2CA02C")
HEADER = ("Cable", "From", "Port", "Length m", "Rail", "Note")
ROWS: list[tuple[Value, ...]] = [
    ("C0001", "node-001", "p1", 3.5, 0, None),
    ("C0002", "node-001", "p2", 12, 1, "spare"),
    ("C0003", "node-002", "p1", 0.25, 2, ""),
    ("C0004", "node-002", "p2", -7, 0, None),
    ("C0005", "node-003", "p1", 1e20, None, "last"),
]
FILLS = [0, 1, 2, 0, None]


def _rows() -> Iterator[tuple[Value, ...]]:
    """A generator, so the tests prove the writer consumes rows once."""
    yield from ROWS


def _book() -> bytes:
    """Built fresh each call (generators are single-use), so two calls can be compared byte for byte."""
    cabling = Sheet(name="Compute cabling", header=HEADER, rows=_rows(), fills=iter(FILLS),
                    widths=(10, 12, 6, 9.5, 5, 20), page_breaks_before=iter([0, 2, 4, 99]), landscape=True)
    second = Sheet(name="Storage", header=("A", "B"), rows=[("x", 1)], landscape=False)
    return write_workbook([cabling, second], palette=PALETTE)


def _load(data: bytes) -> Workbook:
    return load_workbook(BytesIO(data))


def test_column_letters() -> None:
    assert [column_letter(i) for i in (0, 25, 26, 51, 52, 701, 702, 16_383)] == [
        "A", "Z", "AA", "AZ", "BA", "ZZ", "AAA", "XFD"]


def test_sheets_header_and_view() -> None:
    wb = _load(_book())
    assert wb.sheetnames == ["Compute cabling", "Storage"]
    ws = wb["Compute cabling"]
    assert [c.value for c in ws[1]] == list(HEADER)
    assert all(c.font.b for c in ws[1])
    assert ws["A1"].fill.fgColor.rgb == "FFD9D9D9"
    assert ws.freeze_panes == "A2"
    assert ws.auto_filter.ref == "A1:F6"
    assert [ws.column_dimensions[column_letter(i)].width for i in range(6)] == [10, 12, 6, 9.5, 5, 20]
    assert ws.max_row == 1 + len(ROWS)
    assert wb["Storage"].auto_filter.ref == "A1:B2"


def test_values_types_and_blanks() -> None:
    ws = _load(_book())["Compute cabling"]
    assert [[c.value for c in row] for row in ws.iter_rows(min_row=2)] == [list(r) for r in ROWS]
    assert isinstance(ws["D2"].value, float) and ws["D2"].data_type == "n"
    assert isinstance(ws["D3"].value, int) and ws["D3"].data_type == "n"
    assert ws["F2"].value is None


def test_row_fills_follow_the_palette() -> None:
    ws = _load(_book())["Compute cabling"]
    for row, fill in enumerate(FILLS, start=2):
        for cell in ws[row]:  # including the blank cells, so a coloured row stays solid
            if fill is None:
                assert cell.fill.patternType is None
            else:
                assert cell.fill.patternType == "solid"
                assert cell.fill.fgColor.rgb.endswith(PALETTE[fill].upper())


def test_print_setup() -> None:
    wb = _load(_book())
    ws = wb["Compute cabling"]
    assert ws.print_title_rows == "$1:$1"
    assert ws.page_setup.orientation == "landscape"
    assert wb["Storage"].page_setup.orientation == "portrait"
    assert ws.sheet_properties.pageSetUpPr.fitToPage
    assert (ws.page_setup.fitToWidth, ws.page_setup.fitToHeight) == (1, 0)
    # data rows 2 and 4 start pages: sheet rows 4 and 6, i.e. breaks below rows 3 and 5; 0 and 99 are no-ops
    assert [(b.id, b.man) for b in ws.row_breaks.brk] == [(3, True), (5, True)]
    assert not wb["Storage"].row_breaks.brk


def test_strings_are_escaped_and_cleaned() -> None:
    nasty = ('a<b>&"c"\'', "tab\tnew\nline", "bell\x07nul\x00esc\x1b\ufffe", "  padded  ", "_x0041_", "ünïcødé ✓ 𝄞")
    data = write_workbook([Sheet(name="S", header=("<&>",), rows=[(s,) for s in nasty])])
    ws = _load(data)["S"]
    assert ws["A1"].value == "<&>"
    got = [ws.cell(row=i, column=1).value for i in range(2, 2 + len(nasty))]
    assert got[:4] == ['a<b>&"c"\'', "tab\tnew\nline", "bellnulesc", "  padded  "]
    assert got[5] == "ünïcødé ✓ 𝄞"
    sheet = zipfile.ZipFile(BytesIO(data)).read("xl/worksheets/sheet1.xml").decode()
    assert "_x005F_x0041_" in sheet  # Excel would otherwise decode it to "A"
    assert '<t xml:space="preserve">  padded  </t>' in sheet


def test_enums_and_bools() -> None:
    class Rail(enum.StrEnum):  # what fabricgen.model uses
        R0 = "rail-0"

    class Legacy(str, enum.Enum):  # noqa: UP042 -- the mixin whose str() is "Legacy.X", not its value
        X = "x"

    class Size(enum.IntEnum):
        BIG = 7

    row: tuple[Value, ...] = (Rail.R0, Legacy.X, Size.BIG, True)
    ws = _load(write_workbook([Sheet(name="S", header=("a", "b", "c", "d"), rows=[row])]))["S"]
    assert [c.value for c in ws[2]] == ["rail-0", "x", 7, True]
    with pytest.raises(TypeError):
        write_workbook([Sheet(name="S", header=("a",), rows=[(object(),)])])  # type: ignore[list-item]


def test_empty_rows_give_a_header_only_sheet() -> None:
    ws = _load(write_workbook([Sheet(name="Empty", header=("a", "bb"), rows=iter(()), fills=iter(()))]))["Empty"]
    assert ws.max_row == 1
    assert ws.auto_filter.ref == "A1:B1"
    assert ws.column_dimensions["B"].width == 5  # computed: len("bb") + 3


def test_computed_widths() -> None:
    rows = [("x" * 100, 123456, 2.5, None)] + [("a", 1, 1.0, None)] * 300 + [(None, 10**30, None, "z" * 40)]
    ws = _load(write_workbook([Sheet(name="W", header=("name", "n", "f", "late"), rows=rows)]))["W"]
    widths = [ws.column_dimensions[c].width for c in "ABCD"]
    assert widths == [60, 7, 4, 7]  # capped at 60; only the first 200 rows are sampled, so "late" keeps its header


def test_deterministic_bytes_and_zip_metadata() -> None:
    first, second = _book(), _book()
    assert first == second
    infos = zipfile.ZipFile(BytesIO(first)).infolist()
    assert [i.filename for i in infos] == [
        "[Content_Types].xml", "_rels/.rels", "docProps/app.xml", "docProps/core.xml", "xl/styles.xml",
        "xl/worksheets/sheet1.xml", "xl/worksheets/sheet2.xml", "xl/_rels/workbook.xml.rels", "xl/workbook.xml"]
    assert {(i.date_time, i.create_system, i.compress_type) for i in infos} == {
        ((1980, 1, 1, 0, 0, 0), 0, zipfile.ZIP_DEFLATED)}


def test_every_part_is_well_formed_xml() -> None:
    with zipfile.ZipFile(BytesIO(_book())) as zf:
        roots = {name: ET.fromstring(zf.read(name)) for name in zf.namelist()}
    main = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
    names = roots["xl/workbook.xml"].findall(f"{main}definedNames/{main}definedName")
    assert [(n.get("name"), n.get("localSheetId"), n.text) for n in names] == [
        ("_xlnm._FilterDatabase", "0", "'Compute cabling'!$A$1:$F$6"),
        ("_xlnm.Print_Titles", "0", "'Compute cabling'!$1:$1"),
        ("_xlnm._FilterDatabase", "1", "'Storage'!$A$1:$B$2"),
        ("_xlnm.Print_Titles", "1", "'Storage'!$1:$1")]
    fills = roots["xl/styles.xml"].findall(f"{main}fills/{main}fill/{main}patternFill")
    assert [f.get("patternType") for f in fills[:2]] == ["none", "gray125"]
    assert len(roots["xl/styles.xml"].findall(f"{main}cellXfs/{main}xf")) == 2 + len(PALETTE)


@pytest.mark.parametrize("name", ["", "x" * 32, "a[b", "a]b", "a:b", "a*b", "a?b", "a/b", "a\\b", "'quoted", "quoted'",
                                  "bell\x07"])
def test_invalid_sheet_names_raise(name: str) -> None:
    with pytest.raises(ValueError, match="sheet name"):
        write_workbook([Sheet(name=name, header=("a",), rows=[])])


def test_odd_but_valid_sheet_name_is_quoted() -> None:
    wb = _load(write_workbook([Sheet(name="Rack's & <x>", header=("a",), rows=[("v",)])]))
    assert wb.sheetnames == ["Rack's & <x>"]
    assert wb["Rack's & <x>"].print_title_rows == "$1:$1"


@pytest.mark.parametrize(("sheets", "palette", "match"), [
    ([Sheet("A", ("a",), []), Sheet("a", ("a",), [])], (), "duplicate"),
    ([Sheet("A", ("a",), [])], ("#FF0000",), "palette"),
    ([Sheet("A", ("a",), [("x",)], fills=[3])], PALETTE, "not a palette index"),
    ([Sheet("A", ("a",), [("x",)], fills=[-1])], PALETTE, "not a palette index"),
    ([Sheet("A", ("a",), [("x",), ("y",)], fills=[0])], PALETTE, "shorter"),
    ([Sheet("A", ("a",), [("x",)], fills=[0, 1])], PALETTE, "longer"),
    ([Sheet("A", ("a",), [("x", "y")])], (), "cells for 1 columns"),
    ([Sheet("A", ("a",), [(float("nan"),)])], (), "nan"),
    ([Sheet("A", ("a",), [(float("inf"),)])], (), "inf"),
    ([Sheet("A", ("a",), [], page_breaks_before=[-1])], (), "page breaks must be >= 0"),
    ([Sheet("A", ("a",), [("x",)] * 1100, page_breaks_before=range(1100))], (), "at most 1023"),
    ([Sheet("A", ("a",), [], widths=(1, 2))], (), "widths"),
    ([Sheet("A", (), [])], (), "header"),
    ([], (), "at least one"),
])
def test_bad_input_raises(sheets: list[Sheet], palette: tuple[str, ...], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        write_workbook(sheets, palette)


def test_large_generator_streams() -> None:
    """2 sheets x 65,000 rows x 25 columns from generators, shaped like a cabling sheet (names repeat, IDs don't)."""
    def rows(tag: str) -> Iterator[tuple[Value, ...]]:
        for i in range(65_000):
            rack = i // 32
            yield (f"C{i:06d}-{tag}", f"su{rack // 16:02d}-r{rack:03d}-n{i % 32:02d}", f"p{i % 8}", f"leaf-{i % 8}",
                   f"swp{i % 64 + 1}", "OSFP", "400G", i % 8, rack, 3.5 + i % 7, "AOC" if i % 3 else "DAC",
                   None if i % 5 else "note", f"rack-{rack:03d}", f"U{i % 42}", i, i * 2, "blue", "green",
                   f"P{i % 4}", f"lbl-{i:06d}", "A", "B", 1.25, None, f"x{i % 100}")

    header = tuple(f"Column {j}" for j in range(25))
    start = time.perf_counter()
    data = write_workbook([
        Sheet("Compute", header, rows("a"), fills=(i % 3 for i in range(65_000)),
              page_breaks_before=range(0, 65_000, 128)),
        Sheet("Storage", header, rows("b")),
    ], palette=PALETTE)
    elapsed = time.perf_counter() - start
    print(f"\nxlsx: 2 sheets x 65,000 rows x 25 columns in {elapsed:.2f} s, {len(data) / 1e6:.1f} MB "
          f"(deflate level {COMPRESS_LEVEL})")
    with zipfile.ZipFile(BytesIO(data)) as zf:
        for name in ("xl/worksheets/sheet1.xml", "xl/worksheets/sheet2.xml"):
            xml = zf.read(name)
            assert b'<autoFilter ref="A1:Y65001"/>' in xml[-40_000:]  # before pageSetup and the row breaks
            assert xml.count(b"<row ") == 65_001
