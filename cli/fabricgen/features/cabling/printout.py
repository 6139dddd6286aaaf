"""Target ``print``: cabling/rows/<row>.pdf, the cable sheets a technician prints, one file per row, each rack on
pages of its own.

Why reportlab: it is the long-maintained PDF library of the Python world (BSD, releases since 2000), writes PDF
with the standard fonts and no system dependency, and its ``invariant`` mode fixes the dates and document id, so
the same spec gives byte-identical PDFs. The pages are a fixed grid drawn on its canvas, each table row one block
of PDF operators (see ``_row_operators``).

Every page: A4 landscape; a header with the rack and row, the site and cluster, and the spec digest (the
revision); the column titles; the cable ends of the rack in the handoff order (top U first, ports in physical
order), a row filled with its rail's colour; the rail legend; a footer with the rack's page i of k and the file's
page n of m. Columns are as wide as their longest text in the file and the font shrinks until they fit the page:
nothing is ever cut.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from io import BytesIO

from reportlab.lib.pagesizes import A4, landscape
from reportlab.pdfbase.pdfmetrics import stringWidth
from reportlab.pdfgen.canvas import Canvas

from fabricgen.core.artifacts import Artifact
from fabricgen.features.cabling.handoff import (
    CHECK_COLUMNS,
    END_COLUMNS,
    NO_RAIL,
    RAIL_PALETTE,
    RackEnd,
    RowSheets,
    page_header,
    rail_colour,
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


def _hex(colour: str) -> tuple[float, float, float]:
    return int(colour[:2], 16) / 255, int(colour[2:4], 16) / 255, int(colour[4:], 16) / 255


@lru_cache(maxsize=65536)
def _width(text: str, font: str = FONT) -> float:
    """Width at MAX_SIZE (widths scale with the size): sheets repeat names, ports and parts, so measure each once."""
    return float(stringWidth(text, font, MAX_SIZE))


def _texts(end: RackEnd) -> tuple[str, ...]:
    return ("", "", *(str(v) for v in end.cells()))


def _layout(sheets: RowSheets) -> tuple[float, list[float]]:
    """The font size and column widths (points) at which the longest text of every column fits the page width."""
    longest = [_width(c, BOLD) for c in COLUMNS]
    for ends in sheets.racks.values():
        for end in ends:
            for i, text in enumerate(_texts(end)):
                longest[i] = max(longest[i], _width(text))
    usable = PAGE_W - 2 * MARGIN - 2 * PAD * len(COLUMNS)
    size = min(MAX_SIZE, MAX_SIZE * usable / sum(longest))
    return size, [w * size / MAX_SIZE + 2 * PAD for w in longest]


def _legend(canvas: Canvas, y: float, size: float) -> None:
    x = MARGIN
    canvas.setFont(FONT, size)
    canvas.setFillColorRGB(0, 0, 0)
    canvas.drawString(x, y + 3, "rail colours:")
    x += stringWidth("rail colours:", FONT, size) + 6
    for label, colour in [*((str(i), c) for i, c in enumerate(RAIL_PALETTE)), ("none", NO_RAIL)]:
        canvas.setFillColorRGB(*_hex(colour))
        canvas.rect(x, y, 22, size + 4, stroke=1, fill=1)
        canvas.setFillColorRGB(0, 0, 0)
        canvas.drawCentredString(x + 11, y + 3, label)
        x += 28
    canvas.drawString(x + 4, y + 3, f"(rail n takes colour n mod {len(RAIL_PALETTE)})")


def _page(canvas: Canvas, rack: str, row: str, head: tuple[str, str], ends: Sequence[RackEnd], layout: tuple[
          float, list[float]], pages: tuple[int, int, int, int]) -> None:
    """One page: header, column titles, the ends, legend, footer. ``pages``: rack page, rack pages, file page,
    file pages."""
    size, widths = layout
    rack_page, rack_pages, page, total = pages
    top = PAGE_H - MARGIN
    canvas.setFont(BOLD, 14)
    canvas.drawString(MARGIN, top - 14, f"Rack {rack}  (row {row})")
    canvas.setFont(FONT, 9)
    canvas.drawCentredString(PAGE_W / 2, top - 12, head[0])
    canvas.drawRightString(PAGE_W - MARGIN, top - 12, head[1])
    line = size * 1.9
    y = top - HEADER_H
    xs = [MARGIN]
    for w in widths:
        xs.append(xs[-1] + w)
    canvas.setFont(BOLD, size)
    for x, w, title in zip(xs, widths, COLUMNS, strict=False):
        left = x + w - PAD - _width(title, BOLD) * size / MAX_SIZE if title in NUMERIC else x + PAD
        canvas.drawString(left, y - line + size * 0.55, title)
    canvas.line(MARGIN, y - line, xs[-1], y - line)
    y -= line
    canvas.setFont(FONT, size)  # the text state the rows' operators draw in (it outlives BT/ET)
    for end in ends:
        canvas.addLiteral(_row_operators(end, xs, widths, y - line, line, size))
        y -= line
    _legend(canvas, MARGIN + FOOTER_H, 7)
    canvas.setFont(FONT, 8)
    canvas.drawString(MARGIN, MARGIN, f"rack {rack}: page {rack_page} of {rack_pages}")
    canvas.drawRightString(PAGE_W - MARGIN, MARGIN, f"page {page} of {total}")
    canvas.showPage()


def _pdf_text(text: str) -> str:
    """A PDF literal string: backslash and parentheses escaped. Every cell is ASCII (names, ports and parts pass
    the spec's strict patterns), which the standard fonts' encoding shows as it is."""
    if not text.isascii() or not text.isprintable():
        raise ValueError(f"cannot print {text!r} on a cable sheet")
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def _row_operators(end: RackEnd, xs: list[float], widths: list[float], bottom: float, line: float,
                   size: float) -> str:
    """One row as PDF operators: the rail colour band, the empty check-off boxes, the cells. Written directly
    (reportlab's addLiteral) because its drawString/rect calls cost ~20 us each, and a 16,384-GPU cluster's
    sheets draw over a million cells."""
    r, g, b = _hex(rail_colour(end.cable.rail))
    ops = [f"q {r:.3f} {g:.3f} {b:.3f} rg {xs[0]:.2f} {bottom:.2f} {xs[-1] - xs[0]:.2f} {line:.2f} re f",
           "1 1 1 rg"]
    box = size * 1.2
    ops += [f"{xs[i] + PAD:.2f} {bottom + size * 0.3:.2f} {box:.2f} {box:.2f} re B" for i in range(len(CHECK_COLUMNS))]
    ops.append("0 0 0 rg")
    base = bottom + size * 0.55
    for x, w, title, text in zip(xs, widths, COLUMNS, _texts(end), strict=False):
        if text:
            left = x + w - PAD - _width(text) * size / MAX_SIZE if title in NUMERIC else x + PAD
            ops.append(f"BT 1 0 0 1 {left:.2f} {base:.2f} Tm ({_pdf_text(text)}) Tj ET")
    ops.append("Q")
    return "\n".join(ops)


def rows_per_page(size: float) -> int:
    line = size * 1.9
    return max(1, int((PAGE_H - 2 * MARGIN - HEADER_H - FOOTER_H - LEGEND_H - 8 - line) // line))


def row_pdf(sheets: RowSheets, head: tuple[str, str]) -> bytes:
    """One row's file: each rack starts a new page."""
    layout = _layout(sheets)
    per_page = rows_per_page(layout[0])
    chunks = [(rack, [ends[i:i + per_page] for i in range(0, len(ends), per_page)])
              for rack, ends in sheets.racks.items()]
    total = sum(len(pages) for _, pages in chunks)
    buffer = BytesIO()
    canvas = Canvas(buffer, pagesize=(PAGE_W, PAGE_H), invariant=1, pageCompression=1)
    canvas.setTitle(f"Cable sheets, row {sheets.row}")
    canvas.setAuthor("fabricgen")
    canvas.setSubject(f"{head[0]}, {head[1]}")
    page = 0
    for rack, pages in chunks:
        for i, ends in enumerate(pages, 1):
            page += 1
            _page(canvas, rack, sheets.row, head, ends, layout, (i, len(pages), page, total))
    canvas.save()
    return buffer.getvalue()


def render(topology: Topology) -> list[Artifact]:
    head = page_header(topology)
    return [Artifact(f"cabling/rows/{sheets.row}.pdf", row_pdf(sheets, head)) for sheets in row_sheets(topology)]
