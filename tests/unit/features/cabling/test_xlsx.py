"""The streaming XLSX writer, checked by parsing every XML part; plus determinism, validation, and one timed
2 x 65,000 x 25 run (printed, not asserted, because wall time on shared CI runners is noise). openpyxl reads the
bytes back in tests/external/cabling/test_xlsx.py."""

from __future__ import annotations

import string
import time
import xml.etree.ElementTree as ET
import zipfile
from collections.abc import Iterator
from io import BytesIO

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fabricgen.core.templating import formula_like
from fabricgen.features.cabling import xlsx
from fabricgen.features.cabling.xlsx import COMPRESS_LEVEL, Sheet, Value, column_letter, write_workbook
from tests.helpers.cabling import XLSX_PALETTE as PALETTE
from tests.helpers.cabling import xlsx_book as _book


def test_column_letters() -> None:
    assert [column_letter(i) for i in (0, 25, 26, 51, 52, 701, 702, 16_383)] == [
        "A", "Z", "AA", "AZ", "BA", "ZZ", "AAA", "XFD"]


def test_deterministic_bytes_and_zip_metadata() -> None:
    first, second = _book(), _book()
    assert first == second
    infos = zipfile.ZipFile(BytesIO(first)).infolist()
    assert [i.filename for i in infos] == [
        "[Content_Types].xml", "_rels/.rels", "docProps/app.xml", "docProps/core.xml",
        "xl/worksheets/sheet1.xml", "xl/worksheets/sheet2.xml", "xl/styles.xml", "xl/_rels/workbook.xml.rels",
        "xl/workbook.xml"]
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
    assert len(roots["xl/styles.xml"].findall(f"{main}cellXfs/{main}xf")) == 3 + 2 * len(PALETTE)


@pytest.mark.parametrize("name", ["", "x" * 32, "a[b", "a]b", "a:b", "a*b", "a?b", "a/b", "a\\b", "'quoted", "quoted'",
                                  "bell\x07"])
def test_invalid_sheet_names_raise(name: str) -> None:
    with pytest.raises(ValueError, match="sheet name"):
        write_workbook([Sheet(name=name, header=("a",), rows=[])])


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


@settings(max_examples=3000, deadline=None)
@given(st.text(alphabet=st.sampled_from(string.printable + "\x00\x0b_&<>=+-@ é\u2028"), max_size=8))
def test_plain_text_fast_path_writes_what_the_general_path_writes(value: str) -> None:
    """A text the fast path takes (printable ASCII needing no escape) gets the same cell as the general path,
    which strips, escapes and marks formula-like texts."""
    general = xlsx._text(value)
    general = xlsx._QUOTED + general if formula_like(value) else general
    fast = xlsx._PLAIN.fullmatch(value) is not None
    assert xlsx._data_text(value) == general
    assert fast <= (general == f' t="inlineStr"><is><t>{value}</t></is></c>')


def test_floats_are_written_as_their_repr_even_where_equal_ones_differ() -> None:
    """The per-sheet float cache never turns -0.0 into 0.0 (equal keys), and keeps every other value's repr."""
    rows: list[tuple[Value, ...]] = [(0.0,), (-0.0,), (3.0,), (3.0,), (2.5,), (-0.0,)]
    book = zipfile.ZipFile(BytesIO(write_workbook([Sheet("A", ("a",), rows)], PALETTE)))
    sheet = book.read("xl/worksheets/sheet1.xml").decode()
    assert [v.split("</v>")[0] for v in sheet.split("<v>")[1:]] == ["0.0", "-0.0", "3.0", "3.0", "2.5", "-0.0"]


_CELL_VALUES = st.one_of(st.text(alphabet=st.sampled_from(string.printable + "\x00_&<>=-é"), max_size=6),
                         st.integers(-3, 3), st.floats(allow_nan=False, allow_infinity=False), st.none(),
                         st.booleans(), st.sampled_from([0.0, -0.0, 1.0, 1, True, "1"]))


@settings(max_examples=1500, deadline=None)
@given(st.integers(1, 4).flatmap(lambda width: st.lists(
    st.tuples(st.tuples(*[_CELL_VALUES] * width), st.tuples(*[st.sampled_from(['<c', '<c s="3"'])] * width)),
    min_size=1, max_size=12)))
def test_column_fast_path_writes_what_the_row_path_writes(rows: list[tuple[tuple[Value, ...], tuple[str, ...]]]
                                                         ) -> None:
    """A chunk of full rows built a column at a time (values of one kind looked up by map, 1, 1.0 and True kept
    apart, -0.0 never cached as 0.0) is the text a row at a time writes."""
    chunk, opens = [values for values, _ in rows], [o for _, o in rows]
    assert (xlsx._chunk_by_columns(chunk, opens, 2, xlsx._Cells())
            == xlsx._chunk_by_rows(chunk, opens, 2, xlsx._Cells()))


def test_an_empty_text_is_a_blank_cell_not_an_empty_string() -> None:
    """Field review (UX): the check-off columns were written as empty inline strings, which Excel's COUNTA counts
    (a sheet's "plugged" tally read every row as ticked) and a filter's "(Blanks)" does not select. "" is written
    as None is: a styled cell with no value."""
    book = write_workbook([Sheet("s", ("plugged", "device"), [("", "gpu001"), (None, "gpu002")])])
    ns = {"m": "http://schemas.openxmlformats.org/spreadsheetml/2006/main"}
    sheet = ET.fromstring(zipfile.ZipFile(BytesIO(book)).read("xl/worksheets/sheet1.xml"))
    rows = [list(row) for row in sheet.iterfind(".//m:row", ns)][1:]  # data cells are placed by their order
    for check, device in rows:
        assert check.get("t") is None and len(check) == 0, ET.tostring(check)
        assert device.get("t") == "inlineStr"
