"""The streaming XLSX writer read back with openpyxl (an independent SpreadsheetML reader): sheets, header, view,
values and types, fills, print setup, escaping, widths. Determinism, the XML parts and validation are in
tests/unit/features/cabling/test_xlsx.py."""

from __future__ import annotations

import enum
import zipfile
from io import BytesIO

import pytest
from openpyxl import load_workbook  # type: ignore[import-untyped]
from openpyxl.workbook.workbook import Workbook  # type: ignore[import-untyped]

from fabricgen.features.cabling.xlsx import Sheet, Value, column_letter, write_workbook
from tests.helpers.cabling import XLSX_FILLS as FILLS
from tests.helpers.cabling import XLSX_HEADER as HEADER
from tests.helpers.cabling import XLSX_PALETTE as PALETTE
from tests.helpers.cabling import XLSX_ROWS as ROWS
from tests.helpers.cabling import xlsx_book as _book


def _load(data: bytes) -> Workbook:
    return load_workbook(BytesIO(data))


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
    # "" is written as a blank cell, as None (COUNTA and a filter's "(Blanks)" see it as empty)
    assert [[c.value for c in row] for row in ws.iter_rows(min_row=2)] == [
        [None if v == "" else v for v in r] for r in ROWS]
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


def test_odd_but_valid_sheet_name_is_quoted() -> None:
    wb = _load(write_workbook([Sheet(name="Rack's & <x>", header=("a",), rows=[("v",)])]))
    assert wb.sheetnames == ["Rack's & <x>"]
    assert wb["Rack's & <x>"].print_title_rows == "$1:$1"


def test_formula_like_text_stays_text_and_numbers_stay_numbers() -> None:
    """OWASP's CSV injection as XLSX has it: a text cell such as '=HYPERLINK(...)' is an inline string with
    quotePrefix (Excel's own mark of a typed '=...), its fill kept; a negative number is still a number."""
    rows = [("=HYPERLINK(\"http://x.example\")", -3, "-2+3", "plain"), ("@SUM(A1)", -1.5, "-1", "x")]
    book = write_workbook([Sheet(name="S", header=("a", "b", "c", "d"), rows=rows, fills=[0, None])],
                          palette=PALETTE)
    ws = _load(book)["S"]
    assert [[c.value for c in row] for row in ws.iter_rows(min_row=2)] == [list(r) for r in rows]
    assert [ws[f"A{r}"].quotePrefix for r in (2, 3)] == [True, True]
    assert (ws["C2"].quotePrefix, ws["C3"].quotePrefix, ws["D2"].quotePrefix) == (True, False, False)
    assert ws["A2"].data_type == "s" and ws["B2"].data_type == "n" and ws["B3"].value == -1.5
    assert ws["A2"].fill.patternType == "solid" and ws["A3"].fill.patternType is None


def test_a_workbook_without_formula_like_text_has_no_quoted_styles() -> None:
    with zipfile.ZipFile(BytesIO(_book())) as zf:
        assert b"quotePrefix" not in zf.read("xl/styles.xml")
