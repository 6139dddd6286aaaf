"""Target ``print``: cabling/rows/<row>.pdf, the cable sheets a technician prints, one file per row, each rack on
pages of its own.

Why written directly: a PDF of text and filled rectangles in the standard fonts is a few objects (catalog, page
tree, two font dictionaries, one page and one content stream per page) and an xref table. reportlab's canvas
drew the same pages in ~12 s for a 16,384-GPU cluster (4,728 pages), most of it per-call overhead and its object
serializer; here each page's content stream is built from strings made once (the column titles and legend once per
file, each distinct cell once per column, each row placed with one ``cm``), then deflated. reportlab is still used
for what it is the reference of: the standard fonts' metrics (``stringWidth``, Adobe's AFM widths). No dates, no
document id: the same spec gives byte-identical PDFs.

Every page: A4 landscape; a header with the rack and row, the site and cluster, and the rack's revision (the
digest of its rows, as its workbook sheet carries it); the column titles; the plugs of the rack in the handoff
order (top U first, ports in physical order; a splitter trunk's legs beneath it, without check-off boxes), a row
filled with its rail's colour; the rail legend; a footer with the rack's page i of k and the file's
page n of m. Columns are as wide as their longest text in the file and the font shrinks until they fit the page:
nothing is ever cut.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Sequence
from functools import partial

from reportlab.lib.pagesizes import A4, landscape
from reportlab.pdfbase.pdfmetrics import stringWidth

from fabricgen.core.artifacts import Artifact
from fabricgen.core.reuse import render_key, reused
from fabricgen.features.cabling.handoff import (
    CHECK_COLUMNS,
    END_COLUMNS,
    RAIL_PALETTE,
    RowSheets,
    page_header,
    rail_colour,
    rail_pattern,
    row_inputs,
    row_sheets,
)
from fabricgen.model.topology import Topology

PAGE_W, PAGE_H = landscape(A4)
MARGIN = 28.0
FONT, BOLD = "Helvetica", "Helvetica-Bold"
MAX_SIZE, PAD = 8.0, 3.0
HEADER_H, FOOTER_H, LEGEND_H = 40.0, 16.0, 16.0
COLUMNS = (*CHECK_COLUMNS, *END_COLUMNS)
NUMERIC = frozenset({"U", "to U", "length m", "rail"})
_Row = tuple[tuple[str, ...], int | None, bool]  # a printed row's texts, its rail mod 8, whether it is a plug
_HATCH_STEP = 2.5  # points between the lines of a rail's pattern


# Deflate level of the page streams, measured on the 16,384-GPU sheets: the level barely changes the size of
# text this repetitive, and the files are regenerated on every change.
COMPRESS_LEVEL = 1
ROW_PDF = "cabling.printout.row_pdf"  # the serializer's name in its render key (core/reuse.py)
FONTS = {FONT: "F1", BOLD: "F2"}


def _hex(colour: str) -> tuple[float, float, float]:
    return int(colour[:2], 16) / 255, int(colour[2:4], 16) / 255, int(colour[4:], 16) / 255


# The standard fonts' advance widths (AFM units, 1/1000 of the size) of the printable ASCII every cell is made of
# (_pdf_text refuses anything else): summing them is what stringWidth does per string, without its per-call cost.
_ADVANCE = {font: {chr(c): round(stringWidth(chr(c), font, 1000)) for c in range(32, 127)} for font in (FONT, BOLD)}


def _width(text: str, font: str = FONT) -> float:
    """Width at MAX_SIZE (widths scale with the size)."""
    return sum(map(_ADVANCE[font].__getitem__, text)) * MAX_SIZE / 1000


def _texts(texts: tuple[str, ...]) -> tuple[str, ...]:
    """The printed cells of a row of ``RackSheet.texts``: the check-off columns empty, the END_COLUMNS (the
    workbook's breakout leg column is not printed here)."""
    return ("", "", *texts[:len(END_COLUMNS)])


def _layout(sheets: RowSheets) -> tuple[float, list[float]]:
    """The font size and column widths (points) at which the longest text of every column fits the page width."""
    return _layout_of([_texts(texts) for sheet in sheets.racks.values() for texts in sheet.texts])


def _layout_of(texts: Sequence[tuple[str, ...]]) -> tuple[float, list[float]]:
    longest = [_width(c, BOLD) for c in COLUMNS]
    for i, column in enumerate(zip(*texts, strict=True)):
        longest[i] = max(longest[i], *map(_width, set(column)))
    usable = PAGE_W - 2 * MARGIN - 2 * PAD * len(COLUMNS)
    size = min(MAX_SIZE, MAX_SIZE * usable / sum(longest))
    return size, [w * size / MAX_SIZE + 2 * PAD for w in longest]


def _pdf_text(text: str) -> str:
    """A PDF literal string: backslash and parentheses escaped. Every text is ASCII (names, ports and parts pass
    the spec's strict patterns), which the standard fonts' encoding shows as it is."""
    if not text.isascii() or not text.isprintable():
        raise ValueError(f"cannot print {text!r} on a cable sheet")
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def _text(x: float, y: float, text: str, font: str = "", size: float = 0.0) -> str:
    """Text at (x, y); with ``font``, set it first (the text state outlives BT/ET until the next Q)."""
    tf = f"/{FONTS[font]} {size:g} Tf " if font else ""
    return f"BT {tf}1 0 0 1 {x:.2f} {y:.2f} Tm ({_pdf_text(text)}) Tj ET"


def _colour(colour: str) -> str:
    r, g, b = _hex(colour)
    return f"{r:.3f} {g:.3f} {b:.3f} rg"


def _hatch(pattern: str, x: float, y: float, w: float, h: float) -> str:
    """The dark grey lines of a rail's pattern over its colour in the box (x, y, w, h), clipped to it: the PDF's
    drawing of the SpreadsheetML pattern the workbook names (``handoff.RAIL_PATTERNS``), so rails stay apart on a
    monochrome print where their colours are one grey."""
    step, lines = _HATCH_STEP, []
    across = [y + step / 2 + k * step for k in range(int(h / step) + 1)]
    down = [x + step / 2 + k * step for k in range(int(w / step) + 1)]
    diagonal = [x - h + k * step for k in range(int((w + h) / step) + 2)]
    if pattern in ("lightHorizontal", "lightGrid"):
        lines += [f"{x:.2f} {v:.2f} m {x + w:.2f} {v:.2f} l" for v in across]
    if pattern in ("lightVertical", "lightGrid"):
        lines += [f"{u:.2f} {y:.2f} m {u:.2f} {y + h:.2f} l" for u in down]
    if pattern in ("lightDown", "lightTrellis"):
        lines += [f"{u:.2f} {y + h:.2f} m {u + h:.2f} {y:.2f} l" for u in diagonal]
    if pattern in ("lightUp", "lightTrellis"):
        lines += [f"{u:.2f} {y:.2f} m {u + h:.2f} {y + h:.2f} l" for u in diagonal]
    if pattern == "gray125":
        dots = " ".join(f"{u - 0.4:.2f} {v - 0.4:.2f} 0.8 0.8 re" for u in down for v in across)
        return f"q {x:.2f} {y:.2f} {w:.2f} {h:.2f} re W n 0.25 g {dots} f Q" if dots else ""
    if not lines:
        return ""
    return f"q {x:.2f} {y:.2f} {w:.2f} {h:.2f} re W n 0.25 G 0.4 w {' '.join(lines)} S Q"


def _swatch(rail: int | None, x: float, y: float, w: float, h: float) -> str:
    """A rail's colour and pattern filling the box (x, y, w, h)."""
    fill = f"{_colour(rail_colour(rail))} {x:.2f} {y:.2f} {w:.2f} {h:.2f} re f"
    return f"{fill} {_hatch(rail_pattern(rail), x, y, w, h)}".rstrip()


class _Cells(dict[str, str]):
    """Text -> the operators that draw it in one column of a row at y = 0, each made once, after a space (an empty
    text draws nothing), so a row is its pieces joined as they are."""

    def __init__(self, grid: _Grid, column: int) -> None:
        super().__init__()
        self.grid, self.column = grid, column

    def __missing__(self, text: str) -> str:
        grid = self.grid
        if not text:
            cell = ""
        elif COLUMNS[self.column] == "rail":  # the rail number in bold over its colour and pattern, then back to F1
            x = grid.left(self.column, text, BOLD)
            cell = (f"BT /F2 {grid.size:g} Tf 1 0 0 1 {x:.2f} {grid.size * 0.55:.2f} Tm ({_pdf_text(text)}) Tj "
                    f"/F1 {grid.size:g} Tf ET")
        else:
            cell = _text(grid.left(self.column, text, FONT), grid.size * 0.55, text)
        cell = cell and " " + cell
        self[text] = cell
        return cell


class _Grid:
    """The operators of one file's pages: what every page shares built once, each distinct cell once per column.
    A row is drawn at y = 0 and moved to its place by one ``cm``, so its pieces do not depend on where it sits."""

    def __init__(self, layout: tuple[float, list[float]]) -> None:
        self.size, self.widths = layout
        self.line = self.size * 1.9
        self.xs = [MARGIN]
        for w in self.widths:
            self.xs.append(self.xs[-1] + w)
        self.cells = [_Cells(self, i) for i in range(len(COLUMNS))]
        self.bands = {(rail, boxed): self._band(rail, boxed) for rail in (*range(len(RAIL_PALETTE)), None)
                      for boxed in (True, False)}
        self.titles_y = PAGE_H - MARGIN - HEADER_H - self.line
        self.shared = self._titles() + "\n" + self._legend(MARGIN + FOOTER_H, 7)

    def left(self, i: int, text: str, font: str) -> float:
        if COLUMNS[i] in NUMERIC:
            return self.xs[i] + self.widths[i] - PAD - _width(text, font) * self.size / MAX_SIZE
        return self.xs[i] + PAD

    def _band(self, rail: int | None, boxed: bool) -> str:
        """A row's rail cell in its colour and pattern, a light rule under the row and, for a plug (``boxed``), the
        empty check-off boxes, at y = 0."""
        box = self.size * 1.2
        boxes = " ".join(f"{self.xs[i] + PAD:.2f} {self.size * 0.3:.2f} {box:.2f} {box:.2f} re B"
                         for i in range(len(CHECK_COLUMNS) if boxed else 0))
        i = COLUMNS.index("rail")
        swatch = _swatch(rail, self.xs[i], 0, self.widths[i], self.line)
        rule = f"0.8 G {self.xs[0]:.2f} 0 m {self.xs[-1]:.2f} 0 l S 0 G"
        return f"{swatch} {rule} 1 1 1 rg {boxes} 0 0 0 rg"

    def _titles(self) -> str:
        y = self.titles_y
        texts = [_text(self.left(i, title, BOLD), y + self.size * 0.55, title, BOLD if i == 0 else "", self.size)
                 for i, title in enumerate(COLUMNS)]
        return "\n".join([*texts, f"{MARGIN:.2f} {y:.2f} m {self.xs[-1]:.2f} {y:.2f} l S"])

    def _legend(self, y: float, size: float) -> str:
        x = MARGIN
        ops = ["0 0 0 rg", _text(x, y + 3, "rail colours:", FONT, size)]
        x += stringWidth("rail colours:", FONT, size) + 6
        for label, rail in [*((str(i), i) for i in range(len(RAIL_PALETTE))), ("none", None)]:
            ops += [_swatch(rail, x, y, 22, size + 4), f"0 0 0 RG {x:.2f} {y:.2f} 22 {size + 4:g} re S", "0 0 0 rg",
                    f"BT /F2 {size:g} Tf 1 0 0 1 {x + 11 - stringWidth(label, BOLD, size) / 2:.2f} {y + 3:.2f} Tm "
                    f"({label}) Tj /F1 {size:g} Tf ET"]
            x += 28
        ops.append(_text(x + 4, y + 3, f"(rail n takes colour and pattern n mod {len(RAIL_PALETTE)})"))
        return "\n".join(ops)

    def rows(self, rows: Sequence[_Row]) -> list[str]:
        """Each row's operators at y = 0: its band, then its cells. Built a column at a time, so the loop over
        cells runs in C (``zip``, ``map``, ``join``): the sheets' ~2 million cells were a Python expression each."""
        if not rows:
            return []
        columns = zip(*(texts for texts, _, _ in rows), strict=True)
        pieces: list[Iterable[str]] = [[self.bands[rail, boxed] for _, rail, boxed in rows]]
        pieces += (map(cells.__getitem__, column) for cells, column in zip(self.cells, columns, strict=True))
        return list(map("".join, zip(*pieces, strict=True)))

    def page(self, rack: str, row: str, head: tuple[str, str], rows: Sequence[str],
             pages: tuple[int, int, int, int]) -> bytes:
        """One page's content stream: header, column titles, the rows (``rows``' operators), legend, footer.
        ``pages``: rack page, rack pages, file page, file pages."""
        rack_page, rack_pages, page, total = pages
        top = PAGE_H - MARGIN
        ops = ["0 0 0 rg 0 0 0 RG", _text(MARGIN, top - 14, f"Rack {rack}  (row {row})", BOLD, 14),
               _text(PAGE_W / 2 - stringWidth(head[0], FONT, 9) / 2, top - 12, head[0], FONT, 9),
               _text(PAGE_W - MARGIN - stringWidth(head[1], FONT, 9), top - 12, head[1]), self.shared,
               _text(MARGIN, MARGIN, f"rack {rack}: page {rack_page} of {rack_pages}", FONT, 8)]
        footer = f"page {page} of {total}"
        ops.append(_text(PAGE_W - MARGIN - stringWidth(footer, FONT, 8), MARGIN, footer))
        ops.append(f"BT /F1 {self.size:g} Tf ET")  # the font the rows' cells draw in
        y = self.titles_y
        for drawn in rows:
            y -= self.line
            ops.append(f"q 1 0 0 1 0 {y:.2f} cm {drawn} Q")
        return "\n".join(ops).encode("ascii")


def rows_per_page(size: float) -> int:
    line = size * 1.9
    return max(1, int((PAGE_H - 2 * MARGIN - HEADER_H - FOOTER_H - LEGEND_H - 8 - line) // line))


def _document(info: dict[str, str], streams: Sequence[bytes]) -> bytes:
    """The PDF file: catalog, page tree (sharing the resources), fonts, info, then one page and its deflated
    content stream per page, and the xref table."""
    pages = len(streams)
    kids = " ".join(f"{6 + 2 * i} 0 R" for i in range(pages))
    info_text = " ".join(f"/{key} ({_pdf_text(value)})" for key, value in info.items())
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>",
               f"<< /Type /Pages /Kids [{kids}] /Count {pages} /MediaBox [0 0 {PAGE_W:.2f} {PAGE_H:.2f}] "
               "/Resources << /Font << /F1 3 0 R /F2 4 0 R >> /ProcSet [/PDF /Text] >> >>".encode(),
               *(f"<< /Type /Font /Subtype /Type1 /BaseFont /{font} /Encoding /WinAnsiEncoding >>".encode()
                 for font in FONTS),
               f"<< {info_text} >>".encode()]
    for i, stream in enumerate(streams):
        packed = zlib.compress(stream, COMPRESS_LEVEL)
        objects.append(f"<< /Type /Page /Parent 2 0 R /Contents {7 + 2 * i} 0 R >>".encode())
        objects.append(b"<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream" % (len(packed), packed))
    chunks = [b"%PDF-1.4\n%\x93\x8c\x8b\x9e\n"]
    offsets, at = [], len(chunks[0])
    for number, obj in enumerate(objects, 1):
        chunk = b"%d 0 obj\n%s\nendobj\n" % (number, obj)
        offsets.append(at)
        chunks.append(chunk)
        at += len(chunk)
    xref = b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    chunks.append(b"xref\n0 %d\n0000000000 65535 f \n%s" % (len(objects) + 1, xref))
    chunks.append(b"trailer\n<< /Size %d /Root 1 0 R /Info 5 0 R >>\nstartxref\n%d\n%%%%EOF\n"
                  % (len(objects) + 1, at))
    return b"".join(chunks)


def row_pdf(sheets: RowSheets, site: str) -> bytes:
    """One row's file: each rack starts a new page, headed by the site and the rack's revision."""
    racks = {rack: [(_texts(texts), None if r.rail is None else r.rail % len(RAIL_PALETTE), r.plug)
                    for r, texts in zip(sheet.rows, sheet.texts, strict=True)] for rack, sheet in sheets.racks.items()}
    grid = _Grid(_layout_of([texts for rows in racks.values() for texts, _, _ in rows]))
    per_page = rows_per_page(grid.size)
    drawn = {rack: grid.rows(rows) for rack, rows in racks.items()}
    chunks = [(rack, [rows[i:i + per_page] for i in range(0, len(rows), per_page)]) for rack, rows in drawn.items()]
    total = sum(len(pages) for _, pages in chunks)
    streams, page = [], 0
    for rack, pages in chunks:
        for i, rows in enumerate(pages, 1):
            page += 1
            streams.append(grid.page(rack, sheets.row, (site, sheets.racks[rack].revision), rows,
                                     (i, len(pages), page, total)))
    info = {"Title": f"Cable sheets, row {sheets.row}", "Author": "fabricgen", "Subject": site,
            "Producer": "fabricgen"}
    return _document(info, streams)


def render(topology: Topology) -> list[Artifact]:
    head = page_header(topology)
    inputs = topology.shared(row_inputs)
    return [reused(f"cabling/rows/{sheets.row}.pdf", render_key(ROW_PDF, inputs[sheets.row]),
                   partial(row_pdf, sheets, head)) for sheets in topology.shared(row_sheets)]
