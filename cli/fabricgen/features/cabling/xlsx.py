"""A small streaming XLSX writer for cabling sheets: pure (returns bytes), deterministic, standard library only.

Why hand-written: XlsxWriter (constant_memory) and openpyxl (write_only) took ~22-25 s for 2 sheets x 65,000 rows
x 25 columns, an order of magnitude more than building the SpreadsheetML text directly, against a 5 s budget for the
whole 16,384-GPU run. So it does only what cabling sheets need. Why byte-stable: artifacts are diffed and golden-tested.
Caveat: Excel documents that "fit to N pages" scaling overrides manual page breaks, so Excel may ignore
``page_breaks_before``; they are still written (Page Break Preview and other readers show them).
"""

from __future__ import annotations

import math
import re
import zipfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from io import BytesIO
from itertools import chain, count, islice, repeat
from typing import IO, cast
from xml.sax.saxutils import escape, quoteattr

from fabricgen.core.templating import formula_like

Value = str | int | float | None

# Deflate level, measured on 2 sheets x 65,000 rows x 25 cabling-like columns (166 MB of XML): level 1 took 0.4 s
# for 18.9 MB, level 6 took 2.1 s for 15.4 MB. The budget is time and the files are regenerated every run, so 1.
COMPRESS_LEVEL = 1
_MAX_ROWS, _MAX_COLS, _MAX_CHARS = 1_048_576, 16_384, 32_767  # Excel's sheet and cell limits
_MAX_BREAKS = 1023  # Excel's practical limit of manual breaks per sheet (the spec says 1026; XlsxWriter keeps 1023)
_WIDTH_SAMPLE, _MAX_WIDTH, _CHUNK_ROWS, _CACHE_MAX = 200, 60.0, 1000, 200_000
_BAD_NAME = re.compile(r"[\[\]:*?/\\]")
_ILLEGAL_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")  # outside XML 1.0's Char
_EXCEL_ESCAPE = re.compile("(_x[0-9A-Fa-f]{4}_)")  # Excel decodes a literal _xHHHH_ to a character unless escaped
_HEX6 = re.compile("[0-9A-Fa-f]{6}")


def _printable_but(excluded: str) -> str:
    """A regex class of printable ASCII but ``excluded``."""
    return "[" + "".join(re.escape(chr(c)) for c in range(0x20, 0x7F) if chr(c) not in excluded) + "]"


# Most cell texts (names, ports, labels) are printable ASCII that needs nothing of _text: no escape, no "_x", no edge
# space, no formula start. One match tells; it halves the cost of a cabling sheet's unique texts (labels, ids).
_PLAIN = re.compile(f"{_printable_but('&<>_ =+-@')}(?:{_printable_but('&<>_')}*{_printable_but('&<>_ ')})?")
_PATTERN_TYPES = frozenset({  # ECMA-376 ST_PatternType but "none"
    "solid", "mediumGray", "darkGray", "lightGray", "darkHorizontal", "darkVertical", "darkDown", "darkUp",
    "darkGrid", "darkTrellis", "lightHorizontal", "lightVertical", "lightDown", "lightUp", "lightGrid",
    "lightTrellis", "gray125", "gray0625"})
_XML = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
_MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
_OD = "http://schemas.openxmlformats.org/officeDocument/2006"
_PKG = "http://schemas.openxmlformats.org/package/2006"
_CT = "application/vnd.openxmlformats-"
_SELECTED = ' tabSelected="1"'
_WRAP = '<alignment vertical="top" wrapText="1"/>'
_THIN = "".join(f'<{side} style="thin"><color rgb="FF808080"/></{side}>' for side in ("left", "right", "top", "bottom"))


@dataclass(frozen=True)
class Sheet:
    """One worksheet. ``rows`` and ``fills`` may be generators: they are consumed once, in step, while writing."""

    name: str
    header: tuple[str, ...]
    rows: Iterable[tuple[Value, ...]]
    fills: Iterable[int | None] | None = None  # per row: palette index or None; must be exactly as long as rows
    # The one column whose cell takes a row's fill, in bold (the others boxed, unfilled: a rail's pattern under the
    # rail number only, where it cannot hide other text); None: every cell of the row.
    fill_column: int | None = None
    # Per row (in step with fills, as long as rows): whether its first ``bare_columns`` cells are left unstyled, no
    # box (a splitter's leg beneath its trunk has no check-off boxes of its own).
    bare_rows: Iterable[bool] | None = None
    bare_columns: int = 0
    widths: tuple[float, ...] | None = None  # characters; None: from the header and the first 200 rows, capped at 60
    page_breaks_before: Iterable[int] | None = None  # 0-based data-row indexes that must start a printed page
    landscape: bool = True
    page_header: tuple[str, str, str] | None = None  # printed left, centre, right; the footer then "Page n of m"


def column_letter(index: int) -> str:
    """0-based column index to letters (0 -> A, 26 -> AA); called once per column, never per cell."""
    return (column_letter(index // 26 - 1) if index >= 26 else "") + chr(65 + index % 26)


def _check_name(name: str, seen: set[str]) -> None:
    """Excel refuses (or silently 'repairs') a bad or duplicate sheet name, so fail here where the cause is clear."""
    if not 0 < len(name) <= 31 or _BAD_NAME.search(name) or _ILLEGAL_XML.search(name) or "'" in (name[0], name[-1]):
        raise ValueError(f"invalid sheet name {name!r}: 1-31 characters, none of []:*?/\\, no leading/trailing '")
    if name.lower() in seen:
        raise ValueError(f"duplicate sheet name {name!r} (Excel compares names case-insensitively)")
    seen.add(name.lower())


def _text(value: str) -> str:
    """Tail of an inline-string cell: XML-illegal characters stripped, ``&<>`` escaped, edge spaces preserved."""
    if _ILLEGAL_XML.search(value):
        value = _ILLEGAL_XML.sub("", value)
    if len(value) > _MAX_CHARS:
        raise ValueError(f"string of {len(value)} characters exceeds Excel's cell limit of {_MAX_CHARS}")
    if "_x" in value:
        value = _EXCEL_ESCAPE.sub(r"_x005F\1", value)
    space = ' xml:space="preserve"' if value[:1].isspace() or value[-1:].isspace() else ""
    return f' t="inlineStr"><is><t{space}>{escape(value)}</t></is></c>'


def _other(value: object) -> str:
    """Tail of a cell that is not exactly str/int/None: floats, bools, str/int enums. NaN and infinities have no
    SpreadsheetML form (Excel would reject the file), so they raise rather than turn into blanks."""
    if isinstance(value, bool):
        return f' t="b"><v>{int(value)}</v></c>'
    if isinstance(value, str):
        return _text(str.__str__(value))  # the member's value, not "Tier.LEAF" from a (str, Enum) mixin
    if isinstance(value, float) and math.isfinite(value):
        return f"><v>{float.__repr__(value)}</v></c>"
    if isinstance(value, int):
        return f"><v>{int.__repr__(value)}</v></c>"  # an IntEnum's number, not "<Size.BIG: 7>"
    raise (ValueError if isinstance(value, float) else TypeError)(f"cannot write cell value {value!r}")


def _widths(sheet: Sheet, sample: list[tuple[Value, ...]]) -> list[float]:
    """Explicit widths, or the longest text per column: header + 3 (bold, filter button), data + 1, capped."""
    if sheet.widths is not None:
        if len(sheet.widths) != len(sheet.header) or not all(0 < w <= 255 for w in sheet.widths):
            raise ValueError(f"sheet {sheet.name!r}: need {len(sheet.header)} widths, each in (0, 255]")
        return [float(w) for w in sheet.widths]
    longest = [len(h) + 3 for h in sheet.header]
    for row in sample:
        for i, v in enumerate(row[: len(longest)]):
            longest[i] = max(longest[i], 0 if v is None else len(v if isinstance(v, str) else repr(v)) + 1)
    return [min(_MAX_WIDTH, float(n)) for n in longest]


_QUOTED = "\0"  # marks the tail of a formula-like text; no cell text holds it (_ILLEGAL_XML strips it)


def _data_text(value: str) -> str:
    """Tail of a data cell; a formula-like text (``=...``, ``-x``: OWASP's CSV injection) is marked for a style with
    ``quotePrefix``, Excel's own mark of a cell typed as ``'=...``, so editing it keeps it text. An inline string is
    never evaluated as it stands; numbers are numeric cells and keep their sign."""
    if _PLAIN.fullmatch(value) and len(value) <= _MAX_CHARS:
        return f' t="inlineStr"><is><t>{value}</t></is></c>'
    tail = _text(value)
    return _QUOTED + tail if formula_like(value) else tail


class _Floats(dict[float, str]):
    """Float -> cell tail: a sheet's lengths are a few orderable values. NaN is never found (it equals nothing), so
    it reaches ``_other`` and raises every time; zero is never kept, as 0.0 and -0.0 are one key but two texts."""

    def __missing__(self, value: float) -> str:
        return self.setdefault(value, _other(value)) if value and len(self) < _CACHE_MAX else _other(value)


# Values of these exact types never equal one of another (unlike 1, 1.0 and True), so one dict keyed by the value
# holds their cell tails.
_KEYED = frozenset({str, int, type(None)})


class _Tails(dict[Value, str]):
    """str, int or None -> cell tail. Cabling sheets repeat names, ports, U and rails, so each is cleaned and
    escaped once."""

    def __missing__(self, value: Value) -> str:  # bounded: unique strings (cable IDs) would only grow it
        # "" is a blank cell, as None: an empty inline string is a value to COUNTA and a filter's "(Blanks)" misses
        # it, so a check-off column left to tick by hand would count as ticked (field review, UX)
        tail = "/>" if value is None or value == "" else _data_text(value) if type(value) is str \
            else f"><v>{value}</v></c>"
        return self.setdefault(value, tail) if len(self) < _CACHE_MAX else tail


@dataclass
class _Cells:
    """One workbook's cell tails, kept while it is written: ``tail`` of any value, ``column`` of a whole column."""

    tails: _Tails = field(default_factory=_Tails)
    floats: _Floats = field(default_factory=_Floats)

    def tail(self, value: Value) -> str:
        kind = type(value)
        return self.tails[value] if kind in _KEYED else self.floats[cast(float, value)] if kind is float \
            else _other(value)

    def column(self, values: Sequence[Value]) -> Iterable[str]:
        """The tails of one column of a chunk: a column of only str, int and None (a sheet's names, ports, U) or of
        only floats (lengths) is looked up by ``map``, in C; any other mix a cell at a time."""
        kinds = set(map(type, values))
        if kinds <= _KEYED:
            return map(self.tails.__getitem__, values)
        if kinds == {float}:
            return map(self.floats.__getitem__, cast(Sequence[float], values))
        return map(self.tail, values)


def _chunk_by_rows(chunk: Sequence[tuple[Value, ...]], opens: Sequence[tuple[str, ...]], first: int,
                   cells: _Cells) -> str:
    """The general path: a row at a time, each cell its opening and tail; a row may have fewer cells than columns
    (its last cells are then absent)."""
    return "".join([f'<row r="{r}">' + "".join([o + cells.tail(v) for o, v in zip(o_row, row, strict=False)])
                    + "</row>" for r, o_row, row in zip(count(first), opens, chunk)])


def _chunk_by_columns(chunk: Sequence[tuple[Value, ...]], opens: Sequence[tuple[str, ...]], first: int,
                      cells: _Cells) -> str:
    """The fast path, for a chunk whose rows all have every column: the same text as ``_chunk_by_rows``, built a
    column at a time so the loops over cells run in C (``zip``, ``map``, ``join``) rather than as a Python
    expression per cell (this was the workbook's largest cost)."""
    pieces: list[Iterable[str]] = [[f'<row r="{r}">' for r in range(first, first + len(chunk))]]
    for openings, values in zip(zip(*opens, strict=True), zip(*chunk, strict=True), strict=True):
        pieces += (openings, cells.column(values))
    pieces.append(repeat("</row>", len(chunk)))
    return "".join(chain.from_iterable(zip(*pieces, strict=True)))


class _RowKinds(dict[tuple[object, object], tuple[str, ...]]):
    """(fill, bare) -> each cell's opening in a row of that kind (``_Styles.openings``), made once per kind."""

    def __init__(self, styles: _Styles, width: int, sheet: Sheet) -> None:
        super().__init__()
        self.styles, self.width, self.sheet = styles, width, sheet

    def __missing__(self, kind: tuple[object, object]) -> tuple[str, ...]:
        fill, bare = kind
        return self.setdefault(kind, self.styles.openings(fill, bool(bare), self.width, self.sheet))


def _bad_row(chunk: Sequence[tuple[Value, ...]], fills: Sequence[object], bares: Sequence[object], before: int,
             width: int, styles: _Styles) -> str:
    """What is wrong with the first bad row of a chunk that failed ``_rows_xml``'s checks (its fill, then its
    length), as a check a row at a time would name it; ``before``: the data rows of the chunks before."""
    for i, row in enumerate(chunk):
        short = i >= len(fills) or i >= len(bares)
        if short or fills[i] not in styles.fills:
            why = "fills or bare_rows is shorter than rows" if short else f"fill {fills[i]!r} is not a palette index"
            return f"data row {before + i}: {why}"
        if len(row) > width:
            return f"data row {before + i} has {len(row)} cells for {width} columns"
    return "a row failed its checks"


def _rows_xml(sheet: Sheet, rows: Iterable[tuple[Value, ...]], letters: list[str], styles: _Styles, cells: _Cells
              ) -> Iterator[tuple[str, int]]:
    """Yield (xml chunk, data rows so far), ``_CHUNK_ROWS`` rows at a time: bounded memory, one write per chunk.
    Cells carry no r="A7": SpreadsheetML places them left to right (halves the cost per cell). Each cell's opening
    (its style) comes from its row's fill, made once per kind of row."""
    fill_iter = iter(sheet.fills) if sheet.fills is not None else None
    bare_iter = iter(sheet.bare_rows) if sheet.bare_rows is not None else None
    width, n, rows = len(letters), 0, iter(rows)
    kinds = _RowKinds(styles, width, sheet)
    while chunk := list(islice(rows, _CHUNK_ROWS)):
        fills = [None] * len(chunk) if fill_iter is None else list(islice(fill_iter, len(chunk)))
        bares = [False] * len(chunk) if bare_iter is None else list(islice(bare_iter, len(chunk)))
        lengths = set(map(len, chunk))
        if len(fills) < len(chunk) or len(bares) < len(chunk) or not set(fills) <= styles.fills \
                or max(lengths) > width:
            raise ValueError(f"sheet {sheet.name!r}: {_bad_row(chunk, fills, bares, n, width, styles)}")
        opens = list(map(kinds.__getitem__, zip(fills, bares, strict=True)))
        by = _chunk_by_columns if lengths == {width} else _chunk_by_rows
        xml = by(chunk, opens, n + 2, cells)
        n += len(chunk)
        yield (styles.quoted(xml) if _QUOTED in xml else xml), n  # rare: one scan of the chunk, not of each cell
    end = object()
    if any(it is not None and next(it, end) is not end for it in (fill_iter, bare_iter)):
        raise ValueError(f"sheet {sheet.name!r}: fills or bare_rows is longer than rows ({n})")
    if n >= _MAX_ROWS:
        raise ValueError(f"sheet {sheet.name!r}: {n} data rows exceed Excel's limit of {_MAX_ROWS - 1}")


def _write_sheet(out: IO[bytes], sheet: Sheet, first: bool, styles: _Styles, cells: _Cells) -> tuple[str, int]:
    """Stream one worksheet part; return (last column, last row): with a generator, known only at its end."""
    if not 0 < len(sheet.header) <= _MAX_COLS:
        raise ValueError(f"sheet {sheet.name!r}: header needs 1 to {_MAX_COLS} columns")
    rows = iter(sheet.rows)
    sample = [] if sheet.widths is not None else list(islice(rows, _WIDTH_SAMPLE))  # replayed below, not re-read
    cols = "".join(f'<col min="{i}" max="{i}" width="{w:g}" customWidth="1"/>'
                   for i, w in enumerate(_widths(sheet, sample), 1))
    letters = [column_letter(i) for i in range(len(sheet.header))]
    header = "".join(f'<c r="{c}1" s="1"{_text(h)}' for c, h in zip(letters, sheet.header, strict=True))
    out.write(f'{_XML}<worksheet xmlns="{_MAIN}" xmlns:r="{_OD}/relationships">'
              f'<sheetPr><pageSetUpPr fitToPage="1"/></sheetPr><sheetViews><sheetView{_SELECTED if first else ""}'
              ' workbookViewId="0"><pane ySplit="1" topLeftCell="A2" activePane="bottomLeft" state="frozen"/>'
              '<selection pane="bottomLeft" activeCell="A2" sqref="A2"/></sheetView></sheetViews>'
              f'<sheetFormatPr defaultRowHeight="15"/><cols>{cols}</cols><sheetData><row r="1">{header}</row>'
              .encode())
    n = 0
    for chunk, n in _rows_xml(sheet, chain(sample, rows), letters, styles, cells):  # noqa: B007 -- n is used below
        out.write(chunk.encode())
    asked = list(sheet.page_breaks_before or ())
    breaks = sorted({b for b in asked if 0 < b < n})  # data row 0 starts page 1 anyway; past the end means nothing
    if len(breaks) > _MAX_BREAKS or min(asked, default=0) < 0:
        raise ValueError(f"sheet {sheet.name!r}: page breaks must be >= 0 and at most {_MAX_BREAKS} (Excel's limit)")
    brks = "".join(f'<brk id="{b + 1}" max="16383" man="1"/>' for b in breaks)  # id: 0-based sheet row to break above
    row_breaks = f'<rowBreaks count="{len(breaks)}" manualBreakCount="{len(breaks)}">{brks}</rowBreaks>'
    out.write(f'</sheetData><autoFilter ref="A1:{letters[-1]}{n + 1}"/>'
              '<pageMargins left="0.5" right="0.5" top="0.75" bottom="0.75" header="0.3" footer="0.3"/>'
              f'<pageSetup orientation="{"landscape" if sheet.landscape else "portrait"}" fitToWidth="1"'
              f' fitToHeight="0"/>{_header_footer(sheet.page_header)}{row_breaks if breaks else ""}</worksheet>'
              .encode())
    return letters[-1], n + 1


def _header_footer(header: tuple[str, str, str] | None) -> str:
    """The printed page header (left, centre, right) and a footer "Page n of m" (&P, &N). A literal ``&`` is
    ``&&`` in SpreadsheetML's header codes; the text is XML-escaped after that."""
    if header is None:
        return ""
    left, centre, right = (escape(_ILLEGAL_XML.sub("", part).replace("&", "&&")) for part in header)
    return (f"<headerFooter><oddHeader>&amp;L{left}&amp;C{centre}&amp;R{right}</oddHeader>"
            "<oddFooter>&amp;CPage &amp;P of &amp;N</oddFooter></headerFooter>")


@dataclass
class _Styles:
    """Cell styles (cellXfs) by row fill: 0 default, 1 header, 2+i palette fill i, 2+P plain boxed, 3+P+i fill i
    in bold (a ``fill_column`` cell); then, written only if a cell used one, each of those with quotePrefix at
    ``count`` + its index."""

    palette: int
    used_quoted: bool = False
    fills: frozenset[object] = field(init=False)
    count: int = field(init=False)

    def __post_init__(self) -> None:
        self.fills = frozenset({None, *range(self.palette)})
        self.count = 3 + 2 * self.palette

    def openings(self, fill: object, bare: bool, width: int, sheet: Sheet) -> tuple[str, ...]:
        """Each cell's ``<c s="..."`` of a row with ``fill``: no style without one; else every cell filled, or only
        ``sheet.fill_column``'s (bold) and the others boxed; a ``bare`` row's first ``bare_columns`` unstyled."""
        if not isinstance(fill, int):
            return ("<c",) * width
        cells = [f'<c s="{2 + fill}"'] * width
        if sheet.fill_column is not None:
            cells = [f'<c s="{2 + self.palette}"'] * width
            cells[sheet.fill_column] = f'<c s="{3 + self.palette + fill}"'
        if bare:
            cells[:sheet.bare_columns] = ["<c"] * min(sheet.bare_columns, width)
        return tuple(cells)

    def quoted(self, cells: str) -> str:
        """The row's marked (formula-like) text cells moved to their style's quotePrefix twin."""
        self.used_quoted = True
        return _MARKED.sub(lambda m: f'<c s="{self.count + int(m[1] or 0)}"', cells)


_MARKED = re.compile('<c(?: s="([0-9]+)")?' + _QUOTED)


def _styles(palette: list[str], patterns: Sequence[str], quoted: bool) -> str:
    """cellXfs as ``_Styles`` numbers them (when ``quoted``, each again with quotePrefix); fills 0 and 1 are the
    two Excel requires, palette fill i is ``patterns[i]`` (SpreadsheetML's pattern type, default solid) in dark
    grey over palette[i]. Data cells wrap, top-aligned: a column narrower than its text (a sheet's free text,
    fitted to print) then grows its row instead of cutting it. The header and data cells have thin grey borders: a
    number never runs into the next column's text, and an empty check-off cell prints as a box to tick."""
    def fill(colour: str, pattern: str) -> str:
        ink = f'<fgColor rgb="FF{colour}"/><bgColor indexed="64"/>' if pattern == "solid" else \
            f'<fgColor rgb="FF404040"/><bgColor rgb="FF{colour}"/>'
        return f'<fill><patternFill patternType="{pattern}">{ink}</patternFill></fill>'

    fills = fill("D9D9D9", "solid") + "".join(
        fill(c, patterns[i] if i < len(patterns) else "solid") for i, c in enumerate(palette))

    def xf(font: int, fill_id: int, quote: str) -> str:  # boxed, wrapping, top-aligned
        return (f'<xf numFmtId="0" fontId="{font}" fillId="{fill_id}" borderId="1" xfId="0" applyFont="1"'
                f' applyFill="1" applyBorder="1"{quote} applyAlignment="1">{_WRAP}</xf>')

    def data(quote: str) -> str:  # 2+i palette fills, 2+P plain boxed, 3+P+i palette fills in bold
        return "".join([*(xf(0, i + 3, quote) for i in range(len(palette))), xf(0, 0, quote),
                        *(xf(1, i + 3, quote) for i in range(len(palette)))])

    header = ('<xf numFmtId="0" fontId="1" fillId="2" borderId="1" xfId="0" applyFont="1" applyFill="1"'
              ' applyBorder="1"{}/>')
    xfs = '<xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0"/>' + header.format("") + data("")
    if quoted:
        xfs += ('<xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0" quotePrefix="1"/>'
                + header.format(' quotePrefix="1"') + data(' quotePrefix="1"'))
    count = (3 + 2 * len(palette)) * (2 if quoted else 1)
    font = '<sz val="11"/><name val="Calibri"/><family val="2"/></font>'
    return (f'{_XML}<styleSheet xmlns="{_MAIN}"><fonts count="2"><font>{font}<font><b/>{font}</fonts>'
            f'<fills count="{3 + len(palette)}"><fill><patternFill patternType="none"/></fill>'
            f'<fill><patternFill patternType="gray125"/></fill>{fills}</fills>'
            f'<borders count="2"><border><left/><right/><top/><bottom/><diagonal/></border><border>{_THIN}'
            '<diagonal/></border></borders>'
            '<cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/></cellStyleXfs>'
            f'<cellXfs count="{count}">{xfs}'
            '</cellXfs><cellStyles count="1"><cellStyle name="Normal" xfId="0" builtinId="0"/></cellStyles>'
            '<dxfs count="0"/><tableStyles count="0"/></styleSheet>')


def _rels(*targets: tuple[str, str]) -> str:
    """A relationships part; Ids are rId1.. in the given order."""
    body = "".join(f'<Relationship Id="rId{i}" Type="{t}" Target="{p}"/>' for i, (t, p) in enumerate(targets, 1))
    return f'{_XML}<Relationships xmlns="{_PKG}/relationships">{body}</Relationships>'


def _put(zf: zipfile.ZipFile, parts: dict[str, str]) -> None:
    """Add small parts. A str name (unlike writestr's) gets ZipInfo's fixed 1980-01-01 timestamp and zf's level."""
    for part, text in parts.items():
        with zf.open(part, "w") as out:
            out.write(text.encode())


def write_workbook(sheets: Sequence[Sheet], palette: Sequence[str] = (), patterns: Sequence[str] = ()) -> bytes:
    """The .xlsx bytes for ``sheets``; ``palette`` holds 'RRGGBB' row fill colours that ``Sheet.fills`` index into,
    ``patterns`` their SpreadsheetML pattern types (``solid`` where none is given).

    Sheets are zipped before workbook.xml: its hidden _FilterDatabase names (Excel writes one per autoFilter) need
    each sheet's row count, which a generator reveals only at its end."""
    if not sheets:
        raise ValueError("a workbook needs at least one sheet")
    seen: set[str] = set()
    for sheet in sheets:
        _check_name(sheet.name, seen)
    if not all(isinstance(c, str) and _HEX6.fullmatch(c) for c in palette):
        raise ValueError(f"palette entries must be 'RRGGBB' hex strings, got {list(palette)!r}")
    if not set(patterns) <= _PATTERN_TYPES:
        raise ValueError(f"patterns must be SpreadsheetML pattern types, got {list(patterns)!r}")
    styles, cells = _Styles(len(palette)), _Cells()  # one workbook's sheets repeat names, ports and lengths
    numbers = range(1, len(sheets) + 1)
    types = [("/xl/workbook.xml", "officedocument.spreadsheetml.sheet.main+xml"),
             *((f"/xl/worksheets/sheet{i}.xml", "officedocument.spreadsheetml.worksheet+xml") for i in numbers),
             ("/xl/styles.xml", "officedocument.spreadsheetml.styles+xml"),
             ("/docProps/core.xml", "package.core-properties+xml"),
             ("/docProps/app.xml", "officedocument.extended-properties+xml")]
    buf, names, entries = BytesIO(), list[str](), list[str]()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=COMPRESS_LEVEL) as zf:
        _put(zf, {
            "[Content_Types].xml": f'{_XML}<Types xmlns="{_PKG}/content-types"><Default Extension="rels"'
            f' ContentType="{_CT}package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/>'
            + "".join(f'<Override PartName="{p}" ContentType="{_CT}{t}"/>' for p, t in types) + "</Types>",
            "_rels/.rels": _rels((f"{_OD}/relationships/officeDocument", "xl/workbook.xml"),
                                 (f"{_PKG}/relationships/metadata/core-properties", "docProps/core.xml"),
                                 (f"{_OD}/relationships/extended-properties", "docProps/app.xml")),
            "docProps/app.xml": f'{_XML}<Properties xmlns="{_OD}/extended-properties">'
            "<Application>fabricgen</Application></Properties>",
            "docProps/core.xml": f'{_XML}<cp:coreProperties xmlns:cp="{_PKG}/metadata/core-properties"'
            ' xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:creator>fabricgen</dc:creator></cp:coreProperties>',
        })
        for i, sheet in enumerate(sheets):
            with zf.open(f"xl/worksheets/sheet{i + 1}.xml", "w") as out:
                col, last = _write_sheet(out, sheet, i == 0, styles, cells)
            quoted = escape("'" + sheet.name.replace("'", "''") + "'")
            names.append(f'<definedName name="_xlnm._FilterDatabase" localSheetId="{i}" hidden="1">'
                         f"{quoted}!$A$1:${col}${last}</definedName>"
                         f'<definedName name="_xlnm.Print_Titles" localSheetId="{i}">{quoted}!$1:$1</definedName>')
            entries.append(f'<sheet name={quoteattr(sheet.name)} sheetId="{i + 1}" r:id="rId{i + 1}"/>')
        _put(zf, {  # styles after the sheets: whether they need the quotePrefix styles is known only now
            "xl/styles.xml": _styles([c.upper() for c in palette], patterns, styles.used_quoted),
            "xl/_rels/workbook.xml.rels": _rels(
                *((f"{_OD}/relationships/worksheet", f"worksheets/sheet{i}.xml") for i in numbers),
                (f"{_OD}/relationships/styles", "styles.xml")),
            "xl/workbook.xml": f'{_XML}<workbook xmlns="{_MAIN}" xmlns:r="{_OD}/relationships"><workbookPr/>'
            f'<bookViews><workbookView/></bookViews><sheets>{"".join(entries)}</sheets>'
            f'<definedNames>{"".join(names)}</definedNames></workbook>',
        })
        for info in zf.infolist():  # the central directory records the host OS; pin it so every platform agrees
            info.create_system = 0
    return buf.getvalue()
